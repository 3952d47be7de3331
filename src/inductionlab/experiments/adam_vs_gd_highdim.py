"""GD vs Adam in high dimension (Wang et al., workshop Fig. 4; docs/conventions.md#wang-6-3): with D = 100, the toy's
layer 2 trained by online GD (the Fig. 2 optimiser, lr 0.1) stays on the induction-head plateau within the
budget, while Adam (lr 5e-4) leaves it — its per-coordinate normalisation moves all D² entries of W_Q, W_K
at once, where GD's growth is set by the tiny initial ‖W_Q‖‖W_K‖.

GD runs ``gd_steps`` = 10 000 steps, past the plateau of the D = 1 toy (T_50 ≈ 9 400 steps at lr 0.1), so that
"GD stays on the plateau" tells D = 100 from D = 1; Adam runs ``train.steps``.  The flat stretches of each run's
L_IH2 (:func:`flat_stretches`) measure the workshop caption's "multiple plateaus" of Adam.  ``swap_optimizers``
trades the two optimizers under the same labels (the negative control, docs/conventions.md#controls).

Both runs start from the same parameters and see the same batches.  The plateau value of L_IH2 is the loss
of the best IH value h with uniform attention ρ (W_Q W_K = 0), measured on the evaluation sample; the summary
reports each optimiser's final L_IH2 as a fraction of it.  Model and readings: :mod:`inductionlab.models.highdim`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import plots, rng
from inductionlab.analysis.claims import Between, Claim, Control
from inductionlab.config import check_device, check_seeds, require
from inductionlab.experiments.experiment import Experiment
from inductionlab.experiments.keys_common import set_here
from inductionlab.models import highdim
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import lifted_target
from inductionlab.train.autograd import TrainConfig, train

FLAT_RATE = 0.02  # decades of L_IH2 per 100 steps: slower than this is flat
FLAT_STEPS = 200  # the least length of a plateau, in steps


@dataclass(frozen=True)
class Config:
    model: highdim.HighDimConfig = field(default_factory=highdim.HighDimConfig)
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            optimizer="sgd", lr=0.1, steps=3000, batch_size=1000, eval_every=100, eval_log_points=20
        )
    )
    gd_lr: float = 0.1  # learning rate of the GD run (SGD at train.batch_size, gd_steps steps)
    adam_lr: float = 5e-4  # learning rate of the Adam run
    gd_steps: int = 10_000  # GD past the D = 1 plateau (T_50 ≈ 9 400 steps at lr 0.1); Adam runs train.steps
    swap_optimizers: bool = False  # the negative control: the "GD" run trains with Adam at adam_lr, and back
    eval_size: int = 4000  # sequences of the fixed evaluation sample
    eval_seed: int = 2024  # seed of the fixed evaluation sample (not a run axis)
    seeds: tuple[int, ...] = (0,)  # one seed (no run axis), for every random draw; for several: sweep --n-seeds K
    device: str = "cpu"  # cpu, cuda or cuda:i

    def __post_init__(self) -> None:
        check_device(self.device)
        check_seeds(self.seeds, run_axis=False)
        set_here(self.train, "train", {"optimizer": "sgd", "lr": 0.1}, "the GD and Adam runs (gd_lr, adam_lr)")
        for key in ("gd_lr", "adam_lr"):
            require(getattr(self, key) > 0, key, f"learning rates must be > 0, got {getattr(self, key)}")
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
    "swap": {"train.steps": 2000, "gd_steps": 2000},  # the control: Adam's L_IH2 is 0.2× the plateau by 2000 steps
}

CONTROLS = (
    Control(
        name="swap-optimizers",
        breaks="the two runs trade optimizers (the GD run trains with Adam at lr 5e-4, the Adam run with GD at lr 0.1), "
        "2000 steps each: what tells them apart is the optimizer, not the label",
        overrides={"swap_optimizers": True},
        preset="swap",
        wall="~2.5 min",
    ),
)

CLAIMS = (
    Claim(
        id="wang-ws4-gd-plateau",
        paper="wang",
        where='workshop App. B.3 and Fig. 4: "within the given number of iterations, GD remains stuck in the plateau"',
        statement="Online GD in D = 100 is still on the induction-head plateau after 10 000 steps, past the D = 1 plateau "
        "(T_50 ≈ 9 400 steps at lr 0.1 in lazy-to-rich)",
        key="gd_ih_fraction_of_plateau",
        expected="≈ 1 (on the plateau)",
        test=Between(lo=0.9),
        control="swap-optimizers",
        if_failed="a finding about the paper: GD in D = 100 leaves the plateau within 10 000 steps, so its plateau "
        "is not longer than the D = 1 one at this budget",
    ),
    Claim(
        id="wang-ws4-adam-escapes",
        paper="wang",
        where='workshop App. B.3 and Fig. 4: "whereas Adam successfully escapes that plateau"',
        statement="Adam (lr 5e-4) escapes the induction-head plateau within 3000 steps",
        key="adam_ih_fraction_of_plateau",
        expected="≪ 1",
        test=Between(hi=0.01),
        control="swap-optimizers",
    ),
    Claim(
        id="wang-ws4-adam-plateaus",
        paper="wang",
        where='workshop App. B.3, Fig. 4 caption: Adam "experiences a challenging transition characterized by multiple '
        'plateaus during learning induction heads"',
        statement="Adam's induction-head loss descends through at least two plateaus (flat stretches of L_IH2 of ≥ 200 steps "
        "moving < 0.02 decades per 100 steps, above 1% of the IH plateau)",
        key="adam_ih_plateaus.count",
        expected="multiple plateaus (≥ 2)",
        test=Between(lo=2),
        if_failed="a finding about the paper: under reading A (D = 100) Adam's L_IH2 falls from 3.2e-3 to 8e-11 in "
        "3000 steps without a flat stretch, while GD's sits on one plateau from step 1600 to 10 000",
    ),
)


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


def _runs(cfg: Config) -> list[tuple[str, Literal["sgd", "adam"], float, int]]:
    """(label, optimizer, lr, steps) of the two runs; ``swap_optimizers`` trades the optimizers and their learning
    rates under the same labels and step budgets (the negative control, docs/conventions.md#controls)."""
    optimizers: list[tuple[Literal["sgd", "adam"], float]] = [("sgd", cfg.gd_lr), ("adam", cfg.adam_lr)]
    if cfg.swap_optimizers:
        optimizers.reverse()
    return [
        (name, *opt, steps) for name, opt, steps in zip(("GD", "Adam"), optimizers, (cfg.gd_steps, cfg.train.steps))
    ]


def run(cfg: Config, ctx: RunContext) -> Results:
    m = cfg.model
    x_eval = torch.randn(cfg.eval_size, m.L, m.d, generator=rng.generator(cfg.eval_seed)).to(cfg.device)
    theta0 = highdim.init_theta(m, 1, rng.generator(cfg.seeds[0]))
    want_eval = lifted_target(x_eval, m.alpha_star, m.w_star())

    def loss(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        loss_g4, loss_ih2 = highdim.partial_losses(m, theta, x, lifted_target(x, m.alpha_star, m.w_star()))
        return loss_g4 + loss_ih2

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        g4, ih = highdim.partial_losses(m, theta, x_eval, want_eval)
        p = highdim.unpack(m, theta)
        return {
            "loss_G4": g4.double().cpu().numpy(),
            "loss_IH2": ih.double().cpu().numpy(),
            "p": p["p"].double().cpu().numpy(),
            "g": p["g"].double().cpu().numpy(),
            "h": p["h"].double().cpu().numpy(),
            "kq_error": highdim.kq_product(m, theta).double().cpu().numpy(),
        }

    tables = []
    for name, optimizer, lr, steps in _runs(cfg):
        tcfg = replace(cfg.train, optimizer=optimizer, lr=lr, steps=steps)
        _, metrics = train(
            tcfg,
            theta0,
            loss,
            lambda gen: torch.randn(tcfg.batch_size, m.L, m.d, generator=gen),
            evaluate,
            ctx.child(name, threads=1),
            desc=name,
            model={"family": "highdim", "config": m},
        )
        tables.append(metrics.assign(optimizer=name))
    metrics = pd.concat(tables, ignore_index=True)
    plateau = plateau_loss(m, x_eval)
    final = metrics.loc[metrics.groupby("optimizer").step.idxmax()].set_index("optimizer")
    return Results(
        {"metrics": metrics},
        {
            "ih_plateau_loss": plateau,
            "gd_ih_fraction_of_plateau": float(final.loc["GD", "loss_IH2"] / plateau),
            "adam_ih_fraction_of_plateau": float(final.loc["Adam", "loss_IH2"] / plateau),
            "gd_kq_error": float(final.loc["GD", "kq_error"]),
            "adam_kq_error": float(final.loc["Adam", "kq_error"]),
            **_plateaus(metrics, plateau),
        },
    )


def _plateaus(metrics: pd.DataFrame, plateau: float) -> dict:
    """Each run's flat stretches of L_IH2 above 1% of the IH plateau (:func:`flat_stretches`) and their count."""
    out = {}
    for name, g in metrics.groupby("optimizer"):
        g = g.sort_values("step")
        stretches = flat_stretches(g.step.to_numpy(float), g.loss_IH2.to_numpy(float), 0.01 * plateau)
        out[f"{name.lower()}_ih_plateaus"] = {"count": len(stretches), "stretches": stretches}
    return out


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics, s = results.tables["metrics"], results.summary
    fig, (ax, kx) = plots.subplots(2, width=4.8, height=3.6)
    styles = {"GD": "-", "Adam": "--"}
    for name, g in metrics.groupby("optimizer"):
        ax.semilogy(g.step, g.loss_G4, styles[name], color=plots.CURVE_COLORS["loss_G4"], label=f"L_G4, {name}")
        ax.semilogy(g.step, g.loss_IH2, styles[name], color=plots.CURVE_COLORS["loss_IH2"], label=f"L_IH2, {name}")
        kx.semilogy(g.step, g.kq_error, styles[name], color=plots.CURVE_COLORS["w_KQ"], label=name)
    ax.axhline(s["ih_plateau_loss"], color="gray", lw=0.8, ls=":", label="IH plateau")
    ax.set_xlabel("step"), ax.set_ylabel("partial loss")
    ax.set_title(
        f"L_IH2 / plateau at the end: GD {plots.num(s.get('gd_ih_fraction_of_plateau')):.2f}, "
        f"Adam {plots.num(s.get('adam_ih_fraction_of_plateau')):.1e}",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    kx.set_xlabel("step"), kx.set_ylabel("‖W_Qᵀ W_K − W*‖_F / ‖W*‖_F")
    kx.set_title("induction-head weights", fontsize=9)
    kx.legend(fontsize=8)
    return [plots.save(fig, Path(out_dir) / "adam_vs_gd_highdim.png")]


EXPERIMENT = Experiment(
    name="adam-vs-gd-highdim",
    description="Workshop Fig. 4: D = 100, online GD (lr 0.1) stays on the IH plateau, Adam (lr 5e-4) escapes",
    figure="Wang et al. workshop Fig. 4",
    wall="~9 min",  # default preset, 2 cores (GD 10 000 steps, Adam 3000)
    headline=("gd_ih_fraction_of_plateau", "adam_ih_fraction_of_plateau", "gd_kq_error", "adam_kq_error"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
    claims=CLAIMS,
    controls=CONTROLS,
)
