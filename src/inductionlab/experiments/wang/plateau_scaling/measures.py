"""The measurements and fits of ``plateau-scaling``, the companion of its package: the gradient-flow scan, Theorem 5.5's phases at one L on the closed-form gradient flow, Phase
I's L_IH2(T_I)/L_IH2(0) up to large L, online SGD's phase times on the run axis, the exponents fitted one factor at
a time around the base point, and the figure."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from inductionlab import plots
from inductionlab.analysis.phases import phase_times_by_run
from inductionlab.analysis.scaling import linear_fit, power_law_exponent
from inductionlab.experiments.wang.plateau_scaling.learners import Learner, Preconditioned, share_ratio, solve
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.theory.mixed import ih_ratio_lazy, predicted_plateau
from inductionlab.train.flow import FlowProblem, solve_flow
from inductionlab.train.toy import ToyTrainConfig, train_from

FACTORS = ("L", "alpha_star", "w_star", "sigma_init")
TIMES = ("T_I", "T_o", "T_II", "T_III", "T_50")
EPS_G = 0.01  # T_I's tolerance, L_G4(T_I) = 0.01·L_G4(0) (Theorem 5.5, Phase I; the event of train.flow)


def phase_row(L: int, base: dict[str, float], horizon: float, learner: Learner = "gradient-flow") -> dict:
    """Theorem 5.5's phases I, III, IV at one L (base α*, w*, σ_init), closed-form flow (eqs. 7, 10) of ``learner``:
    T_I, T_o; L_IH2(T_I)/L_IH2(0) (solved to T_I exactly) and its lazy closed form; the growth rate of log w_KQ
    while 2σ_init < w_KQ < w*/4; after T_III the log–log slope of L_G4 and the rate of log L_IH2 (down to 1e-8 of
    L_IH2(T_o))."""
    a, ws, s = base["alpha_star"], base["w_star"], base["sigma_init"]
    prob = FlowProblem(L, a, ws, s, t_end=horizon * predicted_plateau(L, a, ws, s))
    res = solve(prob, learner, n_points=400)
    c, ph = res.curve, res.phases
    ratio = ih_ratio_at(prob, ph.T_I, learner)
    grow = (c.w_KQ > 2 * s) & (c.w_KQ < ws / 4) & (c.t < ph.T_III)
    ref = float(np.interp(ph.T_o, c.t, c.loss_IH2))
    late = c[c.t > ph.T_III]
    ih = late[late.loss_IH2 > 1e-8 * ref]
    scale = (1 + a) ** 2 * L / ws**2  # Theorem 5.5's time scale of w_KQ and of L_IH2 in phase IV
    return {
        "L": L,
        "T_I": ph.T_I,
        "T_o": ph.T_o,
        "T_III": ph.T_III,
        "ih_ratio_T_I": ratio,
        "ih_ratio_T_I_lazy": ih_ratio_lazy(ph.T_I, L, a, ws, s),
        "wkq_rate_x_scale": _rate(c.t[grow], np.log(c.w_KQ[grow])) * scale,
        "g4_loglog_slope": power_law_exponent(late.t, late.loss_G4) if len(late) > 2 else math.nan,
        "ih_rate_x_scale": _rate(ih.t, np.log(ih.loss_IH2)) * scale,
    }


def ih_ratio_at(prob: FlowProblem, t_i: float, learner: Learner = "gradient-flow") -> float:
    """L_IH2(T_I)/L_IH2(0) on the flow ``prob`` of ``learner``, solved to T_I exactly (NaN where T_I is not a
    positive time)."""
    if not (math.isfinite(t_i) and t_i > 0):
        return math.nan
    at_t_i = solve(replace(prob, t_end=t_i), learner, n_points=4).curve.loss_IH2
    return float(at_t_i.iloc[-1] / at_t_i.iloc[0])


def phase1_fits(
    L_values: tuple[int, ...], base: dict[str, float], t_end: float, slope_from: int, learner: Learner = "gradient-flow"
) -> dict:
    """Theorem 5.5's Phase I (dynamics paper Thm 4) at each L of grid.phase1_L, closed-form flow (eqs. 7, 10) only
    up to T_I (the flow to ``t_end`` locates it): T_I, L_IH2(T_I)/L_IH2(0) (also keyed by L), the log–log slope of
    1 − ratio against L over L ≥ ``slope_from`` (NaN unless every such 1 − ratio is a positive number), and the c
    of "the bound needs L ≈ c/(ε_G·ε_IH)": (L − 2)(1 − ratio)·ε_G at the largest L, ε_G = :data:`EPS_G`
    (docs/conventions.md#wang-5-5)."""
    t_i, ratio = [], []
    for L in L_values:
        prob = FlowProblem(L, base["alpha_star"], base["w_star"], base["sigma_init"], t_end=t_end)
        t_i.append(float(solve(prob, learner, n_points=4).phases.T_I))
        ratio.append(ih_ratio_at(prob, t_i[-1], learner))
    gap = np.array([(L, 1 - r) for L, r in zip(L_values, ratio) if L >= slope_from], dtype=float).reshape(-1, 2)
    defined = len(gap) >= 2 and bool(np.all(np.isfinite(gap[:, 1]) & (gap[:, 1] > 0)))
    L_top, gap_top = max(zip(L_values, (1 - r for r in ratio)))
    return {
        "L": [int(L) for L in L_values],
        "T_I": t_i,
        "ih_ratio": ratio,
        "ih_ratio_at_L": {str(L): r for L, r in zip(L_values, ratio)},
        "one_minus_ratio_slope": power_law_exponent(gap[:, 0], gap[:, 1]) if defined else math.nan,
        "L_constant": (L_top - 2) * gap_top * EPS_G,
    }


def scan_points(base: dict[str, float], values: dict[str, tuple], full_grid: bool) -> list[dict]:
    """The gradient-flow points of Theorem 5.5's scaling checks (docs/conventions.md#wang-5-5): each factor's
    ``values`` one at a time around ``base``, or (``full_grid``) their product."""
    if full_grid:
        return [dict(zip(FACTORS, combo)) for combo in itertools.product(*(values[f] for f in FACTORS))]
    pts = {tuple(base.values()): base}
    for factor in FACTORS:
        for v in values[factor]:
            p = {**base, factor: v}
            pts[tuple(p.values())] = p
    return list(pts.values())


def flow_row(
    point: dict, method: str, horizon: float, mc_samples: int, seed: int, learner: Learner = "gradient-flow"
) -> dict:
    """Phase times of one flow of ``learner`` to ``horizon`` × the predicted plateau: "gf" on the closed forms (eqs.
    7, 10), "exact" on the exact-softmax loss (Monte Carlo over ``mc_samples`` sequences, seed ``seed``)."""
    pred = predicted_plateau(point["L"], point["alpha_star"], point["w_star"], point["sigma_init"])
    kw: dict[str, Any] = {"loss": "exact", "mc_samples": mc_samples, "mc_seed": seed} if method == "exact" else {}
    res = solve(FlowProblem(**point, t_end=horizon * pred, **kw), learner, n_points=40)
    return {**point, "method": method, "predicted": pred, **{k: getattr(res.phases, k) for k in TIMES}}


def _rate(t: pd.Series, log_y: pd.Series) -> float:
    """Least-squares slope of log y in t (NaN with fewer than three points)."""
    return float(np.polyfit(t, log_y, 1)[0]) if len(t) > 2 else math.nan


def phase_fits(phases: pd.DataFrame) -> dict:
    """Scalars for the claims on phases I, III, IV against L (spread = max/min over the L grid; the gap to the lazy
    ratio is NaN where one L lacks it)."""
    spread = lambda col: float(phases[col].abs().max() / phases[col].abs().min())  # noqa: E731
    return {
        "L": [int(v) for v in phases.L],
        "ih_ratio_T_I": [float(v) for v in phases.ih_ratio_T_I],
        "ih_ratio_T_I_vs_lazy": float((phases.ih_ratio_T_I / phases.ih_ratio_T_I_lazy - 1).abs().max(skipna=False)),
        "T_I_exponent": power_law_exponent(phases.L, phases.T_I),
        "T_o_exponent": power_law_exponent(phases.L, phases.T_o),
        "T_o_over_L": [float(v) for v in phases.T_o / phases.L],
        "wkq_rate_x_scale": [float(v) for v in phases.wkq_rate_x_scale],
        "wkq_rate_spread": spread("wkq_rate_x_scale"),
        "g4_loglog_slope": float(phases.g4_loglog_slope.mean()),
        "ih_rate_x_scale": [float(v) for v in phases.ih_rate_x_scale],
        "ih_rate_spread": spread("ih_rate_x_scale"),
    }


def sgd_rows(
    L: int,
    base: dict[str, float],
    sigma_values: tuple[float, ...],
    horizon: float,
    train: ToyTrainConfig,
    seed: int,
    ctx: RunContext,
    learner: Learner = "gradient-flow",
) -> list[dict]:
    """SGD at (L, base α*, w*) for every σ in ``sigma_values`` (grid.sgd_sigma_init) — one batched job on the run
    axis, data seeds ``seed`` + i, trained for twice the gradient-flow T_III (the exact-softmax emergence comes
    ~1.3× later than eq. 10's); each update preconditioned by ``learner``'s P(θ) (:class:`Preconditioned`)."""
    sigmas = list(sigma_values)
    S = len(sigmas)
    a, ws = base["alpha_star"], base["w_star"]
    t_gf = max(
        solve_flow(
            FlowProblem(L, a, ws, s, t_end=horizon * predicted_plateau(L, a, ws, s)),
            n_points=4,
        ).phases.T_III
        for s in sigmas
    )
    steps = int(math.ceil(2 * t_gf / train.lr))
    train_cfg = replace(train, stage2_steps=steps)
    target = MixedTarget.per_run([a] * S, [ws] * S, L)
    hooks = () if learner == "gradient-flow" else (Preconditioned(learner, [share_ratio(L, a, ws, s) for s in sigmas]),)
    job = ctx.child(f"sgd_L{L}", hooks=(*ctx.hooks, *hooks))
    _, layer2 = train_from(train_cfg, target, torch.tensor(sigmas), [seed + i for i in range(S)], job)
    per_run = phase_times_by_run(layer2, a, ws)
    rows = []
    for times in per_run:
        s = sigmas[times["run"]]
        rows.append(
            {
                "L": L,
                "alpha_star": a,
                "w_star": ws,
                "sigma_init": s,
                "method": "sgd",
                "predicted": predicted_plateau(L, a, ws, s),
                **{k: times[k] for k in TIMES},
            }
        )
    return rows


def one_factor(table: pd.DataFrame, base: dict[str, float], factor: str, method: str = "gf") -> pd.DataFrame:
    """The rows of ``method`` where every factor but ``factor`` is at the base point, sorted by ``factor``."""
    others = [f for f in FACTORS if f != factor]
    gf = table[table.method == method]
    mask = np.ones(len(gf), dtype=bool)
    for f in others:
        mask &= np.isclose(gf[f].to_numpy(dtype=float), float(base[f]))
    return gf[mask].sort_values(factor)


def _exponents(table: pd.DataFrame, base: dict[str, float], time: str, method: str) -> dict:
    """Exponents of ``time`` in L, 1+α*, w* and the R² of its linear fit in log(1/σ_init), one factor at a time."""
    e = {}
    for factor, key, transform in (
        ("L", "L", lambda v: v),
        ("alpha_star", "one_plus_alpha", lambda v: 1 + v),
        ("w_star", "w_star", lambda v: v),
    ):
        sub = one_factor(table, base, factor, method)
        e[key] = power_law_exponent(transform(sub[factor].to_numpy(dtype=float)), sub[time])
    sub = one_factor(table, base, "sigma_init", method)
    e["log_inv_sigma_r2"] = linear_fit(np.log(1 / sub.sigma_init.to_numpy(dtype=float)), sub[time])[2]
    return e


def fits(base: dict[str, float], table: pd.DataFrame) -> dict:
    """The summary's fits around the base point: the exponents of T_III (gradient flow, exact-softmax flow, SGD in
    L) and of T_50, the R² in log(1/σ_init), and the range of T_III over its prediction."""
    exps = {time: _exponents(table, base, time, "gf") for time in ("T_III", "T_50")}
    exact = _exponents(table, base, "T_III", "exact") if (table.method == "exact").any() else {}
    gf = table[table.method == "gf"]
    ratio = (gf.T_III / gf.predicted).to_numpy(dtype=float)
    sgd = table[table.method == "sgd"]
    sgd_base = sgd[np.isclose(sgd.sigma_init.to_numpy(dtype=float), float(base["sigma_init"]))].sort_values("L")
    return {
        "exponents_sgd": {"L": power_law_exponent(sgd_base.L.to_numpy(dtype=float), sgd_base.T_III)},
        "exponents": {k: exps["T_III"][k] for k in ("L", "one_plus_alpha", "w_star")},
        "log_inv_sigma_r2": exps["T_III"]["log_inv_sigma_r2"],
        "exponents_T50": exps["T_50"],
        "exponents_exact": exact,
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
