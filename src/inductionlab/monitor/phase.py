"""The induction-head phase change of a monitor's tables (docs/monitor.md#phase-detection): the best induction
head at the last measurement, the change point of its score measured relative to what the tokens allow (0 at the
chance level, 1 at the attainable score), the change point of the loss on the repeated tokens (Olsson et al.'s
bump), and whether the two coincide, stage by stage.  Each change point is the middle of a flat–linear–flat ramp
fitted over an escape of the curve from a plateau (:func:`inductionlab.analysis.phases.escape_window`,
:func:`~inductionlab.analysis.phases.ramp_fit`, :func:`inductionlab.monitor.stages.escapes`): the largest escape
gives the phase step (the same rule finds Theorem 5.5's T_50 in the toy's L_IH2), and a head that rises in several
stages — plateau, rise, plateau, rise — has one per escape, each of which the loss must follow."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from inductionlab.analysis.phases import NO_RAMP, Ramp, escape_window, ramp_fit
from inductionlab.monitor.stages import escapes

FLAT = 0.05  # a plateau: the curve within this of its first value (relative score; log loss, i.e. 5%)
LEAST_ESCAPE = math.log(1.25)  # a loss escapes a plateau when it later falls by a quarter (in log) …
LEAST_SPAN = 0.05  # … a score when its span between chance and attainable is at least this (else no phase)


@dataclass(frozen=True)
class Stage:
    """One stage of the best head's rise and the repeated-token loss over the same window
    (docs/monitor.md#phase-detection): the ramp fitted to the head's relative score over an escape from a plateau
    (to the end of the next plateau), and the ramp fitted to ``loss_repeated`` over the same steps."""

    step: float  # the change point of the head's relative score in this stage
    rise_start: float  # where its fitted rise starts and ends
    rise_end: float
    before: float  # its fitted relative score before and after the rise
    after: float
    loss_drop_step: float  # the change point of loss_repeated over the stage's steps (NaN: it falls ≤ min_loss_drop)
    loss_drop: float  # the fitted fall of loss_repeated there, in nats
    coincides: bool  # the loss's change point within this stage's rise ± one interval


@dataclass(frozen=True)
class PhaseChange:
    """The induction-head phase change seen so far (docs/monitor.md#phase-detection); NaN where not (yet) seen."""

    head: tuple[int, int] | None  # (layer, head) with the largest induction score at the last measurement
    step: float  # the change point of its relative score over its largest escape (NaN: no stage of its rise, i.e. by
    # more than min_rise, reaches threshold)
    score: float  # its last induction score
    relative: float  # its highest fitted level after a stage (one stage: after the rise), 0 at the chance level and 1
    # at the attainable score
    rise_start: float  # where the fitted rise of its largest escape starts and ends (NaN without a phase change)
    rise_end: float
    loss_drop_step: float  # the change point of loss_repeated (NaN: a fitted fall of no more than min_loss_drop nats)
    coincides: bool  # stage by stage: every stage's loss change within its rise ± one interval, and every drop of
    # the loss within the stages' span ± one interval (one stage: the loss drop within the fitted rise ± one interval)
    stages: tuple[Stage, ...] = ()  # the stages of the head's rise, each by more than min_rise (() without a phase)
    loss_drops: tuple[float, ...] = ()  # the change point of every escape of loss_repeated (each falling by more
    # than min_loss_drop nats), in order; loss_drop_step is the largest one's

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


def changes(t: np.ndarray, y: np.ndarray, direction: str) -> list[tuple[Ramp, float, float]]:
    """Each escape of ``y`` from a plateau, in order, as :func:`change` judges them (every one rising, or falling in
    log, by more than its least): the ramp fitted over it and the first and last step of its window; the whole
    curve's ramp when nothing escapes, as :func:`change` fits it then."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(t) & np.isfinite(y)
    t, y = t[keep], y[keep]
    if len(t) < 3:
        return []
    z, least = (y, 2 * FLAT) if direction == "up" else (-np.log(np.maximum(y, 1e-12)), LEAST_ESCAPE)
    found = escapes(z, FLAT, least) or [(0, len(t), math.nan)]
    return [(ramp_fit(t[lo:hi], y[lo:hi]), float(t[lo]), float(t[hi - 1])) for lo, hi, _ in found]


def _loss_drop(steps: pd.DataFrame, min_loss_drop: float) -> float:
    ordered = steps.sort_values("step")
    ramp = change(ordered.step.to_numpy(float), ordered.loss_repeated.to_numpy(float), "down")
    return ramp.mid if ramp.before - ramp.after > min_loss_drop else math.nan


def _loss_drops(steps: pd.DataFrame, min_loss_drop: float) -> tuple[float, ...]:
    """The change point of every escape of ``loss_repeated`` whose fitted fall exceeds ``min_loss_drop`` nats."""
    ordered = steps.sort_values("step")
    found = changes(ordered.step.to_numpy(float), ordered.loss_repeated.to_numpy(float), "down")
    return tuple(ramp.mid for ramp, _, _ in found if ramp.before - ramp.after > min_loss_drop)


def stages(
    t: np.ndarray, relative: np.ndarray, steps: pd.DataFrame, every: int, min_rise: float, min_loss_drop: float
) -> tuple[Stage, ...]:
    """The stages of a head's relative score (sampled at steps ``t``) that rise by more than ``min_rise``, each with
    the ramp of ``steps``' ``loss_repeated`` fitted over the stage's window (docs/monitor.md#phase-detection)."""
    ordered = steps.sort_values("step") if not steps.empty else pd.DataFrame({"step": [], "loss_repeated": []})
    at, loss = ordered.step.to_numpy(float), ordered.loss_repeated.to_numpy(float)
    out = []
    for ramp, first, last in changes(t, relative, "up"):
        if not ramp.after - ramp.before > min_rise:
            continue
        inside = (at >= first) & (at <= last)
        drop = ramp_fit(at[inside], loss[inside])
        fell = drop.before - drop.after > min_loss_drop
        when = drop.mid if fell else math.nan
        close = fell and ramp.start - every <= when <= ramp.end + every
        out.append(
            Stage(ramp.mid, ramp.start, ramp.end, ramp.before, ramp.after, when, drop.before - drop.after, close)
        )
    return tuple(out)


def stage_by_stage(found: tuple[Stage, ...], drops: tuple[float, ...], every: int) -> bool:
    """The loss follows the head stage by stage: a stage at least, the loss's change point over each stage's window
    within its rise ± ``every``, and every drop of the loss (each escape's change point, ``drops``) within the
    stages' span — the first rise's start to the last one's end — ± ``every``: no drop the head does not explain."""
    if not found or not drops:
        return False
    lo, hi = found[0].rise_start - every, found[-1].rise_end + every
    return all(s.coincides for s in found) and all(lo <= d <= hi for d in drops)


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
    relative units), and ``loss_repeated`` fall by more than ``min_loss_drop`` nats.  The phase step is the change
    point of the head's largest escape; ``coincides`` is judged stage by stage (:func:`stage_by_stage`)."""
    drop = _loss_drop(steps, min_loss_drop) if not steps.empty else math.nan
    drops = _loss_drops(steps, min_loss_drop) if not steps.empty else ()
    no_head = PhaseChange(None, math.nan, math.nan, math.nan, math.nan, math.nan, drop, False, (), drops)
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
    relative = relative_score(y, chance, attainable)
    ramp = change(t, relative, "up")
    found = stages(t, relative, steps, every, min_rise, min_loss_drop)
    level = max((s.after for s in found), default=math.nan)  # one stage: its fitted level after, ramp.after
    if not level >= threshold:  # no stage rose by more than min_rise to the threshold: no phase change
        return PhaseChange(
            (layer, head), math.nan, float(y[-1]), ramp.after, math.nan, math.nan, drop, False, (), drops
        )
    close = math.isfinite(drop) and stage_by_stage(found, drops, every)
    return PhaseChange((layer, head), ramp.mid, float(y[-1]), level, ramp.start, ramp.end, drop, close, found, drops)


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


def _steps(values: Any) -> str:
    return ", ".join(f"{v:.0f}" if math.isfinite(v) else "none" for v in values)


def phase_line(phase: PhaseChange) -> str:
    """One line for the terminal, e.g. ``phase change: layer 1 head 0 at step 340 (induction score 0.71, relative
    0.93); repeated-token loss drop at step 330: coincides``; a head that rose in several stages adds them, e.g.
    ``… in 2 stages (at steps 265, 420; the loss over each at 250, 415) …: coincides stage by stage``."""
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
    staged = ""
    if len(phase.stages) > 1:
        heads, losses = _steps(s.step for s in phase.stages), _steps(s.loss_drop_step for s in phase.stages)
        staged, verdict = (
            f" in {len(phase.stages)} stages (at steps {heads}; the loss over each at {losses})",
            (f"{verdict} stage by stage"),
        )
    return (
        f"phase change: layer {layer} head {head} at step {phase.step:.0f} (induction score {phase.score:.2f}, "
        f"relative {phase.relative:.2f}){staged}; repeated-token loss drop {drop}: {verdict}"
    )
