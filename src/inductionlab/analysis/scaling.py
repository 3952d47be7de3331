"""Fits of scaling laws, such as the plateau's of Theorem 5.5: T ∝ (1+α*)² L log(1/σ_init) / w*²
(docs/conventions.md#wang-5-5; the laws a sweep report checks: :mod:`inductionlab.theory.laws`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def power_law_exponent(x, y) -> float:
    """Least-squares slope of log y against log x (NaN with fewer than two finite points)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def linear_fit(x, y) -> tuple[float, float, float]:
    """(slope, intercept, R²) of y against x by least squares (NaNs dropped)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2:
        return float("nan"), float("nan"), float("nan")
    slope, intercept = np.polyfit(x[ok], y[ok], 1)
    resid = y[ok] - (slope * x[ok] + intercept)
    total = ((y[ok] - y[ok].mean()) ** 2).sum()
    return float(slope), float(intercept), float(1 - (resid**2).sum() / total) if total > 0 else float("nan")


@dataclass(frozen=True)
class PowerFit:
    """``y ≈ exp(intercepts[g]) · x^exponent`` in group g; ``stderr`` is the exponent's standard error (NaN with no
    residual degree of freedom); ``n`` the points used."""

    exponent: float
    stderr: float
    intercepts: dict
    n: int


def power_law_fit(x, y, groups=None) -> PowerFit:
    """Least squares of log y = b log x + a_g: one exponent b shared by all points, one intercept a_g per group
    (``groups``: a hashable label per point, e.g. a tuple of the other grid keys' values; None: one group).  Points with x or y not
    finite and positive are dropped.  s.e.(b) = √(RSS / (n − groups − 1) / Σ (log x − mean_g log x)²)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    labels = [0] * len(x) if groups is None else list(groups)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    lx, ly, labels = np.log(x[ok]), np.log(y[ok]), [v for v, keep in zip(labels, ok) if keep]
    keys = list(dict.fromkeys(labels))
    index = np.array([keys.index(v) for v in labels], dtype=int)
    counts = np.bincount(index, minlength=len(keys)) if len(keys) else np.zeros(0)
    dx = lx - (np.bincount(index, lx, len(keys)) / np.maximum(counts, 1))[index]
    dy = ly - (np.bincount(index, ly, len(keys)) / np.maximum(counts, 1))[index]
    sxx = float((dx * dx).sum())
    if sxx <= 0:  # fewer than two distinct x in every group
        return PowerFit(float("nan"), float("nan"), {}, int(ok.sum()))
    slope = float((dx * dy).sum() / sxx)
    dof = len(lx) - len(keys) - 1
    rss = float(((dy - slope * dx) ** 2).sum())
    stderr = float(np.sqrt(rss / dof / sxx)) if dof > 0 else float("nan")
    intercepts = {k: float(np.mean(ly[index == i] - slope * lx[index == i])) for i, k in enumerate(keys)}
    return PowerFit(slope, stderr, intercepts, len(lx))


def law_constant(x, y, exponent: float) -> float:
    """log C of y ≈ C · x^exponent with the exponent given (a theory's): mean of log y − exponent · log x over the
    points with x and y finite and positive (NaN without any)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return float(np.mean(np.log(y[ok]) - exponent * np.log(x[ok]))) if ok.any() else float("nan")
