"""Fits of scaling laws for the plateau (Theorem 5.5): T ∝ (1+α*)² L log(1/σ_init) / w*²."""

from __future__ import annotations

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
