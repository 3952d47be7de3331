"""The phase detector on a head that rises in two stages (docs/monitor.md#phase-detection), where the answer is known:
piecewise-linear curves with two rises at known steps and seeded noise, the shape of fast-induction's HuggingFace
Llama when its head pauses half-way (0.04 → 0.23 over steps 200–330, a plateau, 0.24 → 0.37 over 390–450; the loss on
the repeated tokens 3.80 → 2.82, then → 1.49 over 390–450).  The stages are found at their steps and judged one by
one; the one-ramp rule, which timed each curve by its largest escape only, paired the head's first stage with the
loss's second."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from inductionlab.monitor.phase import change, changes, phase_change, phase_line
from inductionlab.monitor.stages import escapes, plateaus

CHANCE, ATTAINABLE, EVERY = 0.033, 0.555, 10  # fast-induction's monitor: 16 random tokens repeated once, every 10
HEAD = [(0, 0.04), (200, 0.04), (330, 0.23), (390, 0.24), (450, 0.37), (500, 0.38)]  # (step, induction score)
TRUE_STEPS = (265, 420)  # the middles of the two rises
PAUSED = [(0, 4.16), (200, 3.80), (330, 2.82), (390, 2.80), (450, 1.49), (500, 1.45)]  # the loss pauses with the head
FALLING = [(0, 4.16), (200, 3.80), (330, 2.82), (390, 2.46), (450, 1.49), (500, 1.45)]  # … or falls on through it
LATE = [(0, 4.16), (200, 3.80), (330, 2.82), (460, 2.80), (500, 1.49)]  # its second drop at 460–500: 480, not 420
EARLY = [(0, 4.16), (60, 4.16), (90, 3.20), (200, 3.20), (330, 2.00), (390, 1.98), (450, 1.00), (500, 0.98)]
NOISE_SEEDS = range(5)


def _tables(loss: list, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A monitor's tables: the best head (layer 1 head 0) on ``HEAD``, a second head at chance, and the loss on
    ``loss``, each sample with noise of a seeded generator (0.004 on a score, 1 % on the loss)."""
    g = np.random.default_rng(seed)
    t = np.arange(0, 501, EVERY, dtype=float)
    score = np.interp(t, *zip(*HEAD)) + 0.004 * g.standard_normal(len(t))
    other = CHANCE + 0.004 * g.standard_normal(len(t))
    heads = pd.concat(
        [pd.DataFrame({"step": t, "layer": 1, "head": h, "induction": y}) for h, y in enumerate((score, other))]
    )
    steps = pd.DataFrame(
        {"step": t, "loss_repeated": np.interp(t, *zip(*loss)) * np.exp(0.01 * g.standard_normal(len(t)))}
    )
    return heads, steps


def _phase(loss: list, seed: int):
    heads, steps = _tables(loss, seed)
    return phase_change(heads, steps, EVERY, chance=CHANCE, attainable=ATTAINABLE)


@pytest.mark.parametrize("seed", NOISE_SEEDS)
def test_both_stages_are_found_at_their_steps_and_coincide_one_by_one(seed):
    phase = _phase(PAUSED, seed)
    assert [s.step for s in phase.stages] == pytest.approx(TRUE_STEPS, abs=EVERY)
    assert phase.loss_drops == pytest.approx(TRUE_STEPS, abs=EVERY)  # the loss's own two escapes
    for stage in phase.stages:
        assert stage.rise_start - EVERY <= stage.loss_drop_step <= stage.rise_end + EVERY and stage.coincides
    assert phase.coincides
    # the one-ramp rule: the head's largest escape (its first stage) against the loss's (its second)
    assert phase.step == pytest.approx(TRUE_STEPS[0], abs=EVERY)
    assert phase.loss_drop_step == pytest.approx(TRUE_STEPS[1], abs=EVERY)
    assert not phase.rise_start - EVERY <= phase.loss_drop_step <= phase.rise_end + EVERY


@pytest.mark.parametrize("seed", NOISE_SEEDS)
def test_a_loss_that_falls_on_through_the_heads_pause_coincides_stage_by_stage(seed):
    """The loss keeps falling while the head pauses (2.82 → 2.46 over 330–390): it has one escape, whose middle lies
    in the head's pause, and over each of the head's stages its change point lies in that stage's rise."""
    phase = _phase(FALLING, seed)
    assert len(phase.stages) == 2 and len(phase.loss_drops) == 1
    assert phase.stages[0].rise_end < phase.loss_drop_step < phase.stages[1].rise_start
    assert all(s.coincides for s in phase.stages) and phase.coincides


@pytest.mark.parametrize("seed", NOISE_SEEDS)
def test_a_second_drop_more_than_an_interval_late_does_not_coincide(seed):
    phase = _phase(LATE, seed)
    first, second = phase.stages
    assert first.coincides and second.loss_drop_step > second.rise_end + EVERY and not second.coincides
    assert not phase.coincides


@pytest.mark.parametrize("seed", NOISE_SEEDS)
def test_a_drop_before_the_head_rises_is_a_stage_the_head_does_not_explain(seed):
    """A fall of a quarter at step 75, before the head's first rise, then the two drops with the head's stages: the
    loss has three escapes, the first of which no stage of the head explains, so the two do not coincide."""
    phase = _phase(EARLY, seed)
    assert phase.loss_drops == pytest.approx((75, *TRUE_STEPS), abs=EVERY) and phase.stages[1].coincides
    assert not phase.coincides


def test_one_stage_keeps_the_one_ramp_answer():
    """A head and a loss with one escape each: one stage, whose fields are the phase change's."""
    one = [(0, 0.04), (200, 0.04), (330, 0.40), (500, 0.41)]
    heads, steps = _tables([(0, 4.16), (200, 3.80), (340, 1.50), (500, 1.40)], 0)
    heads.loc[heads["head"] == 0, "induction"] = np.interp(heads.step[heads["head"] == 0], *zip(*one))
    phase = phase_change(heads, steps, EVERY, chance=CHANCE, attainable=ATTAINABLE)
    (stage,) = phase.stages
    assert (stage.step, stage.rise_start, stage.rise_end, stage.after) == (
        phase.step,
        phase.rise_start,
        phase.rise_end,
        phase.relative,
    )
    assert phase.loss_drops == (phase.loss_drop_step,) and phase.coincides
    assert phase.step == pytest.approx(265, abs=EVERY) and "stage" not in phase_line(phase)


def test_the_largest_escape_is_escape_windows_and_no_escape_is_the_whole_curve():
    t = np.arange(0, 501, EVERY, dtype=float)
    y = np.interp(t, *zip(*HEAD))
    rel = (y - CHANCE) / (ATTAINABLE - CHANCE)
    found = changes(t, rel, "up")
    assert len(found) == 2 and max(found, key=lambda f: f[0].after - f[0].before)[0] == change(t, rel, "up")
    assert [len(plateaus(rel, 0.05))] == [3] and len(escapes(rel, 0.05, 0.1)) == 2
    ((ramp, first, last),) = changes(t, np.linspace(0, 1, len(t)), "up")  # no plateau: the whole curve
    assert (first, last) == (0, 500) and ramp == change(t, np.linspace(0, 1, len(t)), "up")


def test_the_stages_reach_the_terminal_and_the_saved_file():
    phase = _phase(PAUSED, 0)
    line = phase_line(phase)
    assert "in 2 stages (at steps 265, 420; the loss over each at" in line and line.endswith("coincides stage by stage")
    saved = json.loads(json.dumps(phase.as_dict()))
    assert [s["step"] for s in saved["stages"]] == [s.step for s in phase.stages]
    assert len(saved["loss_drops"]) == 2 and all(math.isfinite(d) for d in saved["loss_drops"])
