"""The power rule (docs/conventions.md#calibration), on the calibration values the protocols recorded: the margins
the rule gives for them, the draws it asks for, and the gate and control forms."""

import math
import statistics

import pytest

from inductionlab.analysis import power
from inductionlab.analysis.claim_tests import Between, Is, Near


def test_the_margins_of_the_recorded_calibrations():
    # markov-joint's copiers read at the end of the run (its former protocol): 0.4 standard errors over four draws
    copiers = power.of_claim(Between(lo=0.92), [0.955, 0.835, 0.966, 0.976], 4)
    assert copiers.margin == pytest.approx(0.40, abs=0.01) and not copiers.powered
    # heads-dims' loss ratio: 3.4, powered
    ratio = power.of_claim(Between(hi=0.25), [0.19, 0.16, 0.24, 0.18], 4)
    assert ratio.margin == pytest.approx(3.38, abs=0.02) and ratio.powered
    # the draws that would power it: n = ceil((Z s / gap)²), at least 3
    assert copiers.needed == math.ceil((power.Z * copiers.sd / (copiers.mean - 0.92)) ** 2) == 70
    assert ratio.needed == power.MIN_DRAWS


def test_markov_joints_reads_on_the_course_of_training_are_powered():
    # its eight calibration seeds at epoch 5000 (sharpen_epoch) and at 100 (select_epoch), docs/chen.md#joint-seeds
    at_5000 = [0.9585, 0.9445, 0.9611, 0.9650, 0.9625, 0.9616, 0.9609, 0.9558]
    copiers = power.of_claim(Between(lo=0.92), at_5000, 4)
    assert copiers.margin == pytest.approx(12.2, abs=0.1) and copiers.needed == power.MIN_DRAWS
    assert power.of_control(Between(lo=0.92), at_5000, 0.9009).margin == pytest.approx(3.0, abs=0.05)
    assert power.of_claim(Between(lo=0.99), [1.0] * 8, 4).powered
    # at the end of the run (20 000 epochs) neither is: the late observations
    at_end = [0.955, 0.835, 0.966, 0.976, 0.9706, 0.9706, 0.9641, 0.9344]
    assert not power.of_claim(Between(lo=0.92), at_end, 4).powered
    assert not power.of_claim(Between(lo=0.99), [1.0] * 6 + [0.931, 1.0], 4).powered


def test_a_near_test_has_two_bounds_and_the_nearest_decides():
    p = power.of_claim(Near(-2.0, atol=0.2), [-1.78, -1.85, -1.90, -1.82], 4)
    mean = sum([-1.78, -1.85, -1.90, -1.82]) / 4
    assert p.margin == pytest.approx(abs(mean - (-1.8)) / (p.sd / 2))  # nearest bound -1.8, not -2.2


def test_the_probe_gate_is_0_4_standard_deviations_from_its_nearest_seed():
    gate = power.of_gate(Between(hi=0.2), [0.188, 0.139, 0.190, 0.152])
    assert gate.margin == pytest.approx(0.39, abs=0.01) and gate.margin < power.GATE_S


def test_a_label_is_powered_when_every_calibration_seed_agrees():
    assert power.of_claim(Is("{1,2}"), ["{1,2}"] * 4, 3).powered
    assert not power.of_claim(Is("{1,2}"), ["{1,2}", "{1,3}", "{1,2}", "{1,2}"], 3).powered


def test_a_control_must_lie_beyond_the_threshold_on_the_other_side():
    values = [0.03, 0.04, 0.035, 0.032]
    far = power.of_control(Between(hi=0.2), values, 0.8)
    assert far.powered
    assert not power.of_control(Between(hi=0.2), values, 0.19).powered  # on the claim's side: it accepts
    assert power.of_control(Between(hi=0.2), values, 0.19).margin < 0


def test_undefined_without_two_finite_values():
    assert power.of_claim(Between(hi=1), [0.5], 3).margin is None
    assert power.of_claim(Between(hi=1), [0.5, float("nan")], 3).margin is None
    assert not power.of_claim(Between(hi=1), [], 3).powered


def test_a_control_fails_a_two_sided_test_on_either_side_whichever_bound_the_claim_sits_near():
    # wang-thm5.5-L's case: the claim near the upper bound 1.15, its control (no copying) far below the lower 0.85
    values = [1.04, 1.05, 1.03, 1.045]
    s = statistics.stdev(values)
    below = power.of_control(Near(1.0, atol=0.15), values, -0.001)
    assert below.margin == pytest.approx((0.85 + 0.001) / s) and below.margin > 0
    # ren-fig2-loss's case: the claim near the lower bound −0.1, its control far above the upper 0.1
    above = power.of_control(Between(-0.1, 0.1), [-0.02, -0.03, -0.01, -0.025], 1.897)
    assert above.margin > 0 and above.powered
    assert power.of_control(Between(-0.1, 0.1), [-0.02, -0.03, -0.01, -0.025], 0.05).margin < 0  # inside: accepts


def test_a_gate_without_a_bound_is_powered_when_every_calibration_seed_passes_it():
    from inductionlab.analysis.claim_tests import Reached

    assert power.of_gate(Reached(), [740, 740, 720, 760]).margin == math.inf  # scb-noise-sim's Stage-1 exits
    one_stuck = power.of_gate(Reached(), [740, math.inf, 720, 760])  # one seed never left Stage 1
    assert one_stuck.learned == 0.75 and not power.gate_powered(one_stuck)
    assert power.of_gate(Reached(), [math.inf, math.inf]).margin == 0.0  # none did
    assert power.of_gate(Reached(), [740]).margin is None  # one seed says nothing


def test_a_controls_margin_is_read_on_its_draws_by_the_claims_own_rule():
    # ren-fig1-l1-high-noise's calibration 1000–1007 against ≤ 0.9, and its λ = 0 control, a gain of 1 on every draw:
    # 0.1 beyond the bound is 0.6 s on one draw, and ⌈(Z · s / 0.1)²⌉ = 8 draws power it
    values = [0.654, 0.778, 0.730, 0.715, 0.717, 0.610, 1.132, 0.626]
    s = statistics.stdev(values)
    one = power.of_control(Between(hi=0.9), values, 1.0)
    assert one.margin == pytest.approx(0.1 / s) and not one.powered
    assert math.ceil((power.Z * s / 0.1) ** 2) == 8
    eight = power.of_control(Between(hi=0.9), values, [1.0] * 8)
    assert eight.margin == pytest.approx(0.1 / (s / math.sqrt(8))) and eight.powered and eight.n == 8
    seven = power.of_control(Between(hi=0.9), values, [1.0] * 7)
    assert not seven.powered


def test_a_claim_is_powered_only_with_its_control():
    from inductionlab.analysis.claims import Claim

    claim = Claim(
        id="x",
        paper="wang",
        where="w",
        statement="s",
        key="k",
        expected="e",
        test=Between(hi=0.9),
        control="c",
        seeds=2,
    )
    calibration = [{"k": v} for v in [0.654, 0.778, 0.730, 0.715, 0.717, 0.610, 1.132, 0.626]]
    weak = power.columns(claim, calibration, 8, [{"k": 1.0}])
    assert weak["margin"] > power.Z and weak["control_margin"] < power.Z and not weak["powered"]
    strong = power.columns(claim, calibration, 8, [{"k": 1.0}] * 8)
    assert strong["control_k"] == 8 and strong["powered"]
    waiting = power.columns(claim, calibration, 8, [{"k": 1.0}, None])  # a control not yet run has no power
    assert not waiting["powered"] and waiting["control_margin"] is None and "has not run" in waiting["margin_text"]
    assert weak["draws_needed"] is None and "its control 0.6 s < 1.645" in weak["margin_text"]  # not the claim's n
    undefined = power.columns(claim, calibration, 8, [{"other": 1.0}] * 8)  # the control's key is missing
    assert not undefined["powered"] and undefined["control_margin"] is None
    never = power.of_control(Between(hi=0.9), [0.5, 0.6], [float("inf")] * 3)
    assert never.margin == math.inf  # an event no control draw reached lies beyond every bound


def test_a_labels_control_is_powered_by_rejecting():
    from inductionlab.analysis.claims import Claim

    claim = Claim(id="x", paper="chen", where="w", statement="s", key="k", expected="e", test=Is("{1,2}"), control="c")
    calibration = [{"k": "{1,2}"}] * 4
    assert power.columns(claim, calibration, 3, [{"k": "{1,3}"}])["powered"]
    accepts = power.columns(claim, calibration, 3, [{"k": "{1,2}"}])
    assert not accepts["powered"] and "does not reject" in accepts["margin_text"]


def test_a_claim_about_a_trained_model_reads_its_margin_on_the_calibration_seeds_that_learned():
    # repeated-text's calibration 1000–1003 (2026-12-07): seed 1001 never started copying (gain 0.12 < 0.5 nats), so its
    # ablation ratio (−0.18) is not a value of the claim; the gate that it failed is what is underpowered
    from inductionlab.analysis.claims import Claim, Learned

    gate = Learned(key="gain", test=Between(lo=0.5), what="copies")
    claim = Claim(
        id="x",
        paper="wang",
        where="w",
        statement="s",
        key="k",
        expected="e",
        test=Between(lo=0.5),
        learned=gate,
        seeds=3,
    )
    calibration = [{"k": k, "gain": g} for k, g in [(0.862, 2.89), (-0.178, 0.116), (0.925, 2.68), (0.893, 2.91)]]
    cols = power.columns(claim, calibration, 3)
    assert cols["calibration_m"] == pytest.approx(statistics.mean([0.862, 0.925, 0.893]))
    # the seeds that learned are clear of the gate, but at 3 of 4 learning, 3 of 3 draws learn with probability 0.42:
    # six draws hold three that learn with probability 0.96
    assert cols["margin"] > power.Z and cols["gate_margin"] > power.GATE_S and not cols["powered"]
    assert (
        "passed on 75% of the calibration seeds: 3 of 3 draws learn with probability 0.42 (6 draws"
        in cols["margin_text"]
    )
    assert power.columns(claim, calibration, 6)["powered"]
    straddled = [{"k": 0.9, "gain": g} for g in (0.55, 2.9, 2.7, 2.8)]  # a learned seed 0.05 inside the gate
    assert not power.columns(claim, straddled, 3)["powered"]


def test_an_event_claim_is_judged_on_every_draw_and_powered_when_every_calibration_seed_agrees():
    # olsson-hf-phase: the monitor's phase step, reached within the run on every calibration seed
    from inductionlab.analysis.claim_tests import Reached
    from inductionlab.analysis.claims import Claim
    from inductionlab.analysis.verdicts import judge

    assert power.of_claim(Reached(), [1300.0, 1075.0, 1275.0, 1325.0], 4).powered
    assert not power.of_claim(Reached(), [1300.0, float("inf"), 1275.0, 1325.0], 4).powered
    claim = Claim(id="x", paper="olsson", where="w", statement="s", key="k", expected="e", test=Reached(), seeds=2)
    assert judge(claim, {"k": 1300.0}, draws=[{"k": 1075.0}])["status"] == "passed"
    never = {"k": None, "not_reached": ["k"]}  # the event did not happen within that draw's run
    assert judge(claim, {"k": 1300.0}, draws=[never])["status"] == "failed"
    assert judge(claim, {"k": 1300.0}, draws=[{"k": None}])["status"] == "undefined"  # a missing value


def test_a_gate_some_seeds_fail_counts_the_draws_that_surely_learn():
    gate = power.of_gate(Between(lo=0.5), [2.9, 0.1, 2.7, 2.8], n=2, need=3)
    assert gate.chance == 0.0 and gate.needed == 6  # two draws cannot hold three; six hold them with p 0.96
    six = power.of_gate(Between(lo=0.5), [2.9, 0.1, 2.7, 2.8, 3.1, 2.5], n=6, need=3)
    assert power.surely_learned(six, 6) == 3  # at five of six, four of six learn with p 0.94 only
    assert power.surely_learned(power.of_gate(Between(lo=0.5), [2.9, 2.7, 2.8], 6, 3), 6) == 6
    assert power.of_gate(Between(lo=0.5), [2.9, float("nan"), 2.7, 2.8], 6, 3).learned == 0.75  # undefined: not
    assert power.of_gate(Between(lo=0.5), [2.9, 0.1], 6, 3).margin is None  # one learned seed has no spread
    assert power.of_claim(Is(True), [None, None], 3).margin is None  # undefined values agree with nothing
