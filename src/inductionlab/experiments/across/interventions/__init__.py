"""The papers' mechanisms tested causally (docs/conventions.md#mech): each intervention beside the same run
without it, on the same data and initialisation; phase times in t = lr × step from the start of layer-2 training
(docs/conventions.md#wang-5-5), ``T_50`` None where the induction loss never halves within the budget.

* **Toy, layer 1 held back** (joint training, docs/conventions.md#wang-5-3): p̃ clamped at σ_init throughout, and
  until t₀.  The induction head needs a previous-token layer 1 (y_s ≈ x_{s−1}); with p̃ small, layer 1 averages
  the past and w_KQ has nothing to match.
* **Toy, w_KQ held until t₀** (layerwise, ideal layer 1): T_I should not move (the 4-gram part does not need
  w_KQ); T_50 should move by ≈ t₀ (less where the other parameters progress during the hold).
* **Transformer, layer-1 heads ablated** (two layers × two attention-only heads, learnable slopes,
  docs/conventions.md#wang-1; random tokens repeated twice; Adam): no induction head should form, and the loss
  on the first copy (nothing to copy there) should not change.
* **Chen model, the copier's RPE frozen** (stage c, docs/conventions.md#chen-3-2): the selector's p_{1,2} with w
  frozen at the paper's initialisation (head h on lag h) and at a lag-agnostic one (w_+ = w_−).  Frozen at the
  paper's initialisation is the paper's own Stage I (the selector trains with the RPE at init).

``act`` False trains every toy and transformer variant without its intervention: the negative control
(docs/conventions.md#controls), under which each check compares a run with itself.

This file holds the config, presets, claims, the toy sections and the figure; the transformer and Chen-model
sections are in :mod:`inductionlab.experiments.across.interventions.arms`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import pandas as pd

from inductionlab import plots
from inductionlab.analysis.phases import phase_times_by_run
from inductionlab.config import check_seeds, require, set_here
from inductionlab.experiments.across.interventions.arms import (
    LOSS_TOLERANCE,
    SCORE_TOLERANCE,
    copier_frozen,
    plot_copier_frozen,
    plot_transformer,
    transformer_summary,
    transformer_variants,
)
from inductionlab.experiments.experiment import NATS, Experiment, op_elements
from inductionlab.models.chen import ChenModelConfig
from inductionlab.models.toy import ToyConfig
from inductionlab.models.transformer import ArchitectureConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig
from inductionlab.tasks.mixed import MixedTarget, MixedTaskConfig
from inductionlab.train import interventions as I
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.chen import StagedConfig
from inductionlab.train.toy import ToyTrainConfig, train_from
from inductionlab.train.toy_interventions import toy_family

WKQ_SHIFT_TOLERANCE = 0.25  # |T_50 shift − t₀| ≤ 0.25 t₀: the other parameters keep moving during the hold
T_I_TOLERANCE = 0.05  # |T_I shift| ≤ 0.05 t₀: the 4-gram phase does not wait for w_KQ


@dataclass(frozen=True)
class Config:
    """Toy: the paper's target and σ_init, 2000 Stage-I steps (layerwise) and 50 000 layer-2 steps at lr 0.1
    (t up to 5000, after the unintervened T_III ≈ 3200); ``t0`` the release time.  Chen: stage c (the selector)
    on the staged model with D = 2 and the softmax-of-probabilities loss."""

    task: MixedTaskConfig = field(default_factory=MixedTaskConfig)
    model: ToyConfig = field(default_factory=ToyConfig)
    train: ToyTrainConfig = field(
        default_factory=lambda: ToyTrainConfig(
            stage1_steps=2000, stage2_steps=50_000, eval_size=20_000, eval_every=500, checkpoint_every=10_000
        )
    )
    t0: float = 1000.0  # release time, t = lr × step (toy)
    tf_model: ArchitectureConfig = ArchitectureConfig(d_model=64, n_heads=2, init_std=0.1, slope_init=0.01)  # tf_vocab
    tf_train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            optimizer="adam",
            lr=0.003,
            steps=7000,
            batch_size=64,
            eval_every=250,
            eval_log_points=0,
            checkpoint_every=1000,
        )
    )
    tf_vocab: int = 64  # the random tokens' vocabulary
    tf_period: int = 12  # T: sequences of T random tokens, then the same T again
    tf_eval_size: int = 256  # held-out sequences the transformer is scored on
    chen_task: MarkovConfig = field(default_factory=MarkovConfig)
    chen_model: ChenModelConfig = ChenModelConfig(max_degree=2, loss="softmax_of_probs")  # chen_task's vocabulary
    chen_train: StagedConfig = field(
        default_factory=lambda: StagedConfig(stages=("c",), lrs=(1.0,), epochs=(2000,), eval_log_points=20)
    )
    chen_n_samples: int = 10_000  # Chen model: training sequences (full batch)
    chen_n_val: int = 1000  # Chen model: of those, validation sequences
    # Chen model: the third arm's frozen RPE is lag-agnostic (w₊ = w₋); False keeps the paper's head-to-lag
    # initialisation there (the negative control of mech-chen-rpe-frozen)
    chen_lag_agnostic: bool = True
    seeds: tuple[int, ...] = (0,)  # the run axis: one model per seed, trained together (docs/conventions.md#seeds)
    act: bool = True  # False: the toy and transformer variants train without their interventions (the negative control)

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        steps = self.t0 / self.train.lr
        require(
            self.t0 > 0 and steps < self.train.stage2_steps,
            "t0",
            f"must be > 0 and before the end of layer-2 training (t = {self.train.lr * self.train.stage2_steps:g}), "
            f"got {self.t0}",
        )
        require(0 < self.chen_n_val < self.chen_n_samples, "chen_n_val", "must lie in 1..chen_n_samples − 1")
        require(self.tf_vocab >= 2, "tf_vocab", f"must be ≥ 2, got {self.tf_vocab}")
        require(self.tf_model.n_layers == 2, "tf_model.n_layers", "needs 2 layers (the layer-1 heads are ablated)")
        self.chen_model.build(self.chen_task.vocab_size)  # validates the model over the task's vocabulary
        set_here(self.train, "train", {"schedule": "layerwise", "stage2_layer1": "ideal"}, "each toy variant")
        set_here(self.tf_train, "tf_train", {"seed": 0}, "seeds (the batches are drawn from the first seed)")
        require(self.tf_period >= 2, "tf_period", f"must be ≥ 2, got {self.tf_period}")
        require(
            self.tf_eval_size >= 1,
            "tf_eval_size",
            f"must be ≥ 1 (the held-out sequences the transformer is scored on), got {self.tf_eval_size}",
        )
        self.tf_model.check_keys(2 * self.tf_period, "tf_model", "a sequence (2 × tf_period)")
        self.train.check_sizes(self.task.L, len(self.seeds))

    @property
    def t0_steps(self) -> int:
        return round(self.t0 / self.train.lr)


CONFIG = Config()
PRESETS = {
    "quick": {
        "train.stage2_steps": 40_000,
        "train.eval_size": 8192,
        "chen_train.epochs": "1000",
        "tf_train.steps": 5500,
        "tf_train.eval_every": 500,
    },
    "smoke": {
        "train.stage1_steps": 10,
        "train.stage2_steps": 60,
        "train.eval_size": 256,
        "train.eval_every": 10,
        "train.batch_size": 64,
        "task.L": 8,
        "t0": 2.0,
        "chen_train.epochs": "5",
        "chen_n_samples": 120,
        "chen_n_val": 20,
        "chen_task.L": 20,
        "tf_train.steps": 6,
        "tf_train.eval_every": 3,
        "tf_train.batch_size": 4,
        "tf_model.d_model": 8,
        "tf_vocab": 10,
        "tf_period": 4,
        "tf_eval_size": 8,
    },
}


def _toy(
    cfg: Config,
    ctx: RunContext,
    label: str,
    schedule: Literal["layerwise", "joint"],
    intervention: I.InterventionConfig,
    done: dict,
) -> dict:
    """One toy variant's phase times and metrics.  ``done``: the variants trained so far by (schedule,
    intervention); without ``act`` (the control) every variant of a schedule is its baseline, trained once and
    relabelled (the same data, start and steps: the same numbers)."""
    intervention = intervention if cfg.act else I.InterventionConfig()
    key = (schedule, intervention)
    if key in done:
        return {**done[key], "metrics": done[key]["metrics"].assign(variant=label)}
    done[key] = _train_toy(cfg, ctx, label, schedule, intervention)
    return done[key]


def _train_toy(
    cfg: Config,
    ctx: RunContext,
    label: str,
    schedule: Literal["layerwise", "joint"],
    intervention: I.InterventionConfig,
) -> dict:
    tcfg = replace(cfg.train, schedule=schedule, stage2_layer1="trained" if schedule == "joint" else "ideal")
    hooks, _ = I.build(intervention, toy_family())
    target = MixedTarget.from_config(cfg.task, len(cfg.seeds))
    _, layer2 = train_from(
        tcfg,
        target,
        cfg.model.sigma_init,
        list(cfg.seeds),
        ctx.child(re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_"), hooks=(*ctx.hooks, *hooks)),
    )
    times = phase_times_by_run(layer2, cfg.task.alpha_star, cfg.task.w_star)
    phases = pd.DataFrame(times).drop(columns=["run", "seed"]).mean()
    return {
        "metrics": layer2.assign(variant=label),
        "T_I": float(phases.T_I),
        "T_50": float(phases.T_50),
        "final_w_KQ": float(layer2.groupby("run").w_KQ.last().mean()),
        "intervention": intervention.entries(),
    }


def _null(x: float) -> float | None:
    return None if math.isnan(x) else x


def _toy_summary(cfg: Config, joint: dict, layerwise: dict) -> tuple[dict, dict]:
    """The two toy sections of ``summary.json`` and their checks."""
    clamped, base_j, released = joint["clamped"], joint["baseline"], joint["released"]
    held, base_l = layerwise["held"], layerwise["baseline"]
    t50_shift, ti_shift = held["T_50"] - base_l["T_50"], held["T_I"] - base_l["T_I"]
    sections = {
        "toy_layer1_clamped": {
            "T_50": _null(clamped["T_50"]),
            "final_w_KQ": clamped["final_w_KQ"],
            "budget_t": cfg.train.lr * (cfg.train.stage1_steps + cfg.train.stage2_steps),  # joint: one stage
            "baseline_T_50": _null(base_j["T_50"]),
            "baseline_final_w_KQ": base_j["final_w_KQ"],
            "released_T_50": _null(released["T_50"]),
            "released_T_50_shift": _null(released["T_50"] - base_j["T_50"]),
        },
        "toy_wkq_held": {
            "t0": cfg.t0,
            "T_50_shift": _null(t50_shift),
            "T_I_shift": _null(ti_shift),
            "baseline_T_50": _null(base_l["T_50"]),
            "baseline_T_I": _null(base_l["T_I"]),
        },
    }
    checks = {
        "layer1_clamped_never_emerges": not math.isfinite(clamped["T_50"])
        and clamped["final_w_KQ"] < 10 * cfg.model.sigma_init,
        "wkq_held_T_50_shift_near_t0": abs(t50_shift - cfg.t0) <= WKQ_SHIFT_TOLERANCE * cfg.t0,
        "wkq_held_T_I_unchanged": abs(ti_shift) <= T_I_TOLERANCE * cfg.t0,
    }
    return sections, checks


def run(cfg: Config, ctx: RunContext) -> Results:
    window = f"@0:{cfg.t0_steps}"
    done: dict[tuple[str, I.InterventionConfig], dict] = {}  # the toy variants trained so far (:func:`_toy`)
    joint = {
        "baseline": _toy(cfg, ctx, "joint", "joint", I.InterventionConfig(), done),
        "clamped": _toy(cfg, ctx, "joint, p̃ clamped", "joint", I.InterventionConfig(freeze=("layer1",)), done),
        "released": _toy(
            cfg, ctx, "joint, p̃ clamped until t0", "joint", I.InterventionConfig(freeze=("layer1" + window,)), done
        ),
    }
    layerwise = {
        "baseline": _toy(cfg, ctx, "layerwise", "layerwise", I.InterventionConfig(), done),
        "held": _toy(
            cfg,
            ctx,
            "layerwise, w_KQ held until t0",
            "layerwise",
            I.InterventionConfig(freeze=("w_KQ" + window,)),
            done,
        ),
    }
    chen_metrics, chen_summary = copier_frozen(
        cfg.chen_task,
        cfg.chen_model.build(cfg.chen_task.vocab_size),
        cfg.chen_train,
        cfg.seeds,
        cfg.chen_n_samples,
        cfg.chen_n_val,
        ctx,
        cfg.chen_lag_agnostic,
    )
    tfm = transformer_variants(cfg.tf_model.build(cfg.tf_vocab), cfg.tf_train, cfg, ctx)
    toy_sections, toy_checks = _toy_summary(cfg, joint, layerwise)
    tf_section, tf_checks = transformer_summary(tfm)
    toys = (*joint.values(), *layerwise.values())
    summary = {
        "t0": cfg.t0,
        **toy_sections,
        "transformer_layer1_ablated": tf_section,
        "chen_rpe_frozen": chen_summary,
        "checks": {**tf_checks, **toy_checks, "chen_rpe_frozen_below_0.99": chen_summary["p_selected"] < 0.99},
        "tolerances": {
            "T_50_shift": f"|shift − t0| ≤ {WKQ_SHIFT_TOLERANCE} t0",
            "T_I_shift": f"≤ {T_I_TOLERANCE} t0",
            "induction_score": f"ablated ≤ its start + {SCORE_TOLERANCE}, unablated ≥ 0.5",
            "loss_first": f"|ablated − unablated| ≤ {LOSS_TOLERANCE} nats",
        },
        "interventions": {v["metrics"].variant.iloc[0]: v["intervention"] for v in toys},
    }
    toy_metrics = pd.concat([v["metrics"] for v in toys], ignore_index=True)
    return Results({"metrics": toy_metrics, "chen": chen_metrics, "transformer": tfm}, summary)


def plot(results: Results, out_dir: Path) -> list[Path]:
    m, s = results.tables["metrics"], results.summary
    t0 = float(s["t0"])
    fig, axes = plots.subplots(2, 2, width=5.2, height=3.8)
    panels = (("joint", axes[0], "joint training: layer 1 (p̃) clamped"), ("layerwise", axes[1], "layerwise: w_KQ held"))
    styles = ["-", "--", ":"]
    for prefix, ax, title in panels:
        variants = [(v, g) for v, g in m.groupby("variant", sort=False) if v.startswith(prefix)]
        for style, (variant, g) in zip(styles, variants):
            mean = g.groupby("t")[["loss_IH2", "w_KQ"]].mean()
            for col, symbol in (("loss_IH2", r"$\mathcal{L}_{IH_2}$"), ("w_KQ", "$w_{KQ}$")):
                ax.semilogy(mean.index, mean[col], style, color=plots.CURVE_COLORS[col], label=f"{variant}: {symbol}")
        ax.axvspan(0, t0, color="0.85", zorder=0, label=f"intervention window t < t0 = {t0:g}")
        ax.set(xlabel="t = lr × step (layer-2 training)", ylabel=r"$\mathcal{L}_{IH_2}$, $w_{KQ}$")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6)
    plot_copier_frozen(axes[2], results.tables["chen"], s["chen_rpe_frozen"], styles)
    t = results.tables.get("transformer")
    if t is not None and len(t):
        plot_transformer(axes[3], t, styles)
    return [plots.save(fig, Path(out_dir) / "interventions.png")]


EXPERIMENT = Experiment(
    op_size=lambda c: op_elements(
        c.tf_train.batch_size, c.task.L, c.tf_vocab, c.tf_model.n_heads * c.tf_model.d_model
    ),  # docs/conventions.md#threads
    loss_unit=NATS,
    name="interventions",
    description=(
        "Causal tests: toy layer 1 clamped, w_KQ held until t0, Chen copier RPE frozen — each beside its unintervened run"
    ),
    figure="Wang et al. §5; Chen et al. §3",
    wall="~7 min",  # default, one core beside another run: 420 s (2026-12-02, AMD EPYC)
    cpu_only="the toy and the Chen model train with steps bound by Python overhead, which a GPU does not remove",
    headline=(
        "toy_layer1_clamped.T_50",
        "toy_layer1_clamped.final_w_KQ",
        "toy_wkq_held.T_50_shift",
        "toy_wkq_held.T_I_shift",
        "transformer_layer1_ablated.final_induction_score",
        "transformer_layer1_ablated.baseline_final_induction_score",
        "chen_rpe_frozen.p_selected",
    ),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
