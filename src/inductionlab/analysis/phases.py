"""The four phases of Theorem 5.5 (Wang et al., dynamics paper; docs/conventions.md#wang-5-5), for any curve — gradient
flow or SGD — sampled on a time axis t.

* T_I:   first t with L_G4 ≤ 1% of L_G4(0) (partial learning of the 4-gram).
* T_o:   observation time, first t with h = w_V2 > h* = 1/(1+α*).
* T_II:  first t > T_o with L_IH2 ≤ 99% of L_IH2(T_o) (end of the plateau).
* T_III: first t > T_o with L_IH2 ≤ 1% of L_IH2(T_o) (end of the emergence).
* T_50:  first t > T_o with L_IH2 ≤ 50% of L_IH2(T_o): a robust emergence time (ours).
* T_w001, T_whalf: first t with w_KQ > 0.01 w* and > w*/2 (the proof's T^w_{0.01} and T^w_{1/2}).

Crossings are located by linear interpolation between samples; a time never reached is NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from inductionlab.theory.mixed import PHASE_NAMES, PhaseTimes

__all__ = [
    "NO_RAMP",
    "PHASE_NAMES",
    "PhaseTimes",
    "Ramp",
    "first_crossing",
    "phase_times",
    "plateau",
    "ramp_fit",
    "value_at",
]


def first_crossing(t: np.ndarray, y: np.ndarray, level: float, direction: str, start: float = -math.inf) -> float:
    """First time t ≥ start at which y goes below (direction="down") or above ("up") ``level``.

    Linear interpolation between the bracketing samples; +inf if it never happens within the samples (later than
    every one: docs/conventions.md#never), NaN if ``level`` is not a finite number (nothing to cross).
    """
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    sign = 1.0 if direction == "up" else -1.0
    hit = np.flatnonzero((sign * (y - level) >= 0) & (t >= start))
    if not math.isfinite(level):
        return math.nan
    if hit.size == 0:
        return math.inf
    i = hit[0]
    if i == 0 or t[i - 1] < start:
        return float(t[i])
    y0, y1 = y[i - 1], y[i]
    frac = 0.0 if y1 == y0 else (level - y0) / (y1 - y0)
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))


def value_at(t: np.ndarray, y: np.ndarray, when: float) -> float:
    """Linear interpolation of y at time ``when`` (NaN if outside the sampled range)."""
    if not math.isfinite(when) or when < t[0] or when > t[-1]:
        return math.nan
    return float(np.interp(when, t, y))


def phase_times(t, loss_g4, loss_ih2, h, w_kq, alpha_star: float, w_star: float) -> PhaseTimes:
    """Phase boundaries of one curve; arrays share the time axis t (increasing)."""
    t = np.asarray(t, dtype=float)
    loss_ih2 = np.asarray(loss_ih2, dtype=float)
    t_i = first_crossing(t, loss_g4, 0.01 * float(np.asarray(loss_g4)[0]), "down")
    t_o = first_crossing(t, h, 1 / (1 + alpha_star), "up")
    ref = value_at(t, loss_ih2, t_o)
    never = math.isinf(t_o)  # no T_o, no IH phase after it
    ih = {f: math.inf if never else first_crossing(t, loss_ih2, f * ref, "down", start=t_o) for f in (0.99, 0.5, 0.01)}
    return PhaseTimes(
        t_i,
        t_o,
        ih[0.99],
        ih[0.01],
        ih[0.5],
        first_crossing(t, w_kq, 0.01 * w_star, "up"),
        first_crossing(t, w_kq, 0.5 * w_star, "up"),
    )


def _run_end(z: np.ndarray, i: int, tol: float) -> int:
    """The last index j ≥ i such that z[i..j] all lie within ``tol`` of z[i]."""
    j = i
    while j + 1 < len(z) and abs(z[j + 1] - z[i]) <= tol:
        j += 1
    return j


def plateau(t: np.ndarray, y: np.ndarray, tol: float = 0.05) -> tuple[float, float]:
    """The longest stretch [t_i, t_j] over which a loss stays within ``tol`` × (its total range) of its value at
    t_i; it may run to the last sample (a plateau still going on when training stopped).  (NaN, NaN) if no
    stretch holds three samples."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    span = tol * (np.nanmax(y) - np.nanmin(y))
    best, found = -1.0, (math.nan, math.nan)
    for i in range(len(t)):
        j = _run_end(y, i, span)
        if j - i >= 2 and t[j] - t[i] > best:
            best, found = t[j] - t[i], (float(t[i]), float(t[j]))
    return found


def phase_times_by_run(layer2: pd.DataFrame, alpha_star: float, w_star: float) -> list[dict]:
    """The phase times of Theorem 5.5 (:func:`phase_times`) of each run of a toy's layer-2 metrics (columns
    run, seed, t, loss_G4, loss_IH2, w_V2, w_KQ): one ``{"run", "seed", "T_I", …}`` per run."""
    return [
        {
            "run": int(run_id),
            "seed": int(df.seed.iloc[-1]),
            **phase_times(df.t, df.loss_G4, df.loss_IH2, df.w_V2, df.w_KQ, alpha_star, w_star).as_dict(),
        }
        for run_id, df in layer2.groupby("run")
    ]


def kicked_gap_change(companion: pd.DataFrame) -> float | None:
    """Lemma 5.4 off the balanced manifold: over Stage II of the companion run (w_Q(0) = kick, w_K(0) = σ_init), the
    largest |w_Q² − w_K² − its value at the start of Stage II|, relative to that value.  0 under gradient flow; SGD's
    step changes it by the factor 1 − lr²·G² (G = ∂L/∂(w_Q w_K) on the batch).  None without a gap to follow."""
    gap = (companion.w_Q**2 - companion.w_K**2).to_numpy(dtype=float)
    if not len(gap) or gap[0] == 0:  # no companion, or an intervention put it back on the manifold
        return None
    return float(np.abs(gap - gap[0]).max() / abs(gap[0]))


def balance(layer2: pd.DataFrame) -> float:
    """Lemma 5.4: w_Q² − w_K² is conserved in Stage II, hence ≡ 0 from θ(0) = σ_init·1.  Its largest |value| over
    the layer-2 stage and the runs, relative to the largest w_Q² + w_K² (0 exactly when balanced)."""
    gap = (layer2.w_Q**2 - layer2.w_K**2).abs().max()
    return float(gap / max(float((layer2.w_Q**2 + layer2.w_K**2).max()), 1e-30))


@dataclass(frozen=True)
class Ramp:
    """A flat–linear–flat curve: ``before`` until ``start``, ``after`` from ``end``, linear between
    (docs/monitor.md#phase-detection); NaN everywhere when there was nothing to fit."""

    start: float
    end: float
    before: float
    after: float

    @property
    def mid(self) -> float:
        """Where the ramp crosses half-way from ``before`` to ``after``: the change point."""
        return (self.start + self.end) / 2


NO_RAMP = Ramp(math.nan, math.nan, math.nan, math.nan)


def ramp_fit(t: np.ndarray, y: np.ndarray, knots: int = 48) -> Ramp:
    """The least-squares :class:`Ramp` through the samples (t increasing): its corners at two of (at most ``knots``
    evenly spaced) sample times, its two levels solved in closed form for each pair.  A change point robust to the
    noise of any one sample: half-way crossings of the raw curve move with its lowest and its last value
    (docs/monitor.md#phase-detection).  :data:`NO_RAMP` for fewer than three finite samples."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(t) & np.isfinite(y)
    t, y = t[keep], y[keep]
    if len(t) < 3:
        return NO_RAMP
    at = np.unique(np.linspace(0, len(t) - 1, min(len(t), knots)).round().astype(int))
    i, j = np.triu_indices(len(at), k=1)  # (P,) every corner pair, start before end
    t0, t1 = t[at[i]][:, None], t[at[j]][:, None]  # (P, 1)
    u = np.clip((t[None, :] - t0) / (t1 - t0), 0.0, 1.0)  # (P, n): 0 on the first level, 1 on the second
    du = u - u.mean(1, keepdims=True)
    var = (du * du).sum(1)  # (P,)
    slope = np.where(var > 0, (du * (y - y.mean())).sum(1) / np.where(var > 0, var, 1.0), 0.0)  # after − before
    before = y.mean() - slope * u.mean(1)
    sse = ((y[None, :] - before[:, None] - slope[:, None] * u) ** 2).sum(1)
    k = int(np.argmin(sse))
    return Ramp(float(t0[k, 0]), float(t1[k, 0]), float(before[k]), float(before[k] + slope[k]))


PLATEAU_SHARE = 0.1  # a plateau holds ≥ this share of the samples (docs/monitor.md#phase-detection)


def _flat_stretches(z: np.ndarray, tol: float, least_len: int) -> list[tuple[int, int]]:
    """Left to right, the maximal runs of ≥ ``least_len`` samples that stay within ``tol`` of their first one."""
    out, i, n = [], 0, len(z)
    while i < n:
        j = _run_end(z, i, tol)
        if j - i + 1 >= least_len:
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def escape_window(z: np.ndarray, tol: float, least: float) -> tuple[int, int]:
    """Sample indices lo to hi (hi excluded) of the curve's largest escape from a plateau
    (docs/monitor.md#phase-detection): the curve ``z`` (finite, oriented to rise at the change: a score, or a loss as
    −log loss) is cut into flat stretches (≥ 3 samples and ≥ ``PLATEAU_SHARE`` of them, each within ``tol`` of its
    first value); the window runs from the start of the stretch whose rise to the next stretch (to the curve's
    maximum after it, for the last) is the largest, to the end of that next stretch.  The whole curve when no stretch
    rises by more than ``least``."""
    z = np.asarray(z, dtype=float)
    n = len(z)
    flats = _flat_stretches(z, tol, max(3, math.ceil(PLATEAU_SHARE * n)))  # plateaus, not pauses within a rise
    best, window = least, (0, n)
    for k, (i, j) in enumerate(flats):
        nxt = flats[k + 1] if k + 1 < len(flats) else None
        rise = (z[nxt[0]] if nxt is not None else (z[j + 1 :].max() if j + 1 < n else -math.inf)) - z[i]
        if rise > best:
            best, window = rise, (i, nxt[1] + 1 if nxt is not None else n)
    return window
