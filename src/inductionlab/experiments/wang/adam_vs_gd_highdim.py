"""GD vs Adam in high dimension (Wang et al., workshop Fig. 4; docs/conventions.md#wang-6-3): with D = 100, the toy's
layer 2 trained by online GD stays on the induction-head plateau within the budget, while Adam (lr 5e-4) leaves it —
its per-coordinate normalisation moves all D² entries of W_Q, W_K at once, where GD's growth is set by the tiny
initial ‖W_Q‖‖W_K‖.

The loss is (3) averaged over the D output coordinates (``model.loss = "mean"``; docs/conventions.md#wang-6-3): the
paper writes (3) for scalar tokens only, where the sum and the mean over coordinates agree, and keeps Fig. 1's GD at
D = 100 (App. B.3: "All other experimental setups remain the same as in the setup for Figure 1": lr 0.1, B = 1000,
100 000 Stage-II iterations, App. B.1).  The mean is the one reading stable at that rate (the summed L_G4 has
curvature up to D in g, so GD on it needs η < 2/D) and the one under which the larger D makes the transition harder,
as the caption says.  GD runs ``gd_steps`` = 100 000 steps on it, one row per reading in ``gd_readings`` (default:
the mean alone); the D = 1 toy (the Fig. 1 model: reading B at D = 1, score coefficient w*² = 0.2401) runs beside it
for the same budget; Adam runs ``train.steps`` on ``model.loss``.  The other readings (:data:`READINGS`: ``sum``,
(3) summed, the whole model at its largest stable rate ``gd_lr_sum``; ``sum-ih``, summed at lr 0.1 on the
induction part alone) are a diagnostic, ``--preset readings``, judged by no claim.  The flat stretches of L_IH2
(:func:`flat_stretches`) measure the caption's "multiple plateaus" of Adam; :func:`g4_lead` its "begins with the
4-gram pattern".  The negative controls (docs/conventions.md#controls): ``swap_optimizers`` trades the two optimizers
under the same labels, ``freeze_p`` holds the 4-gram head's slope p at its start, ``d1_start saddle`` starts the
D = 1 toy at W_Q = −W_K.

The plateau value of L_IH2 is the loss of the best IH value h with uniform attention ρ (W_Q W_K = 0) on the
evaluation sample; the summary reports each run's final L_IH2 as a fraction of its own dimension's plateau, and the
metrics give the partial losses per output coordinate (½E‖·‖²/d) whatever the training normalisation.  Model and
readings: :mod:`inductionlab.models.highdim`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import inf
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import plots, rng
from inductionlab.config import check_device, check_seeds, require, set_here
from inductionlab.experiments.experiment import SQUARED, Experiment, op_elements
from inductionlab.models import highdim
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.induction import lifted_target
from inductionlab.train.autograd import TrainConfig, train

STUCK = 0.9  # on the plateau: final L_IH2 at least this fraction of it ("GD remains stuck")
STUCK_EVERYWHERE = "stuck under every reading"
FLAT_RATE = 0.02  # decades of L_IH2 per 100 steps: slower than this is flat
FLAT_STEPS = 200  # the least length of a plateau, in steps
D1 = "GD D=1"  # the GD run on the D = 1 toy, the reference for GD's plateau


@dataclass(frozen=True)
class Reading:
    """One reading of loss (3)'s normalisation for GD: the loss it trains, whether it trains the induction part
    alone (h, W_Q, W_K on L_IH2), and the config key of its rate."""

    loss: Literal["sum", "mean"]
    ih_only: bool
    lr_key: str


READINGS = {
    "mean": Reading("mean", False, "gd_lr"),  # (3) averaged over the coordinates at the paper's rate (wang-6-3)
    "sum": Reading("sum", False, "gd_lr_sum"),  # diagnostic: (3) summed, the whole model, at its largest stable rate
    "sum-ih": Reading("sum", True, "gd_lr"),  # diagnostic: (3) summed at the paper's rate, the induction part alone
}


@dataclass(frozen=True)
class Config:
    model: highdim.HighDimConfig = field(default_factory=highdim.HighDimConfig)
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            optimizer="sgd", lr=0.1, steps=3000, batch_size=1000, eval_every=100, eval_log_points=20
        )
    )
    gd_lr: float = 0.1  # the paper's GD rate (Fig. 1): the readings sum-ih and mean, and the D = 1 toy
    gd_lr_sum: float = 0.018  # diagnostic `sum`: the largest stable GD rate on the summed loss (3) at D = 100
    gd_readings: tuple[str, ...] = ("mean",)  # the GD run's rows, one per reading (READINGS); the paper's: mean
    adam_lr: float = 5e-4  # learning rate of the Adam run
    gd_steps: int = 100_000  # GD and the D = 1 reference: Fig. 1's Stage II (App. B.1); Adam runs train.steps
    swap_optimizers: bool = False  # control: the GD rows train with Adam at adam_lr, the Adam run with GD as row 1
    freeze_p: bool = False  # control: the 4-gram head's slope p stays at σ_init (its positional pattern off)
    d1_start: Literal["aligned", "saddle"] = "aligned"  # D = 1 toy from W_Q = W_K = σ_init, or (control) W_Q = −W_K
    eval_size: int = 4000  # sequences of the fixed evaluation sample
    eval_seed: int = 2024  # seed of the fixed evaluation sample (not a run axis)
    seeds: tuple[int, ...] = (100,)  # one seed, every random draw (no run axis); 0 seen (conventions#calibration)
    device: str = "cpu"  # cpu, cuda or cuda:i

    def __post_init__(self) -> None:
        check_device(self.device)
        check_seeds(self.seeds, run_axis=False)
        set_here(self.train, "train", {"optimizer": "sgd", "lr": 0.1}, "the GD and Adam runs (gd_lr, adam_lr)")
        set_here(self.train, "train", {"seed": 0}, "seeds (each data draw its own batches)")
        for key in ("gd_lr", "gd_lr_sum", "adam_lr"):
            require(getattr(self, key) > 0, key, f"learning rates must be > 0, got {getattr(self, key)}")
        unknown = [r for r in self.gd_readings if r not in READINGS]
        require(not unknown, "gd_readings", f"unknown {unknown}; known: {', '.join(READINGS)}")
        require(len(set(self.gd_readings)) == len(self.gd_readings), "gd_readings", "each reading once")
        require(self.d1_start in ("aligned", "saddle"), "d1_start", f"'aligned' or 'saddle', got {self.d1_start!r}")
        require(self.eval_size >= 1, "eval_size", f"must be ≥ 1, got {self.eval_size}")
        require(self.gd_steps >= 1, "gd_steps", f"must be ≥ 1, got {self.gd_steps}")


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"train.steps": 800, "gd_steps": 800},
    "smoke": {
        "model.D": 8,
        "train.steps": 30,
        "gd_steps": 30,
        "train.batch_size": 64,
        "eval_size": 64,
        "train.eval_every": 10,
    },
    "reading-b": {"model.reading": "B", "train.steps": 6000},
    "controls": {"gd_steps": 3000},  # Adam's budget for every D = 100 run (CONTROLS say why that suffices)
    "d1": {"gd_readings": (), "train.steps": 100},  # the D = 1 toy at its full budget; the D = 100 runs cut
    "readings": {"gd_readings": ("mean", "sum", "sum-ih"), "gd_steps": 20_000},  # diagnostic, judged by no claim
}


def flat_stretches(steps: np.ndarray, loss: np.ndarray, floor: float) -> list[list[float]]:
    """The stretches [start, end] of at least FLAT_STEPS steps over which log10 ``loss`` moves by less than
    FLAT_RATE decades per 100 steps while ``loss`` is above ``floor``: the plateaus of a descent (the workshop
    paper's "multiple plateaus" of Adam)."""
    logs = np.log10(np.maximum(loss, 1e-30))
    rate = np.abs(np.diff(logs)) / np.diff(steps) * 100
    flat = (rate < FLAT_RATE) & (loss[:-1] > floor)
    found, start = [], None
    for i, f in enumerate([*flat, False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            if steps[i] - steps[start] >= FLAT_STEPS:
                found.append([float(steps[start]), float(steps[i])])
            start = None
    return found


def plateau_loss(cfg: highdim.HighDimConfig, x: torch.Tensor) -> float:
    """min_h ½E‖h·x̄ − f*_IH‖²/d with x̄ = mean_{s=2..L−1} x_s (uniform ρ): the IH plateau of L_IH2."""
    mean = x[:, 1:-1].mean(1)
    want = lifted_target(x, cfg.alpha_star, cfg.w_star())[1]
    h = float((mean * want).sum() / mean.square().sum())
    return float(0.5 * (h * mean - want).square().mean())


@dataclass(frozen=True)
class RunSpec:
    """One trained θ: its label, D, optimizer and steps, and its rows (label, reading, rate), one run each."""

    name: str
    D: int
    optimizer: Literal["sgd", "adam"]
    steps: int
    rows: tuple[tuple[str, Reading, float], ...]


def _runs(cfg: Config) -> list[RunSpec]:
    """The GD run (one row per reading, :data:`READINGS`) and the Adam run in D = ``model.D``, and GD on the D = 1
    toy at the paper's rate and GD's budget (the reference that tells a plateau lengthened by D from the D = 1
    one).  ``swap_optimizers`` (a negative control, docs/conventions.md#controls) trains the GD rows with Adam at
    ``adam_lr`` and the Adam run with GD as the first reading does, under the same labels and budgets."""
    gd_rows = tuple((r, READINGS[r], float(getattr(cfg, READINGS[r].lr_key))) for r in cfg.gd_readings)
    gd = RunSpec("GD", cfg.model.D, "sgd", cfg.gd_steps, gd_rows)
    adam = RunSpec(
        "Adam",
        cfg.model.D,
        "adam",
        cfg.train.steps,
        (("adam", Reading(cfg.model.loss, False, "adam_lr"), cfg.adam_lr),),
    )
    if cfg.swap_optimizers:
        gd = replace(gd, optimizer="adam", rows=tuple((n, r, cfg.adam_lr) for n, r, _ in gd_rows))
        adam = replace(adam, optimizer="sgd", rows=gd_rows[:1])
    d1 = RunSpec(D1, 1, "sgd", cfg.gd_steps, (("d1", Reading("sum", False, "gd_lr"), cfg.gd_lr),))
    return [*(r for r in (gd, adam) if r.rows), d1]


def _start(cfg: Config, spec: RunSpec, m: highdim.HighDimConfig) -> torch.Tensor:
    """θ(0), one row per run: the seed's draw in D; the Fig. 1 toy's θ(0) = σ_init·1 at D = 1 (a random sign of
    W_Q W_K would start it on the saddle W_Q = −W_K, which GD never leaves), or that saddle (``d1_start``)."""
    theta0 = highdim.init_theta(m, 1, rng.generator(cfg.seeds[0]))
    if spec.name == D1:
        theta0 = theta0.abs()
        if cfg.d1_start == "saddle":
            theta0[:, -1] = -theta0[:, -1]  # W_K = −W_Q
    return theta0.repeat(len(spec.rows), 1).to(cfg.device)


def _train_one(cfg: Config, spec: RunSpec, ctx: RunContext) -> tuple[pd.DataFrame, float]:
    """One θ's metrics table (per-coordinate partial losses, a ``reading`` column naming each row) and its IH
    plateau loss (:func:`plateau_loss`), on an evaluation sample of its own dimension.  Each row trains its
    reading's loss at its rate, its batches' target by :func:`highdim.target` (one pass over the keys), the
    evaluation's by the task's own :func:`lifted_target`; the D = 1 run keeps no checkpoint (a cheap reference)."""
    m = replace(cfg.model, D=1, reading="B") if spec.name == D1 else replace(cfg.model, D=spec.D)
    x_eval = torch.randn(cfg.eval_size, m.L, m.d, generator=rng.generator(cfg.eval_seed)).to(cfg.device)
    want_eval = lifted_target(x_eval, m.alpha_star, m.w_star())
    summed, per_coordinate = replace(m, loss="sum"), replace(m, loss="mean")
    scale = torch.tensor([1.0 if r.loss == "sum" else 1 / m.d for _, r, _ in spec.rows], device=cfg.device)
    g4_on = torch.tensor([0.0 if r.ih_only else 1.0 for _, r, _ in spec.rows], device=cfg.device)

    def loss(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        loss_g4, loss_ih2 = highdim.partial_losses(summed, theta, x, highdim.target(m, x))
        return scale * (g4_on * loss_g4 + loss_ih2)

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        g4, ih = highdim.partial_losses(per_coordinate, theta, x_eval, want_eval)
        p = highdim.unpack(m, theta)
        return {
            "loss_G4": g4.double().cpu().numpy(),
            "loss_IH2": ih.double().cpu().numpy(),
            "p": p["p"].double().cpu().numpy(),
            "g": p["g"].double().cpu().numpy(),
            "h": p["h"].double().cpu().numpy(),
            "kq_error": highdim.kq_product(m, theta).double().cpu().numpy(),
        }

    tcfg = replace(cfg.train, optimizer=spec.optimizer, steps=spec.steps, seed=rng.derive(cfg.seeds[0]))
    trainable = torch.ones(m.n_params).index_fill_(0, torch.tensor([0]), 0.0) if cfg.freeze_p else None
    _, metrics = train(
        tcfg,
        _start(cfg, spec, m),
        loss,
        lambda gen: torch.randn(tcfg.batch_size, m.L, m.d, generator=gen),
        evaluate,
        ctx.child(spec.name, **({"run_dir": None} if spec.name == D1 else {})),
        lr=[rate for *_, rate in spec.rows],
        trainable=trainable,
        desc=spec.name,
        model={"family": "highdim", "config": m},
    )
    names = {i: name for i, (name, *_) in enumerate(spec.rows)}
    return metrics.assign(optimizer=spec.name, reading=metrics.run.map(names)), plateau_loss(m, x_eval)


def run(cfg: Config, ctx: RunContext) -> Results:
    tables, summary, gd = [], {}, {}
    for spec in _runs(cfg):
        metrics, plateau = _train_one(cfg, spec, ctx)
        tables.append(metrics)
        rows = {
            name: _row_summary(g.sort_values("step"), plateau) for name, g in metrics.groupby("reading", sort=False)
        }
        if spec.name == D1:
            summary["d1_ih_plateau_loss"] = plateau
            summary.update({f"gd_d1_{k}": v for k, v in rows["d1"].items()})
        elif spec.name == "Adam":
            summary["ih_plateau_loss"] = plateau
            summary.update({f"adam_{k}": v for k, v in next(iter(rows.values())).items()})
        else:
            summary["ih_plateau_loss"] = plateau
            gd = {name: s if not READINGS[name].ih_only else {**s, "g4_lead": None} for name, s in rows.items()}
    return Results(
        {"metrics": pd.concat(tables, ignore_index=True)},
        {**summary, "gd": gd, "gd_plateau_verdict": plateau_verdict(gd)},
    )


def plateau_verdict(gd: dict[str, dict[str, Any]]) -> str | None:
    """Where GD ends under each reading of the loss's normalisation it ran (a diagnostic of ``--preset readings``,
    judged by no claim: docs/conventions.md#wang-6-3): :data:`STUCK_EVERYWHERE`, "leaves under every reading", or
    "flips with the normalisation" naming the readings on each side; None without a reading."""
    stuck = [r for r, s in gd.items() if s["ih_fraction_of_plateau"] >= STUCK]
    left = [r for r in gd if r not in stuck]
    if not gd:
        return None
    if not left:
        return STUCK_EVERYWHERE
    if not stuck:
        return "leaves under every reading"
    return f"flips with the normalisation: stuck under {', '.join(stuck)}; leaves under {', '.join(left)}"


def _row_summary(g: pd.DataFrame, plateau: float) -> dict[str, Any]:
    """One row's summary: its final L_IH2 over the IH plateau loss, ‖W_QᵀW_K − W*‖/‖W*‖ at the end, the flat
    stretches of L_IH2 above 1% of the plateau (:func:`flat_stretches`), the 4-gram's lead (:func:`g4_lead`) and the
    step where L_IH2 first halves, where the lead is read (+inf: never, docs/conventions.md#never)."""
    steps, loss_ih = g.step.to_numpy(float), g.loss_IH2.to_numpy(float)
    stretches = flat_stretches(steps, loss_ih, 0.01 * plateau)
    halved = np.flatnonzero(loss_ih <= 0.5 * loss_ih[0])
    return {
        "ih_fraction_of_plateau": float(loss_ih[-1] / plateau),
        "kq_error": float(g.kq_error.iloc[-1]),
        "ih_plateaus": {"count": len(stretches), "stretches": stretches},
        "g4_lead": g4_lead(g.loss_G4.to_numpy(float), loss_ih),
        "ih_halves_at": float(steps[halved[0]]) if halved.size else inf,
    }


def g4_lead(loss_g4: np.ndarray, loss_ih: np.ndarray) -> float | None:
    """(L_G4/L_G4(0)) / (L_IH2/L_IH2(0)) at the first evaluation where L_IH2 ≤ ½ L_IH2(0): below 1 when the 4-gram
    has fallen further, in relative terms, by the time the IH loss has halved (the workshop's "the learning process
    begins with the 4-gram pattern", App. B.3); None when L_IH2 never halves."""
    halved = np.flatnonzero(loss_ih <= 0.5 * loss_ih[0])
    if halved.size == 0:
        return None
    i = halved[0]
    return float((loss_g4[i] / loss_g4[0]) / (loss_ih[i] / loss_ih[0]))


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics, s = results.tables["metrics"], results.summary
    fig, (ax, kx) = plots.subplots(2, width=4.8, height=3.6)
    styles = iter(["-", "-.", (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1))])  # one per GD reading; Adam and D = 1 apart
    for (name, reading), g in metrics.groupby(["optimizer", "reading"], sort=False):
        style = {"Adam": (0, (6, 2)), D1: ":"}.get(name) or next(styles)
        width = 2.0 if name == "Adam" else 1.3
        label = name if name != "GD" else f"GD {reading}"
        if not (name == "GD" and reading in READINGS and READINGS[reading].ih_only):  # its 4-gram part is not trained
            ax.semilogy(
                g.step, g.loss_G4, ls=style, lw=width, color=plots.CURVE_COLORS["loss_G4"], label=f"L_G4, {label}"
            )
        ax.semilogy(
            g.step, g.loss_IH2, ls=style, lw=width, color=plots.CURVE_COLORS["loss_IH2"], label=f"L_IH2, {label}"
        )
        kx.semilogy(g.step, g.kq_error, ls=style, lw=width, color=plots.CURVE_COLORS["w_KQ"], label=label)
    ax.axhline(s["ih_plateau_loss"], color="gray", lw=0.8, ls=":", label="IH plateau (D = model.D)")
    ax.set_xlabel("step"), ax.set_ylabel("partial loss per output coordinate")
    ends = ", ".join(f"{r} {plots.num(v.get('ih_fraction_of_plateau')):.2g}" for r, v in s.get("gd", {}).items())
    ax.set_title(
        f"L_IH2 / plateau at the end: GD {ends}; Adam {plots.num(s.get('adam_ih_fraction_of_plateau')):.1e}", fontsize=8
    )
    ax.legend(fontsize=6)
    kx.set_xlabel("step"), kx.set_ylabel("‖W_Qᵀ W_K − W*‖_F / ‖W*‖_F")
    kx.set_title("induction-head weights", fontsize=9)
    kx.legend(fontsize=7)
    return [plots.save(fig, Path(out_dir) / "adam_vs_gd_highdim.png")]


EXPERIMENT = Experiment(
    op_size=lambda c: op_elements(c.train.batch_size, c.model.L, c.model.D),  # docs/conventions.md#threads
    devices=("cpu", "cuda"),
    loss_unit=SQUARED,
    name="adam-vs-gd-highdim",
    description="Workshop Fig. 4: D = 100, online GD (Fig. 1's, on the loss averaged over the coordinates) against Adam",
    figure="Wang et al. workshop Fig. 4",
    wall="~60 min",  # estimated: 10 000 GD steps, Adam 3000 and D = 1 10 000 took 21 min on a loaded core
    headline=(
        "gd.mean.ih_fraction_of_plateau",
        "adam_ih_fraction_of_plateau",
        "gd_d1_ih_fraction_of_plateau",
    ),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
