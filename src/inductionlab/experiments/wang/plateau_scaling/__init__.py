"""Scaling of the plateau with L, α*, σ_init and w* (Wang et al., Theorem 5.5; docs/conventions.md#wang-5-5 "Checks").

Gradient flow (closed forms, :mod:`inductionlab.train.flow`) one factor at a time around the paper
point — or on the full grid — plus online SGD (idealised Stage II, several configurations trained at
once on the run axis) at a few points.  Fits the exponents of T_III and T_50 in L, (1+α*) and w*, and
the linearity of T in log(1/σ_init); compares with the predicted (1+α*)² L log(1/σ_init) / w*².
This file holds the config, presets and claims; the gradient-flow scan, the phases at one L, Phase I up to large L,
the SGD points, the fits and the figure are in :mod:`inductionlab.experiments.wang.plateau_scaling.measures`; the
mechanism-free learners and the controls that swap them in (``learner``) in
:mod:`inductionlab.experiments.wang.plateau_scaling.learners`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from inductionlab.config import check_seeds, require, set_here
from inductionlab.experiments.experiment import Experiment
from inductionlab.experiments.wang.plateau_scaling.learners import Learner
from inductionlab.experiments.wang.plateau_scaling.measures import (
    FACTORS,
    fits,
    flow_row,
    phase1_fits,
    phase_fits,
    phase_row,
    plot,
    scan_points,
    sgd_rows,
)
from inductionlab.models.toy import ToyConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import MixedTaskConfig
from inductionlab.theory.mixed import check_ih_domain
from inductionlab.train.toy import ToyTrainConfig


@dataclass(frozen=True)
class GridConfig:
    """The values of each factor, varied one at a time around the base point (``full_grid``: their product), the
    gradient-flow horizon, and the SGD comparison points (at each L in ``sgd_L``, the other factors at the base
    point, every σ_init in ``sgd_sigma_init`` on the run axis)."""

    L_values: tuple[int, ...] = (20, 40, 80, 160)  # sequence lengths L of the grid (the plateau grows ∝ L)
    alpha_values: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)  # α* values of the grid (the 4-gram part's weight, wang-5-1)
    w_star_values: tuple[float, ...] = (0.25, 0.35, 0.49)  # w* values of the grid (each < 1/√2 for the closed form)
    sigma_values: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)  # σ_init values of the grid
    full_grid: bool = False  # true: the product of the factors' values; false: one at a time
    horizon: float = 3.0  # t_end = horizon × the predicted plateau
    sgd_L: tuple[int, ...] = (20, 40)  # L values at which online SGD runs beside the flow (empty: flow only)
    sgd_sigma_init: tuple[float, ...] = (1e-2, 1e-3)  # σ_init values of the SGD runs, on the run axis
    exact_mc_samples: int = 4096  # the exact-softmax flow at the one-factor points (0: closed forms only)
    phase1_L: tuple[int, ...] = (40, 4_000, 40_000, 400_000)  # L at which Phase I's L_IH2(T_I)/L_IH2(0) is solved
    phase1_slope_from: int = 4_000  # 1 − that ratio ∝ 1/L is fitted over phase1_L ≥ this (it needs L ≫ T_I ≈ 205)
    phase1_t_end: float = 1_000.0  # the Phase I flows run to here to find T_I (≈ 205 at the base point)

    def __post_init__(self) -> None:
        for name in ("L_values", "alpha_values", "w_star_values", "sigma_values"):
            require(len(getattr(self, name)) >= 2, f"grid.{name}", "needs at least two values to fit a scaling law")
        require(min(self.L_values + self.sgd_L + self.phase1_L) >= 5, "grid.L_values", "every L must be ≥ 5")
        require(self.phase1_t_end > 0, "grid.phase1_t_end", f"must be > 0, got {self.phase1_t_end}")
        require(min(self.sigma_values + self.sgd_sigma_init) > 0, "grid.sigma_values", "σ_init must be > 0")
        require(min(self.alpha_values) > 0, "grid.alpha_values", "α* must be > 0")
        for w in self.w_star_values:
            check_ih_domain(w)
        require(self.exact_mc_samples >= 0, "grid.exact_mc_samples", "must be ≥ 0 (0 turns the exact flow off)")
        require(
            self.horizon > 1, "grid.horizon", f"t_end = horizon × predicted plateau must exceed it; got {self.horizon}"
        )


@dataclass(frozen=True)
class Config:
    """The base point (``task``, ``model``: the paper's), the grid around it, and the SGD settings (``train``)."""

    task: MixedTaskConfig = field(default_factory=MixedTaskConfig)
    model: ToyConfig = field(default_factory=ToyConfig)
    grid: GridConfig = field(default_factory=GridConfig)
    train: ToyTrainConfig = field(
        default_factory=lambda: ToyTrainConfig(
            stage1_steps=0, eval_size=10_000, eval_every=500, eval_log_points=20, checkpoint_every=10**9
        )
    )
    seeds: tuple[int, ...] = (0,)  # one seed (no run axis); the SGD points' data seeds are seeds[0] + i
    # the paper's gradient flow, or a mechanism-free baseline for the controls (learners.py, wang-5-5 "Controls")
    learner: Learner = "gradient-flow"

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        set_here(self.train, "train", {"stage2_steps": 100_000}, "each run's predicted plateau length")
        require(self.task.tokens == "gaussian", "task.tokens", "the closed forms hold for Gaussian tokens only")
        check_ih_domain(self.task.w_star)
        require(
            self.train.stage2_layer1 == "ideal" and self.train.schedule == "layerwise",
            "train.stage2_layer1",
            "the SGD points compare with gradient flow on the idealised Stage II: keep 'ideal' and 'layerwise'",
        )


def base_point(cfg: Config) -> dict[str, float]:
    """The factors at the base point: L, α*, w*, σ_init."""
    return {
        "L": cfg.task.L,
        "alpha_star": cfg.task.alpha_star,
        "w_star": cfg.task.w_star,
        "sigma_init": cfg.model.sigma_init,
    }


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "full": {"grid.full_grid": True},
    "quick": {"grid.sgd_L": "20", "grid.sgd_sigma_init": "0.01"},
    "flow": {"grid.sgd_L": (), "grid.exact_mc_samples": 0},  # closed-form gradient flow only (for controls)
    "smoke": {
        "grid.L_values": "8,12",
        "grid.alpha_values": "1,2",
        "grid.w_star_values": "0.35,0.49",
        "grid.sigma_values": "0.1,0.01",
        "task.L": 8,
        "grid.sgd_L": "8",
        "grid.sgd_sigma_init": "0.1",
        "train.eval_size": 256,
        "train.batch_size": 64,
        "grid.exact_mc_samples": 64,
    },
}


def _points(cfg: Config, full_grid: bool) -> list[dict]:
    g = cfg.grid
    values = dict(zip(FACTORS, (g.L_values, g.alpha_values, g.w_star_values, g.sigma_values)))
    return scan_points(base_point(cfg), values, full_grid)


def run(cfg: Config, ctx: RunContext) -> Results:
    g, base, seed = cfg.grid, base_point(cfg), cfg.seeds[0]
    learner = cfg.learner
    rows = [
        flow_row(point, "gf", g.horizon, g.exact_mc_samples, seed, learner)
        for point in tqdm(_points(cfg, g.full_grid), desc="gradient flow", disable=not ctx.progress)
    ]
    exact = []
    if g.exact_mc_samples:
        for point in tqdm(_points(cfg, False), desc="exact-softmax flow", disable=not ctx.progress):
            exact.append(flow_row(point, "exact", g.horizon, g.exact_mc_samples, seed, learner))
    for L in g.sgd_L:
        rows += sgd_rows(L, base, g.sgd_sigma_init, g.horizon, cfg.train, seed, ctx, learner)
    table, exact_table = pd.DataFrame(rows), pd.DataFrame(exact)
    phases = pd.DataFrame([phase_row(L, base, g.horizon, learner) for L in g.L_values])
    summary = {
        **fits(base, pd.concat([table, exact_table], ignore_index=True)),
        "phases": phase_fits(phases),
        "phase1": phase1_fits(g.phase1_L, base, g.phase1_t_end, g.phase1_slope_from, learner),
    }
    tables = {"results": table, "phases": phases} | ({"exact": exact_table} if exact else {})
    return Results(tables, summary)


EXPERIMENT = Experiment(
    op_size=lambda c: c.train.batch_size * c.task.L,  # one query per sequence (docs/conventions.md#threads)
    name="plateau-scaling",
    description="Plateau length against L, α*, σ_init and w*: gradient flow and SGD vs (1+α*)²L log(1/σ)/w*²",
    figure="Wang et al. Theorem 5.5",
    wall="~2 min",  # default preset, 2 cores (the exact-softmax flow at the one-factor points included)
    cpu_only="the six-parameter toy trains with a hand-written step whose time is Python overhead and random numbers, which a GPU does not remove",
    headline=("exponents.L", "exponents.one_plus_alpha", "exponents.w_star", "log_inv_sigma_r2"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
