"""The induction-head phase change of a monitor's tables (docs/monitor.md#phase-detection): the best induction
head at the last measurement, when its score rose half-way from its lowest to its last value, and when the loss on
the repeated tokens dropped half-way from its peak — and whether the two coincide."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from inductionlab.analysis.phases import first_crossing


@dataclass(frozen=True)
class PhaseChange:
    """The induction-head phase change seen so far (docs/monitor.md#phase-detection); NaN where not (yet) seen."""

    head: tuple[int, int] | None  # (layer, head) with the largest induction score at the last measurement
    step: float  # when its induction score crossed half-way from its lowest to its last value (NaN: below
    # threshold, or a rise of no more than min_rise)
    score: float  # its last induction score
    loss_drop_step: float  # when loss_repeated crossed half-way from its peak to its last value (NaN: a fall of
    # less than min_loss_drop nats)
    coincides: bool  # the loss drop within the score's rise (10% to 90%) ± one interval, both finite

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "head": list(self.head) if self.head is not None else None}


def _rise(t: np.ndarray, y: np.ndarray, direction: str, least: float = 0.0) -> float:
    """First t after the curve's extreme — its lowest point for ``"up"``, its highest for ``"down"`` — at which y
    crosses half-way from that extreme to its last value (:func:`first_crossing`): a loss that first rises (a model
    learning the unigram statistics of text finds random tokens less likely) is timed from its peak.  NaN without
    two finite ends that move in ``direction`` by more than ``least``."""
    if len(y) < 2 or not math.isfinite(y[-1]) or not np.isfinite(y).any():
        return math.nan
    i = int(np.nanargmin(y) if direction == "up" else np.nanargmax(y))
    if (y[-1] - y[i]) * (1 if direction == "up" else -1) <= max(least, 0.0):
        return math.nan
    return first_crossing(t, y, (y[i] + y[-1]) / 2, direction, start=t[i])


def phase_change(
    heads: pd.DataFrame,
    steps: pd.DataFrame,
    every: int,
    threshold: float,
    min_loss_drop: float = 0.0,
    min_rise: float = 0.0,
) -> PhaseChange:
    """The phase change of a monitor's tables (docs/monitor.md#phase-detection): the best induction head at the
    last measurement, when its score rose half-way (NaN if it never reaches ``threshold``, or rose by no more than
    ``min_rise`` from its lowest: a head that scores its chance level all along did not form), and when the loss on
    the repeated tokens dropped half-way (NaN if it fell by no more than ``min_loss_drop`` nats from its peak)."""
    if heads.empty:
        return PhaseChange(None, math.nan, math.nan, math.nan, False)
    ordered = steps.sort_values("step")
    drop = _rise(ordered.step.to_numpy(float), ordered.loss_repeated.to_numpy(float), "down", min_loss_drop)
    last = heads[heads.step == heads.step.max()]
    scores = last.induction.to_numpy(float)
    if not np.isfinite(scores).any():  # no head has a score (e.g. no query had keys): no best head
        return PhaseChange(None, math.nan, math.nan, drop, False)
    best = np.where(np.isfinite(scores), scores, -math.inf).argmax()
    layer, head = int(last["layer"].iloc[best]), int(last["head"].iloc[best])
    curve = heads[(heads["layer"] == layer) & (heads["head"] == head)].sort_values("step")
    t, y = curve.step.to_numpy(float), curve.induction.to_numpy(float)
    step = _rise(t, y, "up", min_rise) if np.nanmax(y, initial=-math.inf) >= threshold else math.nan
    close = False
    if math.isfinite(step) and math.isfinite(drop):  # the drop within the score's rise (10% to 90%), ± one interval
        i = int(np.nanargmin(y))
        lo, hi = (first_crossing(t, y, y[i] + f * (y[-1] - y[i]), "up", start=t[i]) for f in (0.1, 0.9))
        close = lo - every <= drop <= hi + every
    return PhaseChange((layer, head), step, float(y[-1]), drop, bool(close))


def phase_line(phase: PhaseChange) -> str:
    """One line for the terminal, e.g. ``phase change: layer 1 head 0 at step 340 (induction score 0.71);
    repeated-token loss drop at step 330: coincides``."""
    drop = f"at step {phase.loss_drop_step:.0f}" if math.isfinite(phase.loss_drop_step) else "none"
    if phase.head is None:
        return f"phase change: none (no head has an induction score); repeated-token loss drop {drop}"
    layer, head = phase.head
    verdict = "coincides" if phase.coincides else "does not coincide"
    if not math.isfinite(phase.step):
        return (
            f"phase change: none (best head: layer {layer} head {head}, induction score {phase.score:.2f}); "
            f"repeated-token loss drop {drop}"
        )
    return (
        f"phase change: layer {layer} head {head} at step {phase.step:.0f} (induction score {phase.score:.2f}); "
        f"repeated-token loss drop {drop}: {verdict}"
    )
