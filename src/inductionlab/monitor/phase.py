"""The induction-head phase change of a monitor's tables (docs/monitor.md#phase-detection): the best induction
head at the last measurement, the change point of its score measured relative to what the tokens allow (0 at the
chance level, 1 at the attainable score), the change point of the loss on the repeated tokens (Olsson et al.'s
bump), and whether the two coincide.  Each change point is the middle of a flat–linear–flat ramp fitted over the
curve's largest escape from a plateau (:func:`inductionlab.analysis.phases.escape_window`,
:func:`~inductionlab.analysis.phases.ramp_fit`): the same rule finds Theorem 5.5's T_50 in the toy's L_IH2."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from inductionlab.analysis.phases import NO_RAMP, Ramp, escape_window, ramp_fit

FLAT = 0.05  # a plateau: the curve within this of its first value (relative score; log loss, i.e. 5%)
LEAST_ESCAPE = math.log(1.25)  # a loss escapes a plateau when it later falls by a quarter (in log) …
LEAST_SPAN = 0.05  # … a score when its span between chance and attainable is at least this (else no phase)


@dataclass(frozen=True)
class PhaseChange:
    """The induction-head phase change seen so far (docs/monitor.md#phase-detection); NaN where not (yet) seen."""

    head: tuple[int, int] | None  # (layer, head) with the largest induction score at the last measurement
    step: float  # the change point of its relative score (NaN: its fitted rise below min_rise, or its fitted level
    # after the rise below threshold)
    score: float  # its last induction score
    relative: float  # its fitted level after the rise, 0 at the chance level and 1 at the attainable score
    rise_start: float  # where its fitted rise starts and ends (NaN without a phase change)
    rise_end: float
    loss_drop_step: float  # the change point of loss_repeated (NaN: a fitted fall of no more than min_loss_drop nats)
    coincides: bool  # the loss drop within the score's fitted rise ± one interval, both finite

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "head": list(self.head) if self.head is not None else None}


def relative_score(y: np.ndarray, chance: float, attainable: float) -> np.ndarray:
    """(y − chance) / (attainable − chance): 0 for a head that ignores the tokens, 1 for the ideal head
    (docs/monitor.md#chance-levels); NaN where the two levels lie closer than ``LEAST_SPAN``."""
    span = attainable - chance
    if not (math.isfinite(span) and span >= LEAST_SPAN):
        return np.full(np.shape(y), math.nan)
    return (np.asarray(y, dtype=float) - chance) / span


def change(t: np.ndarray, y: np.ndarray, direction: str) -> Ramp:
    """The ramp fitted over the largest escape of ``y`` from a plateau: a relative score rising (``"up"``) or a loss
    falling (``"down"``, judged on its log: a fall from 2.5 to 2.0 nats counts as much as one from 0.5 to 0.4)."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(t) & np.isfinite(y)
    t, y = t[keep], y[keep]
    if len(t) < 3:
        return NO_RAMP
    z, least = (y, 2 * FLAT) if direction == "up" else (-np.log(np.maximum(y, 1e-12)), LEAST_ESCAPE)
    lo, hi = escape_window(z, FLAT, least)
    return ramp_fit(t[lo:hi], y[lo:hi])


def _loss_drop(steps: pd.DataFrame, min_loss_drop: float) -> float:
    ordered = steps.sort_values("step")
    ramp = change(ordered.step.to_numpy(float), ordered.loss_repeated.to_numpy(float), "down")
    return ramp.mid if ramp.before - ramp.after > min_loss_drop else math.nan


def phase_change(
    heads: pd.DataFrame,
    steps: pd.DataFrame,
    every: int,
    *,
    chance: float,
    attainable: float,
    threshold: float = 0.3,
    min_rise: float = 0.2,
    min_loss_drop: float = 0.1,
) -> PhaseChange:
    """The phase change of a monitor's tables (docs/monitor.md#phase-detection) over the whole curve so far.

    ``chance`` and ``attainable``: the induction scores of a uniform and of the ideal head on the monitor's tokens
    (:func:`~inductionlab.monitor.settings.chance_scores`, :func:`~inductionlab.monitor.settings.attainable_scores`); the
    best head's relative score must rise by more than ``min_rise`` to a fitted level ≥ ``threshold`` (both in
    relative units), and ``loss_repeated`` fall by more than ``min_loss_drop`` nats."""
    drop = _loss_drop(steps, min_loss_drop) if not steps.empty else math.nan
    no_head = PhaseChange(None, math.nan, math.nan, math.nan, math.nan, math.nan, drop, False)
    if heads.empty:
        return no_head
    last = heads[heads.step == heads.step.max()]
    scores = last.induction.to_numpy(float)
    if not np.isfinite(scores).any():  # no head has a score (e.g. no query had keys): no best head
        return no_head
    best = np.where(np.isfinite(scores), scores, -math.inf).argmax()
    layer, head = int(last["layer"].iloc[best]), int(last["head"].iloc[best])
    curve = heads[(heads["layer"] == layer) & (heads["head"] == head)].sort_values("step")
    t, y = curve.step.to_numpy(float), curve.induction.to_numpy(float)
    ramp = change(t, relative_score(y, chance, attainable), "up")
    formed = ramp.after - ramp.before > min_rise and ramp.after >= threshold
    start, end = (ramp.start, ramp.end) if formed else (math.nan, math.nan)
    close = formed and math.isfinite(drop) and start - every <= drop <= end + every
    step = ramp.mid if formed else math.nan
    return PhaseChange((layer, head), step, float(y[-1]), ramp.after, start, end, drop, bool(close))


def located(heads: pd.DataFrame, steps: pd.DataFrame, config: Any, chance: float, attainable: float) -> PhaseChange:
    """:func:`phase_change` with a :class:`~inductionlab.monitor.settings.MonitorConfig`'s interval and thresholds."""
    return phase_change(
        heads,
        steps,
        config.every,
        chance=chance,
        attainable=attainable,
        threshold=config.threshold,
        min_rise=config.min_rise,
        min_loss_drop=config.min_loss_drop,
    )


def confirmed(phase: PhaseChange, heads: pd.DataFrame, chance: float, attainable: float, threshold: float, k: int):
    """The live decision (docs/monitor.md#phase-detection): a phase change located so far whose head's relative
    score has stayed ≥ ``threshold`` over the last ``k`` measurements — so a single noisy measurement never fires."""
    if phase.head is None or not math.isfinite(phase.step):
        return False
    layer, head = phase.head
    curve = heads[(heads["layer"] == layer) & (heads["head"] == head)].sort_values("step")
    late = relative_score(curve.induction.to_numpy(float)[-k:], chance, attainable)
    return len(late) == k and bool((late >= threshold).all())


def phase_line(phase: PhaseChange) -> str:
    """One line for the terminal, e.g. ``phase change: layer 1 head 0 at step 340 (induction score 0.71, relative 0.93);; repeated-token loss drop at step 330: coincides``."""
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
        f"phase change: layer {layer} head {head} at step {phase.step:.0f} (induction score {phase.score:.2f}, "
        f"relative {phase.relative:.2f}); repeated-token loss drop {drop}: {verdict}"
    )
