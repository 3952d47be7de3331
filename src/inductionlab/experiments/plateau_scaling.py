"""Scaling of the plateau with L, α*, σ_init and w* (Wang et al., Theorem 5.5; docs/conventions.md#wang-5-5 "Checks").

Gradient flow (closed forms, :mod:`inductionlab.train.flow`) one factor at a time around the paper
point — or on the full grid — plus online SGD (idealised Stage II, several configurations trained at
once on the run axis) at a few points.  Fits the exponents of T_III and T_50 in L, (1+α*) and w*, and
the linearity of T in log(1/σ_init); compares with the predicted (1+α*)² L log(1/σ_init) / w*².
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from inductionlab import plots
from inductionlab.analysis.claims import Between, Claim, Near
from inductionlab.analysis.scaling import linear_fit, power_law_exponent
from inductionlab.config import check_seeds, require
from inductionlab.experiments.keys_common import set_here
from inductionlab.experiments.toy_common import train_and_time
from inductionlab.models.toy import ToyConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import MixedTarget, MixedTaskConfig
from inductionlab.theory.mixed import check_ih_domain, predicted_plateau
from inductionlab.train.flow import FlowProblem, solve_flow
from inductionlab.train.toy import ToyTrainConfig

NAME = "plateau-scaling"
DESCRIPTION = "Plateau length against L, α*, σ_init and w*: gradient flow and SGD vs (1+α*)²L log(1/σ)/w*²"
FIGURE = "Wang et al. Theorem 5.5"
WALL = "~1.5 min"  # default preset, 2 cores
CPU_ONLY = "the six-parameter toy trains with a hand-written step whose time is Python overhead and random numbers, which a GPU does not remove"
HEADLINE = ("exponents.L", "exponents.one_plus_alpha", "exponents.w_star", "log_inv_sigma_r2")
FACTORS = ("L", "alpha_star", "w_star", "sigma_init")
TIMES = ("T_I", "T_o", "T_II", "T_III", "T_50")


@dataclass(frozen=True)
class GridConfig:
    """The values of each factor, varied one at a time around the base point (``full_grid``: their product), the
    gradient-flow horizon, and the SGD comparison points (at each L in ``sgd_L``, the other factors at the base
    point, every σ_init in ``sgd_sigma_init`` on the run axis)."""

    L_values: tuple[int, ...] = (20, 40, 80, 160)
    alpha_values: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    w_star_values: tuple[float, ...] = (0.25, 0.35, 0.49)
    sigma_values: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)
    full_grid: bool = False
    horizon: float = 3.0  # t_end = horizon × the predicted plateau
    sgd_L: tuple[int, ...] = (20, 40)
    sgd_sigma_init: tuple[float, ...] = (1e-2, 1e-3)

    def __post_init__(self) -> None:
        for name in ("L_values", "alpha_values", "w_star_values", "sigma_values"):
            require(len(getattr(self, name)) >= 2, f"grid.{name}", "needs at least two values to fit a scaling law")
        require(min(self.L_values + self.sgd_L) >= 5, "grid.L_values", "every L must be ≥ 5")
        require(min(self.sigma_values + self.sgd_sigma_init) > 0, "grid.sigma_values", "σ_init must be > 0")
        require(min(self.alpha_values) > 0, "grid.alpha_values", "α* must be > 0")
        for w in self.w_star_values:
            check_ih_domain(w)
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
    seeds: tuple[int, ...] = (0,)

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
PRESETS = {
    "full": {"grid.full_grid": True},
    "quick": {"grid.sgd_L": "20", "grid.sgd_sigma_init": "0.01"},
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
    },
}

CLAIMS = (
    Claim(
        "wang-thm5.5-L",
        "wang",
        "Thm 5.5",
        "The plateau length grows linearly in L",
        "exponents.L",
        "exponent 1",
        Near(1.0, atol=0.15),
    ),
    Claim(
        "wang-thm5.5-alpha",
        "wang",
        "Thm 5.5",
        "The plateau length grows like (1 + α*)²",
        "exponents.one_plus_alpha",
        "exponent 2",
        Near(2.0, atol=0.2),
    ),
    Claim(
        "wang-thm5.5-wstar",
        "wang",
        "Thm 5.5",
        "The plateau length falls like 1/w*²",
        "exponents.w_star",
        "exponent −2",
        Near(-2.0, atol=0.2),
    ),
    Claim(
        "wang-thm5.5-sigma",
        "wang",
        "Thm 5.5",
        "The plateau length is linear in log(1/σ_init)",
        "log_inv_sigma_r2",
        "linear (R² → 1)",
        Between(lo=0.99),
    ),
)


def _points(cfg: Config) -> list[dict]:
    base, g = base_point(cfg), cfg.grid
    values = dict(zip(FACTORS, (g.L_values, g.alpha_values, g.w_star_values, g.sigma_values)))
    if g.full_grid:
        return [dict(zip(FACTORS, combo)) for combo in itertools.product(*values.values())]
    pts = {tuple(base.values()): base}
    for factor, vals in values.items():
        for v in vals:
            p = {**base, factor: v}
            pts[tuple(p.values())] = p
    return list(pts.values())


def run(cfg: Config, ctx: RunContext) -> Results:
    rows = []
    for point in tqdm(_points(cfg), desc="gradient flow", disable=not ctx.progress):
        pred = predicted_plateau(point["L"], point["alpha_star"], point["w_star"], point["sigma_init"])
        res = solve_flow(FlowProblem(**point, t_end=cfg.grid.horizon * pred), n_points=40)
        rows.append({**point, "method": "gf", "predicted": pred, **{k: getattr(res.phases, k) for k in TIMES}})
    for L in cfg.grid.sgd_L:
        rows += _sgd_rows(cfg, L, ctx)
    table = pd.DataFrame(rows)
    return Results({"results": table}, _fits(cfg, table))


def _sgd_rows(cfg: Config, L: int, ctx: RunContext) -> list[dict]:
    """SGD at (L, base α*, w*) for every σ in sgd_sigma_init — one batched job on the run axis, trained
    for twice the gradient-flow T_III (the exact-softmax emergence comes ~1.3× later than eq. 10's)."""
    sigmas = list(cfg.grid.sgd_sigma_init)
    S = len(sigmas)
    t_gf = max(
        solve_flow(
            FlowProblem(
                L,
                cfg.task.alpha_star,
                cfg.task.w_star,
                s,
                t_end=cfg.grid.horizon * predicted_plateau(L, cfg.task.alpha_star, cfg.task.w_star, s),
            ),
            n_points=4,
        ).phases.T_III
        for s in sigmas
    )
    steps = int(math.ceil(2 * t_gf / cfg.train.lr))
    train_cfg = replace(cfg.train, stage2_steps=steps)
    target = MixedTarget.per_run([cfg.task.alpha_star] * S, [cfg.task.w_star] * S, L)
    _, _, per_run = train_and_time(
        train_cfg,
        target,
        torch.tensor(sigmas),
        [cfg.seeds[0] + i for i in range(S)],
        ctx.child(f"sgd_L{L}"),
        cfg.task.alpha_star,
        cfg.task.w_star,
    )
    rows = []
    for times in per_run:
        s = sigmas[times["run"]]
        rows.append(
            {
                "L": L,
                "alpha_star": cfg.task.alpha_star,
                "w_star": cfg.task.w_star,
                "sigma_init": s,
                "method": "sgd",
                "predicted": predicted_plateau(L, cfg.task.alpha_star, cfg.task.w_star, s),
                **{k: times[k] for k in TIMES},
            }
        )
    return rows


def _one_factor(table: pd.DataFrame, base: dict[str, float], factor: str) -> pd.DataFrame:
    others = [f for f in FACTORS if f != factor]
    gf = table[table.method == "gf"]
    mask = np.ones(len(gf), dtype=bool)
    for f in others:
        mask &= np.isclose(gf[f].to_numpy(dtype=float), float(base[f]))
    return gf[mask].sort_values(factor)


def _fits(cfg: Config, table: pd.DataFrame) -> dict:
    base = base_point(cfg)
    exps = {}
    for time in ("T_III", "T_50"):
        e = {}
        for factor, key, transform in (
            ("L", "L", lambda v: v),
            ("alpha_star", "one_plus_alpha", lambda v: 1 + v),
            ("w_star", "w_star", lambda v: v),
        ):
            sub = _one_factor(table, base, factor)
            e[key] = power_law_exponent(transform(sub[factor].to_numpy(dtype=float)), sub[time])
        sub = _one_factor(table, base, "sigma_init")
        e["log_inv_sigma_r2"] = linear_fit(np.log(1 / sub.sigma_init.to_numpy(dtype=float)), sub[time])[2]
        exps[time] = e
    gf = table[table.method == "gf"]
    ratio = (gf.T_III / gf.predicted).to_numpy(dtype=float)
    sgd = table[table.method == "sgd"]
    return {
        "exponents": {k: exps["T_III"][k] for k in ("L", "one_plus_alpha", "w_star")},
        "log_inv_sigma_r2": exps["T_III"]["log_inv_sigma_r2"],
        "exponents_T50": exps["T_50"],
        "expected_exponents": {"L": 1.0, "one_plus_alpha": 2.0, "w_star": -2.0},
        "T_III_over_predicted": {"min": float(np.nanmin(ratio)), "max": float(np.nanmax(ratio))},
        "n_gf": int(len(gf)),
        "n_sgd": int(len(sgd)),
        "base": base,
    }


def plot(results: Results, out_dir: Path) -> list[Path]:
    """Four panels (T_III and T_50 against each factor, GF lines, SGD markers) and measured vs predicted."""
    table, s = results.tables["results"], results.summary
    base = s["base"]
    fig, axes = plots.subplots(3, 2, width=3.9, height=3.2)
    for ax, factor in zip(axes, FACTORS):
        sub = _one_factor(table, base, factor)
        x = 1 + sub[factor] if factor == "alpha_star" else sub[factor]
        for time, color in (("T_III", "#1b9e77"), ("T_50", "#7570b3")):
            ax.plot(x, sub[time], "o-", color=color, ms=3, label=f"{time} (GF)")
        sgd = table[(table.method == "sgd")]
        if factor in ("L", "sigma_init") and len(sgd):
            other = "sigma_init" if factor == "L" else "L"
            pts = sgd[np.isclose(sgd[other].astype(float), float(base[other]))]
            ax.plot(pts[factor], pts.T_III, "s", mfc="none", color="#d95f02", label="T_III (SGD)")
        label = {"L": "$L$", "alpha_star": r"$1 + \alpha^*$", "w_star": "$w^*$", "sigma_init": r"$\sigma_{init}$"}[
            factor
        ]
        ax.set(
            xscale="log",
            yscale="log" if factor != "sigma_init" else "linear",
            title=f"phase times against {label}",
            xlabel=label,
            ylabel="t = lr × step",
        )
        ax.legend(fontsize=7)
        plots.plain_log_ticks(ax)
    ax = axes[4]
    for method, marker in (("gf", "o"), ("sgd", "s")):
        sub = table[table.method == method]
        ax.loglog(sub.predicted, sub.T_III, marker, mfc="none", label=method.upper())
    lim = [table.predicted.min() * 0.8, table.predicted.max() * 1.2]
    ax.plot(lim, lim, "k:", lw=0.8, label="T = prediction")
    ex = s.get("exponents", {})
    ax.set(
        title=r"$T_{III}$ against $(1+\alpha^*)^2 L \log(1/\sigma)/w^{*2}$",
        xlabel="predicted",
        ylabel=r"measured $T_{III}$",
    )
    ax.legend(fontsize=7)
    plots.plain_log_ticks(ax)
    axes[5].set_visible(False)
    fig.suptitle(
        f"Exponents of T_III: L {plots.num(ex.get('L')):.2f} (1), 1+α* {plots.num(ex.get('one_plus_alpha')):.2f} (2), "
        f"w* {plots.num(ex.get('w_star')):.2f} (−2); R² in log(1/σ) {plots.num(s.get('log_inv_sigma_r2')):.4f}"
    )
    return [plots.save(fig, Path(out_dir) / "plateau_scaling.png")]
