"""The stages of a curve's change (docs/monitor.md#phase-detection): the escapes between its consecutive plateaus,
each of which :mod:`inductionlab.monitor.phase` fits by a flat–linear–flat ramp
(:func:`inductionlab.analysis.phases.ramp_fit`).  The plateaus are cut as
:func:`inductionlab.analysis.phases.escape_window` cuts them (≥ 3 samples and ≥ ``PLATEAU_SHARE`` of them, each
within ``tol`` of its first value), so the largest escape is the window that function returns, and a curve with one
escape has one stage: the one-ramp change point of the toy's L_IH2 (Theorem 5.5's T_50) is unchanged."""

from __future__ import annotations

import math

import numpy as np

from inductionlab.analysis.phases import PLATEAU_SHARE


def plateaus(z: np.ndarray, tol: float) -> list[tuple[int, int]]:
    """Left to right, the first and last index of each maximal run of ≥ max(3, ⌈``PLATEAU_SHARE`` · n⌉) samples of
    ``z`` that stay within ``tol`` of the run's first one (escape_window's plateaus, not pauses within a rise)."""
    z = np.asarray(z, dtype=float)
    n, out, i = len(z), [], 0
    least = max(3, math.ceil(PLATEAU_SHARE * n))
    while i < n:
        j = i
        while j + 1 < n and abs(z[j + 1] - z[i]) <= tol:
            j += 1
        if j - i + 1 >= least:
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def escapes(z: np.ndarray, tol: float, least: float) -> list[tuple[int, int, float]]:
    """Each escape of ``z`` (finite, oriented to rise at the change) from a plateau by more than ``least``, in order:
    ``(lo, hi, rise)``, the samples lo to hi (hi excluded) from the start of the plateau to the end of the next one (to
    the curve's end, for the last), and the rise from the plateau's first value to the next one's (to the maximum
    after it, for the last) — escape_window's candidates; the largest is its window."""
    z = np.asarray(z, dtype=float)
    n, flats, out = len(z), plateaus(z, tol), []
    for k, (i, j) in enumerate(flats):
        nxt = flats[k + 1] if k + 1 < len(flats) else None
        rise = (z[nxt[0]] if nxt is not None else (z[j + 1 :].max() if j + 1 < n else -math.inf)) - z[i]
        if rise > least:
            out.append((i, nxt[1] + 1 if nxt is not None else n, float(rise)))
    return out
