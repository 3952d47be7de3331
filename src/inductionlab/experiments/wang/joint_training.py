"""Joint vs layerwise training of the toy model (Wang et al. dynamics paper; docs/conventions.md#wang-5-3): the theory trains
layer 1 (Stage I) and then layer 2 (Stage II); here both schedules run on the same target, initialisation
and data seeds, so one sees whether training all six parameters at once keeps the lazy-to-rich phases.

Three schedules: "layerwise" trains Stage II on the layer 1 that Stage I left (``stage2_layer1="trained"``,
the literal protocol), "layerwise-ideal" on y_s = x_{s−1} (the theory's limit, the spine's default), and
"joint" trains all six parameters at once.  All get the same number of steps; curves are drawn against
t = lr × step counted from the start of layer-2 training (for joint: from 0).  Measured at the defaults:
Stage I's 2000 steps leave p̃ ≈ 0.03, so literal layerwise never forms the induction head, while joint
training grows p̃ together with w_KQ and emerges at about the time of the idealised layerwise run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import pandas as pd

from inductionlab import plots
from inductionlab.analysis.phases import phase_times_by_run
from inductionlab.config import check_seeds, set_here
from inductionlab.experiments.experiment import SQUARED, Experiment
from inductionlab.models.toy import ToyConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import MixedTarget, MixedTaskConfig
from inductionlab.train.interventions import InterventionConfig, build, check
from inductionlab.train.toy import ToyTrainConfig, stages_of, train_from
from inductionlab.train.toy_interventions import toy_family


@dataclass(frozen=True)
class Config:
    task: MixedTaskConfig = field(default_factory=MixedTaskConfig)
    model: ToyConfig = field(default_factory=ToyConfig)
    train: ToyTrainConfig = field(
        default_factory=lambda: ToyTrainConfig(
            stage1_steps=2000, stage2_steps=40_000, stage2_layer1="trained", eval_size=20_000, eval_every=1000
        )
    )
    seeds: tuple[int, ...] = (0,)  # the run axis: one model per seed, trained together (docs/conventions.md#seeds)
    intervene: InterventionConfig = field(default_factory=InterventionConfig)  # applied to every schedule

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        check(self.intervene, toy_family(), [s.steps for s in stages_of(self.train)])
        set_here(
            self.intervene,
            "intervene",
            {"ablate_mode": "zero"},
            "no ablation (intervene.ablate is the general transformer's)",
        )
        set_here(
            self.train, "train", {"schedule": "layerwise", "stage2_layer1": "trained"}, "each of the three schedules"
        )


CONFIG = Config()
PRESETS = {
    "quick": {"train.stage2_steps": 20_000},
    "smoke": {
        "train.stage1_steps": 10,
        "train.stage2_steps": 40,
        "train.eval_size": 256,
        "train.eval_every": 10,
        "train.batch_size": 64,
        "task.L": 8,
    },
}


def run(cfg: Config, ctx: RunContext) -> Results:
    seeds = list(cfg.seeds)
    target = MixedTarget.from_config(cfg.task, len(seeds))
    tables, summary = [], {}
    hooks, _ = build(cfg.intervene, toy_family())
    variants: tuple[tuple[str, Literal["layerwise", "joint"], Literal["trained", "ideal"]], ...] = (
        ("layerwise", "layerwise", "trained"),
        ("layerwise-ideal", "layerwise", "ideal"),
        ("joint", "joint", "trained"),
    )
    for name, schedule, layer1 in variants:
        tcfg = replace(cfg.train, schedule=schedule, stage2_layer1=layer1)
        _, layer2 = train_from(tcfg, target, cfg.model.sigma_init, seeds, ctx.child(name, hooks=(*ctx.hooks, *hooks)))
        times = phase_times_by_run(layer2, cfg.task.alpha_star, cfg.task.w_star)
        tables.append(layer2.assign(schedule=name))
        runs = []
        for run_times in times:
            df = layer2[layer2.run == run_times["run"]]
            phases = {k: v for k, v in run_times.items() if k not in ("run", "seed")}
            runs.append(
                {
                    **phases,
                    "final_loss": float(df.loss.iloc[-1]),
                    "final_w_KQ": float(df.w_KQ.iloc[-1]),
                    "final_p_tilde": float(df.p_tilde.iloc[-1]),
                }
            )
        summary[name] = pd.DataFrame(runs).mean().to_dict()
    return Results({"metrics": pd.concat(tables, ignore_index=True)}, summary)


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics = results.tables["metrics"]
    fig, (ax, px) = plots.subplots(2, width=4.6, height=3.6)
    for schedule, g in metrics.groupby("schedule"):
        style = {"layerwise": "-", "layerwise-ideal": ":", "joint": "--"}[schedule]
        mean = g.groupby("t")[["loss_G4", "loss_IH2", "w_KQ", "p_tilde"]].mean()
        ax.semilogy(mean.index, mean.loss_G4, style, color=plots.CURVE_COLORS["loss_G4"], label=f"L_G4 {schedule}")
        ax.semilogy(mean.index, mean.loss_IH2, style, color=plots.CURVE_COLORS["loss_IH2"], label=f"L_IH2 {schedule}")
        px.plot(mean.index, mean.w_KQ, style, color=plots.CURVE_COLORS["w_KQ"], label=f"w_KQ {schedule}")
        px.plot(
            mean.index,
            mean.p_tilde / max(1.0, float(mean.p_tilde.max())),
            style,
            color=plots.CURVE_COLORS["p"],
            label=f"p̃ / max {schedule}",
        )
    ax.set_xlabel("t = lr × step (layer-2 training)"), ax.set_ylabel("partial loss")
    ax.legend(fontsize=7)
    px.set_xlabel("t"), px.set_ylabel("parameter")
    px.legend(fontsize=7)
    s = results.summary
    ax.set_title(
        "T_III: "
        + ", ".join(
            f"{k} {plots.num(v.get('T_III')):.0f}" for k, v in s.items() if isinstance(v, dict) and k != "versions"
        ),
        fontsize=9,
    )
    return [plots.save(fig, Path(out_dir) / "joint_training.png")]


EXPERIMENT = Experiment(
    op_size=lambda c: c.train.batch_size * c.task.L,  # one query per sequence (docs/conventions.md#threads)
    loss_unit=SQUARED,
    name="joint-training",
    description="Toy model: all six parameters trained jointly vs layerwise (Stage I then II), same data and budget",
    figure="Wang et al. §5 (stages)",
    wall="~1.5 min",  # default preset, 2 cores
    cpu_only="the six-parameter toy trains with a hand-written step whose time is Python overhead and random numbers, which a GPU does not remove",
    headline=("layerwise.T_III", "layerwise-ideal.T_III", "joint.T_III", "joint.final_w_KQ"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
