"""Scaling of the plateau with L, α*, σ_init and w* (Wang et al., Theorem 5.5; docs/conventions.md#wang-5-5 "Checks").

Gradient flow (closed forms, :mod:`inductionlab.train.flow`) one factor at a time around the paper
point — or on the full grid — plus online SGD (idealised Stage II, several configurations trained at
once on the run axis) at a few points.  Fits the exponents of T_III and T_50 in L, (1+α*) and w*, and
the linearity of T in log(1/σ_init); compares with the predicted (1+α*)² L log(1/σ_init) / w*².
This file holds the config, presets, claims, the gradient-flow scan and the figure; the phases at one L,
the SGD points and the fits are in :mod:`inductionlab.experiments.plateau_scaling_common`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from inductionlab import plots
from inductionlab.analysis.claims import Between, Claim, Control, Near
from inductionlab.config import check_seeds, require
from inductionlab.experiments.experiment import Experiment
from inductionlab.experiments.keys_common import set_here
from inductionlab.experiments.plateau_scaling_common import (
    FACTORS,
    TIMES,
    fits,
    one_factor,
    phase_fits,
    phase_row,
    sgd_rows,
)
from inductionlab.models.toy import ToyConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import MixedTaskConfig
from inductionlab.theory.mixed import check_ih_domain, predicted_plateau
from inductionlab.train.flow import FlowProblem, solve_flow
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

    def __post_init__(self) -> None:
        for name in ("L_values", "alpha_values", "w_star_values", "sigma_values"):
            require(len(getattr(self, name)) >= 2, f"grid.{name}", "needs at least two values to fit a scaling law")
        require(min(self.L_values + self.sgd_L) >= 5, "grid.L_values", "every L must be ≥ 5")
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

CONTROLS = (
    Control(
        name="sigma-large",
        breaks="σ_init = 0.1, not ≪ 1 (Theorem 5.5's assumption): w_KQ moves during Phase I, so the induction head is no "
        "longer lazy while the 4-gram is learned",
        overrides={"model.sigma_init": 0.1},
        preset="flow",
    ),
)

CLAIMS = (
    Claim(
        id="wang-thm5.5-L",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length grows linearly in L",
        key="exponents.L",
        expected="exponent 1",
        test=Near(1.0, atol=0.15),
    ),
    Claim(
        id="wang-thm5.5-alpha",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length grows like (1 + α*)²",
        key="exponents.one_plus_alpha",
        expected="exponent 2",
        test=Near(2.0, atol=0.2),
    ),
    Claim(
        id="wang-thm5.5-wstar",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length falls like 1/w*²",
        key="exponents.w_star",
        expected="exponent −2",
        test=Near(-2.0, atol=0.2),
    ),
    Claim(
        id="wang-thm5.5-sigma",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length is linear in log(1/σ_init)",
        key="log_inv_sigma_r2",
        expected="linear (R² → 1)",
        test=Between(lo=0.99),
    ),
    Claim(
        id="wang-thm5.5-L-exact",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The plateau grows linearly in L on the exact-softmax gradient flow too (Monte Carlo loss, not eq. 10)",
        key="exponents_exact.L",
        expected="exponent 1",
        test=Near(1.0, atol=0.15),
    ),
    Claim(
        id="wang-thm5.5-alpha-exact",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The plateau grows like (1 + α*)² on the exact-softmax gradient flow too",
        key="exponents_exact.one_plus_alpha",
        expected="exponent 2",
        test=Near(2.0, atol=0.2),
    ),
    Claim(
        id="wang-thm5.5-wstar-exact",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The plateau falls like 1/w*² on the exact-softmax gradient flow too",
        key="exponents_exact.w_star",
        expected="exponent −2",
        test=Near(-2.0, atol=0.2),
        if_failed="a finding about the paper: on the exact softmax the local w* exponent over w* ∈ [0.25, 0.49] is "
        "≈ −1.8 (quick: −1.81); the Θ hides w*-dependent factors of the softmax normaliser that eq. 10 drops",
    ),
    Claim(
        id="wang-thm5.5-L-sgd",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III; App. B.1 (online SGD, lr 0.1, B = 1000)",
        statement="The plateau grows linearly in L under online SGD too (T_III at grid.sgd_L = 20, 40, σ_init = 0.01)",
        key="exponents_sgd.L",
        expected="exponent 1",
        test=Near(1.0, atol=0.15),
        if_failed="a limit of this machine: the exponent needs SGD at two L (default grid.sgd_L = 20, 40); the quick "
        "preset trains L = 20 only",
    ),
    Claim(
        id="wang-thm5.5-phase1-TI",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I",
        statement="Phase I takes T_I = O(1): the time at which L_G4 falls to 1% of its start does not grow with L "
        "(closed-form gradient flow, eqs. 7 and 10, at L in grid.L_values)",
        key="phases.T_I_exponent",
        expected="T_I = O(1) in L: exponent 0",
        test=Near(0.0, atol=0.05),
    ),
    Claim(
        id="wang-thm5.5-phase1-ih",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I",
        statement="At T_I the induction-head loss is still ≥ 99% of its start, L_IH2(T_I) ≥ 0.99 L_IH2(0) (the theorem assumes "
        "L ≫ 1; largest ratio over the L grid)",
        key="phases.ih_ratio_T_I_max",
        expected="L_IH2(T_I)/L_IH2(0) ≥ 0.99",
        test=Between(lo=0.99),
        if_failed="a finding about the paper: the bound holds only for L ≫ T_I ≈ 205, since w_V2 relaxes on the "
        "time scale L − 2 and its fit removes up to 93% of L_IH2(0) while w_KQ is still σ_init, so the ratio is "
        "0.07 at L = 40 and reaches 0.99 only near L ≈ 4·10⁴ (phases.ih_ratio_T_I_vs_lazy)",
    ),
    Claim(
        id="wang-thm5.5-phase1-ih-lazy",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I; eq. (10)",
        statement="What holds instead of the 99% bound at finite L: L_IH2(T_I)/L_IH2(0) follows the fit of w_V2 alone with "
        "w_KQ frozen at σ_init (theory.mixed.ih_ratio_lazy), rising toward 1 as L grows (largest relative gap "
        "over the L grid)",
        key="phases.ih_ratio_T_I_vs_lazy",
        expected="ratio = 1 − (B²/AC)(1 − e^{−2A·T_I/(L−2)}) (our derivation from eq. 10), → 1 as L → ∞",
        test=Between(hi=0.02),
        control="sigma-large",
    ),
    Claim(
        id="wang-thm5.5-To",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The observation time T_o (first time w_V2 exceeds h* = 1/(1+α*)) is Θ(L): its exponent in L",
        key="phases.T_o_exponent",
        expected="T_o = Θ(L): exponent 1",
        test=Near(1.0, atol=0.1),
    ),
    Claim(
        id="wang-thm5.5-wkq-rate",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="w_KQ grows exponentially at a rate Θ(w*²/((1+α*)²L)): the fitted rate of log w_KQ (while 2σ_init < w_KQ < "
        "w*/4) times (1+α*)²L/w*² is the same at every L (max/min over the L grid)",
        key="phases.wkq_rate_spread",
        expected="w_KQ(t) = σ_init exp(Θ(w*²t/((1+α*)²L))): rate × (1+α*)²L/w*² constant in L",
        test=Between(1.0, 1.2),
    ),
    Claim(
        id="wang-thm5.5-phase4-g4",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase IV",
        statement="After T_III the 4-gram loss falls like 1/t: the log–log slope of L_G4 against t (mean over the L grid)",
        key="phases.g4_loglog_slope",
        expected="L_G4 = O(1/t): slope −1",
        test=Near(-1.0, atol=0.05),
    ),
    Claim(
        id="wang-thm5.5-phase4-ih",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase IV",
        statement="After T_III the induction loss decays exponentially at a rate Ω(w*²/((1+α*)²L)): the rate of log L_IH2 times "
        "(1+α*)²L/w*² is the same at every L (max/min over the L grid)",
        key="phases.ih_rate_spread",
        expected="L_IH2 = O(exp(−Ω(w*²t/((1+α*)²L)))): rate × (1+α*)²L/w*² constant in L",
        test=Between(1.0, 1.2),
    ),
)


def _points(cfg: Config, full_grid: bool) -> list[dict]:
    base, g = base_point(cfg), cfg.grid
    values = dict(zip(FACTORS, (g.L_values, g.alpha_values, g.w_star_values, g.sigma_values)))
    if full_grid:
        return [dict(zip(FACTORS, combo)) for combo in itertools.product(*values.values())]
    pts = {tuple(base.values()): base}
    for factor, vals in values.items():
        for v in vals:
            p = {**base, factor: v}
            pts[tuple(p.values())] = p
    return list(pts.values())


def run(cfg: Config, ctx: RunContext) -> Results:
    rows = []
    for point in tqdm(_points(cfg, cfg.grid.full_grid), desc="gradient flow", disable=not ctx.progress):
        rows.append(_flow_row(cfg, point, "gf"))
    exact = []
    if cfg.grid.exact_mc_samples:
        for point in tqdm(_points(cfg, False), desc="exact-softmax flow", disable=not ctx.progress):
            exact.append(_flow_row(cfg, point, "exact"))
    base = base_point(cfg)
    for L in cfg.grid.sgd_L:
        rows += sgd_rows(L, base, cfg.grid.sgd_sigma_init, cfg.grid.horizon, cfg.train, cfg.seeds[0], ctx)
    table, exact_table = pd.DataFrame(rows), pd.DataFrame(exact)
    phases = pd.DataFrame([phase_row(L, base, cfg.grid.horizon) for L in cfg.grid.L_values])
    summary = {**fits(base, pd.concat([table, exact_table], ignore_index=True)), "phases": phase_fits(phases)}
    tables = {"results": table, "phases": phases} | ({"exact": exact_table} if exact else {})
    return Results(tables, summary)


def _flow_row(cfg: Config, point: dict, method: str) -> dict:
    """Phase times of one gradient flow: "gf" on the closed forms (eqs. 7, 10), "exact" on the exact-softmax loss
    (Monte Carlo over grid.exact_mc_samples sequences, seed ``seeds[0]``)."""
    pred = predicted_plateau(point["L"], point["alpha_star"], point["w_star"], point["sigma_init"])
    kw: dict[str, Any] = (
        {"loss": "exact", "mc_samples": cfg.grid.exact_mc_samples, "mc_seed": cfg.seeds[0]} if method == "exact" else {}
    )
    res = solve_flow(FlowProblem(**point, t_end=cfg.grid.horizon * pred, **kw), n_points=40)
    return {**point, "method": method, "predicted": pred, **{k: getattr(res.phases, k) for k in TIMES}}


def plot(results: Results, out_dir: Path) -> list[Path]:
    """Four panels (T_III and T_50 against each factor, GF lines, SGD markers) and measured vs predicted."""
    table, s = results.tables["results"], results.summary
    base = s["base"]
    fig, axes = plots.subplots(3, 2, width=3.9, height=3.2)
    for ax, factor in zip(axes, FACTORS):
        sub = one_factor(table, base, factor)
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


EXPERIMENT = Experiment(
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
    claims=CLAIMS,
    controls=CONTROLS,
)
