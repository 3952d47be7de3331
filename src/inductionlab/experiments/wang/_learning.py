"""What the two IH_n experiments (``probe``, ``heads-dims``) share: their budget and :func:`learning`, what
"learned" means for them (docs/conventions.md#wang-6-4, docs/conventions.md#learned)."""

from __future__ import annotations

import numpy as np

from inductionlab.analysis.phases import first_crossing

ESCAPE = 0.5  # a loss curve has left its plateau at the first step where it is at most this fraction of it
LEARNED = 0.2  # a model has learned IH_4 when its late loss is at most this fraction of its plateau
STEPS = 16_000  # the budget: the calibration seeds' escape-time tail with margin (docs/conventions.md#wang-6-4)
PLATEAU = (200, 1000)  # the steps whose evaluations give the plateau loss (calibration: docs/conventions.md#wang-6-4)


def learning(steps: np.ndarray, loss: np.ndarray, window: tuple[int, int], late: int) -> dict[str, float]:
    """How far one loss curve learned (docs/conventions.md#wang-6-4): ``plateau``, the median loss over the
    evaluations at steps in ``window`` (after the first drop from the step-0 loss, before any calibration seed
    leaves; NaN for a run shorter than that); ``late_over_plateau``, the mean of the last ``late`` evaluations over
    it; ``escape_step``, the first step at which the loss is at most :data:`ESCAPE` of it (+inf: never,
    docs/conventions.md#never)."""
    steps, loss = np.asarray(steps, dtype=float), np.asarray(loss, dtype=float)
    on = (steps >= window[0]) & (steps <= window[1])
    plateau = float(np.median(loss[on])) if on.any() else float("nan")
    return {
        "plateau": plateau,
        "late_over_plateau": float(loss[-late:].mean()) / plateau,
        "escape_step": first_crossing(steps, loss, ESCAPE * plateau, "down"),
    }
