"""Fig. 4 of Wang et al. (docs/conventions.md#wang-6-5): the necessity of enough heads H and width D.  The Fig. 3 setup
(IH_n, n = 4, d = 1) is trained with (H, D) ∈ {2, 8}²: Theorem 4.3 needs H ≳ n − 1 layer-1 heads (one group
per lag) and D ≥ n·d (one block per copied token), so (8, 8) can fit and (2, 2) cannot.

Task, optimiser and budget are those of :mod:`inductionlab.experiments.wang.probe` (W* = I_3, Adam at the constant
lr 1e-2, ``probe.STEPS`` steps of batch 128, chosen on calibration seeds 1000–1007 to cover their escape-time tail:
docs/conventions.md#calibration); the paper gives no training protocol for Fig. 4.  Each of the 4 data seeds
(``seeds``) draws its own batches and initialisation, so the (8, 8) model of seed s is probe's seed s.
``--preset cosine`` is the earlier protocol (6000 steps of batch 64, the rate decayed by cosine to 5%: an
integrated rate of 31.5, short of the tail), ``--preset spec`` the spec's W* = 0.49² I_3 and lr 1e-3.  The summary
holds, per pair "HxD", ``final_loss`` (the mean over seeds of the last evaluation) and, one value per seed,
``late_loss`` (the mean of the last ``late`` evaluations), ``start_loss`` (step 0), ``plateau_loss``,
``late_over_plateau`` and ``escape_step`` (:func:`~inductionlab.experiments.wang._learning.learning`).  Both claims are
judged on the seeds whose (8, 8) model learned (late loss ≤ 0.2 of its plateau): a seed on which the capable model
did not learn within the budget says nothing about H and D.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from inductionlab import plots, rng
from inductionlab.config import check_device, check_seeds, require, set_here
from inductionlab.experiments.experiment import SQUARED, Experiment, op_elements
from inductionlab.experiments.wang._learning import PLATEAU, STEPS, learning
from inductionlab.models.transformer import ArchitectureConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.induction import InductionTaskConfig
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.transformer import fit_induction


@dataclass(frozen=True)
class Config:
    model: ArchitectureConfig = field(default_factory=lambda: ArchitectureConfig())  # tokens: task.d
    task: InductionTaskConfig = field(default_factory=lambda: InductionTaskConfig(n=4, d=1, L=40, w_scale=1.0))
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(lr=1e-2, steps=STEPS, batch_size=128, eval_every=400, eval_log_points=20)
    )
    heads: tuple[int, ...] = (2, 8)  # head counts H trained (model.n_heads), one model per (H, D)
    dims: tuple[int, ...] = (2, 8)  # widths D trained (model.d_model), one model per (H, D)
    seeds: tuple[int, ...] = (0, 1, 2, 3)  # data seeds: one model per seed, its own batches and initialisation
    device: str = "cpu"  # cpu, cuda or cuda:i
    eval_size: int = 1024  # held-out sequences of every evaluation (the same for every seed)
    late: int = 5  # the claims read each seed's mean loss over its last `late` evaluations
    plateau: tuple[int, int] = PLATEAU  # steps whose evaluations' median loss is a seed's plateau (probe.learning)

    def __post_init__(self) -> None:
        check_device(self.device)
        check_seeds(self.seeds)
        set_here(self.model, "model", {"n_heads": 1, "d_model": 8}, "heads / dims")
        require(min(self.heads) >= 1 and min(self.dims) >= 1, "heads", "H and D must be ≥ 1")
        set_here(self.train, "train", {"seed": 0}, "seeds (each seed draws its own batches)")
        require(len(self.seeds) >= 1, "seeds", "give at least one seed")
        require(self.late >= 1, "late", f"must be ≥ 1, got {self.late}")
        require(len(self.plateau) == 2 and 0 <= self.plateau[0] <= self.plateau[1], "plateau", "give 0 ≤ first ≤ last")


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"train.steps": 1500},
    "cosine": {"train.schedule": "cosine", "train.steps": 6000, "train.batch_size": 64, "train.eval_every": 300},
    "spec": {
        "task.w_scale": 0.2401,
        "train.lr": 1e-3,
        "train.steps": 50_000,
        "train.batch_size": 64,
        "train.eval_every": 500,
    },
    "smoke": {
        "train.steps": 10,
        "train.eval_every": 5,
        "eval_size": 16,
        "task.L": 10,
        "train.batch_size": 8,
        "plateau": "0,5",  # the default's window lies past the smoke run's 10 steps
    },
}


def run(cfg: Config, ctx: RunContext) -> Results:
    tables = []
    for H in cfg.heads:
        for D in cfg.dims:
            model = replace(cfg.model, n_heads=H, d_model=D).real_valued(cfg.task.d)
            for seed in cfg.seeds:  # one model per data seed: its own batches (rng.derive) and initialisation
                _, metrics = fit_induction(
                    model,
                    cfg.task,
                    replace(cfg.train, seed=rng.derive(seed)),
                    (seed,),
                    ctx.child(f"{H}x{D}-seed{seed}"),
                    cfg.eval_size,
                    desc=f"H={H} D={D} seed {seed}",
                )
                tables.append(metrics.assign(H=H, D=D, pair=f"{H}x{D}"))
    metrics = pd.concat(tables, ignore_index=True)
    return Results({"metrics": metrics}, _summary(metrics, cfg.late, cfg.plateau))


def _summary(metrics: pd.DataFrame, late: int, plateau: tuple[int, int] = PLATEAU) -> dict[str, Any]:
    """``final_loss``: per pair, the mean over seeds of the last evaluation; per pair, one value per seed
    (ascending): ``late_loss``, the mean of its last ``late`` evaluations, ``start_loss``, its loss at step 0, and
    :func:`~inductionlab.experiments.wang._learning.learning`'s ``plateau_loss``, ``late_over_plateau`` and
    ``escape_step`` (null where the loss never left the plateau)."""
    by_seed = metrics.sort_values("step").groupby(["pair", "seed"], sort=False)
    late_mean, start = by_seed.loss.apply(lambda x: float(x.iloc[-late:].mean())), by_seed.loss.first()
    learned = {key: learning(g.step.to_numpy(), g.loss.to_numpy(), plateau, late) for key, g in by_seed}
    final = metrics[metrics.step == metrics.step.max()].groupby("pair").loss.mean()
    pairs = list(dict.fromkeys(metrics.pair))
    seeds = {p: sorted(metrics[metrics.pair == p].seed.unique()) for p in pairs}

    def per_seed(what: str) -> dict[str, list[float]]:
        return {p: [learned[p, s][what] for s in seeds[p]] for p in pairs}

    return {
        "final_loss": {k: float(v) for k, v in final.items()},
        "late_loss": {p: [float(v) for v in late_mean[p].sort_index()] for p in pairs},
        "start_loss": {p: [float(v) for v in start[p].sort_index()] for p in pairs},
        "plateau_loss": per_seed("plateau"),
        "late_over_plateau": per_seed("late_over_plateau"),
        "escape_step": per_seed("escape_step"),
        "initial_loss": float(metrics[metrics.step == 0].loss.mean()),
    }


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics, s = results.tables["metrics"], results.summary
    fig, (ax,) = plots.subplots(1, width=5.5, height=3.8)
    for pair, g in metrics.groupby("pair", sort=False):
        mean = g.groupby("step").loss.mean()
        ax.semilogy(mean.index, mean.values, label=f"H×D = {pair.replace('x', '×')}: final {s['final_loss'][pair]:.2e}")
    ax.set_xlabel("step"), ax.set_ylabel("loss on IH_4")
    ax.set_title("Necessity of heads H and width D (Theorem 4.3: H ≳ n−1, D ≥ nd)", fontsize=9)
    ax.legend(fontsize=8)
    return [plots.save(fig, Path(out_dir) / "heads_dims.png")]


EXPERIMENT = Experiment(
    op_size=lambda c: op_elements(
        c.train.batch_size, c.task.L, max(c.heads) * max(c.dims)
    ),  # docs/conventions.md#threads
    devices=("cpu", "cuda"),
    loss_unit=SQUARED,
    name="heads-dims",
    description="Fig. 4: final loss on IH_4 for (H, D) in {2, 8}^2 — enough heads and width are necessary",
    figure="Wang et al. Fig. 4",
    wall="~13 min",  # default, one core beside another run: 776 s (2026-12-02, AMD EPYC; the fused layer)
    headline=("final_loss.2x2", "final_loss.2x8", "final_loss.8x2", "final_loss.8x8"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
