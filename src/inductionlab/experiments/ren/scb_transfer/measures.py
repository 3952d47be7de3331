"""What ``scb-transfer`` summarises and draws from its tables: the median scaling slopes, the crossing of the
transfer and scratch costs, and the figure (Ren et al. §4; docs/conventions.md#ren-11-1), the companion of its package."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from matplotlib.ticker import NullFormatter

from inductionlab import plots
from inductionlab.analysis.scaling import power_law_exponent
from inductionlab.runs import Results


def first_hit(metrics: pd.DataFrame, target: float) -> list[float]:
    """Per run: the first logged sample count with ‖Ā − Q‖_μ ≤ target (NaN if never; docs/conventions.md#ren-10)."""
    hits = metrics[metrics.dist_A_norm <= target].groupby("run").samples.min()
    return [float(hits.get(r, np.nan)) for r in sorted(metrics.run.unique())]


def batches(c: float, T: int, n: int) -> list[int]:
    """The one-step batch round(c·ln T) for each of ``n`` instances, at least 1 (Lemma H.2's poly(N, Q)·log T at
    fixed N, Q; docs/conventions.md#ren-8)."""
    return [max(1, round(c * math.log(T)))] * n


def budgets(scratch: float, after: float, batch: list[int] | None) -> tuple[dict[str, float], dict[str, float]]:
    """Each arm's budget at the largest T — what a censored median is at least — in all and after its start:
    scratch's steps × B; transfer's median one-step ``batch`` (none where nothing was transferred, ``batch`` None)
    and its steps × B₂ (``after``)."""
    start = float(np.median(batch)) if batch else 0.0
    return {"scratch": scratch, "transfer": start + after}, {"scratch": scratch, "transfer": after}


def at_budget(metrics: pd.DataFrame, budgets: list[int]) -> list[float]:
    """Per run: ‖Ā − Q‖_μ at the last evaluation within its budget of samples (the first evaluation if none is)."""
    out = []
    for r, g in metrics.groupby("run"):
        within = g[g.samples <= budgets[int(r)]]
        out.append(float((within if len(within) else g.iloc[:1]).dist_A_norm.iloc[-1]))
    return out


def after_start(metrics: pd.DataFrame, target: float) -> list[float]:
    """Per run: the samples from its ``start`` (the one-step batch, or 0 where it starts from scratch) to the first
    logged ‖Ā − Q‖_μ ≤ target (NaN if never)."""
    start = metrics.groupby("run").start.first()
    return [h - float(start[r]) for r, h in zip(sorted(metrics.run.unique()), first_hit(metrics, target))]


def slope_ratio(slope: dict[str, float], log_T_slope: float) -> float | None:
    """slope(transfer) / slope(scratch) of the median costs against T: how much more slowly transfer's cost grows
    (Thm 4.1: poly(N, Q)·log T against scratch's poly(T)).  None where scratch's cost grows no faster than log T on
    the grid (``log_T_slope``, ln T's own slope there): no poly(T) growth for the step to remove; or without both."""
    if "transfer" not in slope or slope.get("scratch", -math.inf) <= log_T_slope:
        return None
    return slope["transfer"] / slope["scratch"]


def support_errors(A: torch.Tensor, Q: torch.Tensor, theta: torch.Tensor) -> tuple[list[int], list[int]]:
    """Per run: the false positives (entries kept by the rounding A ≥ θ where Q is 0) and the misses (support
    entries of Q below θ) — Lemma H.2's rounding recovers the support exactly when both are 0."""
    kept, support = A >= theta, Q > 0
    return (kept & ~support).flatten(1).sum(1).tolist(), (~kept & support).flatten(1).sum(1).tolist()


def per_method(at: dict, cost, n: int) -> dict[str, dict]:
    """{method: {T: cost(metrics), one value per instance}} from each T's metrics per method (``n`` NaN where the
    method diverged at T)."""
    return {
        k: {T: [np.nan] * n if a["metrics"][k] is None else cost(a["metrics"][k]) for T, a in at.items()}
        for k in ("scratch", "transfer")
    }


def landings(steps: dict, target: float) -> dict:
    """Per T: the one-step batches and, per instance, the landing ‖Ā₁ − Q‖_μ, false positives and misses of Lemma
    H.2's step (empty where nothing was transferred; at γ = 0 the landing is scratch's after the same budget);
    the median landing and the share of instances with exact support per T; the largest median over T and the
    worst landing over every T and instance."""
    every = [x for s in steps.values() for x in s.get("landed", [])]
    medians = {T: float(np.median(s["landed"])) for T, s in steps.items() if s.get("landed")}
    return {
        "one_step_batch": {T: s.get("batch", []) for T, s in steps.items()},
        "landed_dist_A_norm": {T: s.get("landed", []) for T, s in steps.items()},
        "landed_false_positives": {T: s.get("false_positives", []) for T, s in steps.items()},
        "landed_misses": {T: s.get("misses", []) for T, s in steps.items()},
        "landed_median": medians,
        "landed_within_target": {
            T: float(np.mean(np.asarray(s["landed"]) <= target)) for T, s in steps.items() if s.get("landed")
        },
        "landed_exact_share": {
            T: float(np.mean([f + m == 0 for f, m in zip(s["false_positives"], s["misses"])]))
            for T, s in steps.items()
            if s.get("false_positives")
        },
        "landed_median_worst_T": max(medians.values()) if medians else None,
        "landed_worst_over_T": max(every) if every else None,
    }


def slopes(median: dict[str, dict], budget: dict[str, float]) -> dict[str, float]:
    """Per method: the log-log slope of the median cost against T, a censored median (None) entering at the
    method's ``budget`` (a lower bound of its cost); left out with fewer than two points."""
    out = {}
    for method, d in median.items():
        slope = power_law_exponent(list(d), [budget[method] if n is None else n for n in d.values()])
        if not np.isnan(slope):
            out[method] = slope
    return out


def median_cost(values: list[float]) -> float | None:
    """The median cost over instances, a run that never reached the target (NaN) counting as costlier than every
    one that did (a censored median); None when half or more never reached it."""
    costs = np.asarray(values, dtype=float)
    median = float(np.median(np.where(np.isnan(costs), np.inf, costs)))
    return median if np.isfinite(median) else None


def crossing(median: dict[str, dict]) -> dict:
    """``crossing_T``: where log-log fits of the scratch and transfer median costs meet (None with
    ``crossing_reason`` where there are fewer than two points each, or the fits are parallel)."""
    fits = {}
    for method, d in median.items():
        pts = np.log(np.asarray([(float(T), n) for T, n in d.items() if n is not None], float).reshape(-1, 2))
        if len(pts) < 2:
            return {"crossing_T": None, "crossing_reason": f"{method} reached the target at fewer than two T"}
        fits[method] = np.polyfit(pts[:, 0], pts[:, 1], 1)
    (b_s, a_s), (b_t, a_t) = fits["scratch"], fits["transfer"]
    if abs(b_s - b_t) < 1e-9:
        return {"crossing_T": None, "crossing_reason": "the two fitted lines are parallel"}
    T_cross = float(np.exp((a_t - a_s) / (b_s - b_t)))
    cheaper = [
        T
        for T in median["scratch"]
        if None not in (median["scratch"][T], median["transfer"][T]) and median["transfer"][T] < median["scratch"][T]
    ]
    reason = ""
    if b_s < b_t and T_cross < min(float(T) for T in median["scratch"]):
        reason = "the fits meet below the T grid and transfer's fitted cost grows faster: no crossing ahead"
    return {"crossing_T": T_cross, "crossing_reason": reason, "transfer_cheaper_at_T": cheaper}


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics, s = results.tables["metrics"], results.summary
    fig, (ax, ax2, ax3) = plots.subplots(3, width=4.6, height=3.6)
    colors = {"scratch": "#d95f02", "transfer": "#1b9e77"}
    for method, per_T in s["samples_to_target_per_instance"].items():
        Ts = sorted(per_T, key=float)
        for T in Ts:
            ax.scatter(
                [float(T)] * len(per_T[T]), [plots.num(v) for v in per_T[T]], color=colors[method], alpha=0.4, s=12
            )
        med = [plots.num(s["samples_to_target"][method][T]) for T in Ts]
        slope = s["log_log_slope"].get(method)
        ax.plot(
            [float(T) for T in Ts],
            med,
            "o-",
            color=colors[method],
            label=f"{method} (median; slope {slope:.2f})" if slope is not None else method,
        )
        to_eps2, slope2 = s.get("samples_to_eps2", {}).get(method, {}), s.get("eps2_log_log_slope", {}).get(method)
        ax.plot(
            [float(T) for T in Ts if T in to_eps2],
            [plots.num(to_eps2[T]) for T in Ts if T in to_eps2],
            "s--",
            color=colors[method],
            label=f"{method} to ε₂{' after its step' if method == 'transfer' else ''} (slope {plots.num(slope2):.2f})",
        )
    if any(v is not None for d in s["samples_to_target"].values() for v in d.values()):
        ax.set_xscale("log"), ax.set_yscale("log")
        T_all = sorted({float(T) for d in s["samples_to_target"].values() for T in d})
        ax.set_xticks(T_all, [f"{T:g}" for T in T_all])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("context length T"), ax.set_ylabel("samples to target (solid), to ε₂ (dashed)")
    ax.set_title("samples to target against T", fontsize=9)
    plots.figure_legend(fig, ax.get_legend_handles_labels()[0], ncols=4)
    T_max = metrics["T"].max()
    for (method, run), g in metrics[metrics["T"] == T_max].groupby(["method", "run"]):
        ax2.plot(g.samples, g.dist_A_norm, color=colors[method], alpha=0.7, label=method if run == 0 else None)
    ax2.set_yscale("log"), ax2.set_xlabel("samples"), ax2.set_ylabel("‖Ā − Q‖_μ (normalised)")
    ax2.set_title(f"T = {T_max}", fontsize=9)
    ax2.legend(fontsize=8)
    plot_kappa(ax3, s)
    return [plots.save(fig, Path(out_dir) / "scb_transfer.png")]


def plot_kappa(ax, s: dict) -> None:
    """Transfer cost (median samples, one-step batch included) against the pretraining task's κ."""
    sweep = s.get("kappa_sweep", {})
    kappa = [v["kappa"] for v in sweep.values()]
    ax.plot(kappa, [plots.num(v["samples"]) for v in sweep.values()], "o-", color="#1b9e77", label="transfer, total")
    ax.plot(kappa, [v["batch"] for v in sweep.values()], "s--", color="#7570b3", label="its one-step batch")
    for mix, v in sweep.items():
        ax.annotate(f"ρ_mix {mix}", (v["kappa"], v["batch"]), fontsize=7, textcoords="offset points", xytext=(3, 3))
    ax.margins(x=0.15)  # room for the labels of the outermost points
    ax.set_yscale("log"), ax.set_xlabel("κ = ⟨P̄ − μ1ᵀ, P − μ1ᵀ⟩_μ (median over instances)")
    ax.set_ylabel("samples until ‖Ā − Q‖_μ ≤ target")
    crossing = s.get("crossing_T")
    where = (
        "fits do not cross ahead" if s.get("crossing_reason") or not crossing else f"fits cross at T ≈ {crossing:.3g}"
    )
    ax.set_title(f"transfer cost against κ (T = {s.get('kappa_T', '')}); {where}", fontsize=8)
    ax.legend(fontsize=8)
