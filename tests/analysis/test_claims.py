import json
from dataclasses import replace
from pathlib import Path

import pytest

from inductionlab import experiments
from inductionlab.analysis.claims import (
    MISSING,
    SCALE,
    Between,
    Claim,
    Control,
    Evidence,
    Is,
    Near,
    Reached,
    lookup,
)
from inductionlab.analysis.verdicts import judge, judge_control, over_seeds

GOLDEN = Path(__file__).parents[1] / "golden"
# claims whose keys exist only at the default size (the T grid's slopes, the N = 10 and 50 runs)
DEFAULT_ONLY = {
    "ren-s4-scratch-grows",
    "ren-s4-transfer-flat",
    "ren-s4-transfer-cheaper",
    "ren-s4-transfer-slower",
    "ren-s3-stage2-logT",
    "chen-fig21-length-a0.05",
    "chen-fig21-length-a0.2",
    "chen-fig21-gap-a0.05",
    "chen-fig21-gap-a0.1",
    "chen-fig21-gap-a0.2",
    "ren-noise-prox-n10",
    "ren-noise-n50",
    "ren-noise-stage1-poly",
}


def _claim(**kw):
    base = dict(id="x", paper="wang", where="Fig. 1", statement="s", key="a.b", expected="1", test=Between(0.5, 1.5))
    return Claim(**{**base, **kw})


def test_lookup_takes_keys_that_hold_dots():
    s = {"final": {"SGD η=0.03": {"alpha": 1.0}, "10": {"proximal": {"x": 2}}}, "gap.0.1": {"10": 3}, "p": {"{1,2}": 4}}
    assert lookup(s, "final.SGD η=0.03.alpha") == 1.0
    assert lookup(s, "final.10.proximal.x") == 2
    assert lookup(s, "gap.0.1.10") == 3
    assert lookup(s, "p.{1,2}") == 4
    assert lookup(s, "final.11.proximal.x") is MISSING and lookup(s, "nothing") is MISSING


@pytest.mark.parametrize(
    "test,yes,no",
    [
        (Between(0.5, 1.5), [0.5, 1.0, 1.5], [0.49, 1.51, None, float("nan"), True, "1"]),
        (Between(hi=0.1), [-5.0, 0.1], [0.11, None]),
        (Near(2.0, atol=0.2), [1.81, 2.19], [1.79, 2.21, None]),
        (Near(-2.0, rtol=0.1), [-1.81, -2.19], [-1.7, 2.0]),
        (Is(True), [True], [False, None, 1.5]),
        (Is("{1,2}"), ["{1,2}"], ["{1,3}"]),
        (Is(None), [None], [0.0, False]),
    ],
)
def test_tests_hold_exactly_on_their_range(test, yes, no):
    assert all(test.holds(v) for v in yes)
    assert not any(test.holds(v) for v in no)


def test_judge_statuses_and_reasons():
    summary = {"a": {"b": 1.0}, "c": 4.0}
    assert judge(_claim(), summary)["status"] == "passed"
    failed = judge(_claim(test=Between(lo=2)), summary)
    assert failed["status"] == "failed" and failed["reason"] == "measured 1" and failed["measured"] == 1.0
    assert judge(_claim(key="a.z"), summary)["status"] == "undefined"  # a key the summary lacks: neither verdict
    assert judge(_claim(), summary, smoke=True)["status"] == "smoke, not judged"
    gpu = _claim(needs="a GPU: the paper preset")
    assert judge(gpu, summary)["status"] == SCALE and "needs a GPU" in judge(gpu, summary)["reason"]
    assert judge(gpu, summary, gpu=True)["status"] == "passed"
    missing = judge(_claim(), None, reason="the run failed: boom")
    assert missing["status"] == "not run" and missing["reason"] == "the run failed: boom"
    ratio = judge(_claim(over="c", test=Near(0.25, atol=1e-12)), summary)
    assert ratio["status"] == "passed" and ratio["measured"] == 0.25
    zero = judge(_claim(over="zero", test=Between(lo=0)), {**summary, "zero": 0})
    assert zero["measured"] is None and zero["status"] == "undefined"


@pytest.mark.parametrize("value", [None, float("nan"), "1.0", [1.0, 2.0], {"x": 1}])
def test_a_value_that_is_not_a_number_is_undefined_never_passed_nor_failed(value):
    for test in (Between(lo=0), Between(hi=5), Near(1.0, atol=10)):
        assert judge(_claim(test=test), {"a": {"b": value}})["status"] == "undefined"
    assert judge(_claim(test=Is(True)), {"a": {"b": None}})["status"] == "undefined"


def test_a_null_listed_as_never_reached_is_a_time_later_than_every_bound():
    never = {"a": {"b": None}, "c": 4.0, "not_reached": ["a.b"]}
    assert judge(_claim(test=Between(hi=5)), never)["status"] == "failed"  # defined: +inf, not missing
    assert judge(_claim(test=Between(lo=0)), never)["status"] == "passed"
    assert judge(_claim(test=Reached()), never)["status"] == "failed"
    assert judge(_claim(test=Reached()), {"a": {"b": 3.0}})["status"] == "passed"
    assert judge(_claim(test=Reached()), {"a": {"b": None}})["status"] == "undefined"  # not listed: not measured
    ratio = judge(_claim(over="c", test=Between(0.8, 1.25)), never)
    assert ratio["status"] == "failed" and "never" in ratio["measured_text"]
    assert judge_control(_claim(control="k", over="c"), never)["control_status"] == "rejects"
    both = judge(_claim(over="a.b", test=Between(lo=0)), never)
    assert both["status"] == "undefined"  # never / never: no ratio
    seeds = judge(_claim(seeds=2, test=Between(hi=5)), {"a": {"b": [1.0, None]}, "not_reached": ["a.b"]})
    assert seeds["status"] == "undefined"  # per-seed lists are judged on finite values only


def test_a_stochastic_claim_is_judged_on_the_mean_over_its_seeds():
    claim = _claim(seeds=4, test=Between(lo=0.9))
    row = judge(claim, {"a": {"b": [0.95, 0.97, 0.93, 0.99]}})
    assert row["status"] == "passed" and row["measured"] == pytest.approx(0.96) and row["n_seeds"] == 4
    assert row["measured_sd"] == pytest.approx(0.0258198889747) and "± 0.052 (2 s.d., 4 seeds)" in row["measured_text"]
    assert judge(claim, {"a": {"b": [0.95, 0.6, 0.93, 0.99]}})["status"] == "failed"  # the mean, not the best seed
    few = judge(claim, {"a": {"b": [0.95, 0.97]}})
    assert few["status"] == "undefined" and "at least 4" in few["reason"]  # one seed's outcome is a note
    assert judge(claim, {"a": {"b": [0.95, None, 0.93, 0.99]}})["status"] == "undefined"
    assert judge(claim, {"a": {"b": 0.95}})["status"] == "undefined"  # a single number is not a seed list
    ratio = judge(_claim(seeds=2, over="c", test=Near(0.5, atol=1e-9)), {"a": {"b": [1.0, 2.0]}, "c": [2.0, 4.0]})
    assert ratio["status"] == "passed"
    assert over_seeds([1.0, 3.0]) == (2.0, pytest.approx(2**0.5), 2) and over_seeds([]) is None
    with pytest.raises(ValueError, match="seeds"):
        _claim(seeds=1)


def test_a_failure_is_a_finding_only_with_its_evidence():
    evidence = Evidence(sentence="'x holds' (§2)", regime="run r meets H", reimplementation="tests/findings/test_x.py")
    row = judge(
        _claim(test=Between(lo=2), if_failed="a finding about the paper: x", evidence=evidence), {"a": {"b": 1}}
    )
    assert row["kind"] == "a finding about the paper" and "tests/findings/test_x.py" in row["evidence"]
    assert judge(_claim(test=Between(lo=2)), {"a": {"b": 1}})["kind"] == "open"
    assert judge(_claim(if_failed="open: why"), {"a": {"b": 1}})["kind"] == ""  # passed: no kind
    with pytest.raises(ValueError, match="evidence"):
        _claim(if_failed="a finding about the paper: x")
    with pytest.raises(ValueError, match="evidence"):
        _claim(if_failed="open: x", evidence=evidence)
    with pytest.raises(ValueError, match="tests/findings"):
        Evidence(sentence="s", regime="r", reimplementation="scripts/x.py")


def test_claims_are_refused_when_malformed():
    assert _claim(paper="vaswani").paper == "vaswani"  # a researcher's own source (docs/own_experiment.md)
    with pytest.raises(ValueError, match="paper must be a short lower-case name"):
        _claim(paper="Vaswani et al.")
    with pytest.raises(ValueError, match="required"):
        _claim(key="")
    with pytest.raises(ValueError, match="needs a bound"):
        Between()


def test_the_registry_covers_the_papers_with_unique_ids_and_real_keys():
    claims = [(n, c) for n, e in experiments.REGISTRY.items() for c in e.claims]
    assert len(claims) >= 30
    ids = [c.id for _, c in claims]
    assert len(ids) == len(set(ids)), "claim ids must be unique"
    assert {c.paper for _, c in claims} == {"wang", "chen", "ren", "olsson"}
    assert any(c.needs for _, c in claims), "the GPU-scale WikiText claim is registered as such"
    for name, claim in claims:  # every key is one the experiment writes (its smoke golden summary)
        summary = json.loads((GOLDEN / f"{name}.json").read_text())["summary"]
        for key in filter(None, (claim.key, claim.over)):
            found = (
                lookup(summary, key) is not MISSING or lookup(summary, f"{key}.0") is not MISSING
            )  # a list: its first
            assert found or claim.id in DEFAULT_ONLY, (name, key)


def test_a_control_rejects_when_the_claims_test_fails_on_it():
    claim = _claim(control="broken")
    assert judge_control(claim, {"a": {"b": 3.0}})["control_status"] == "rejects"
    assert judge_control(claim, {"a": {"b": 1.0}})["control_status"] == "accepts"  # the check cannot tell
    assert judge_control(claim, {"z": 1})["control_status"] == "undefined"  # a missing value is no rejection
    assert judge_control(claim, {"a": {"b": None}})["control_status"] == "undefined"
    assert judge_control(claim, None)["control_status"] == "not run"
    assert judge_control(claim, None, smoke=True)["control_status"] == "smoke, not judged"  # smoke runs none
    assert judge_control(_claim(), {"a": {"b": 1.0}})["control_status"] == ""
    with pytest.raises(ValueError, match="if_failed must start"):
        _claim(if_failed="maybe: who knows")
    with pytest.raises(ValueError, match="what it breaks"):
        Control(name="bad name", breaks="x", overrides={})


def test_every_control_exists_changes_the_run_and_has_a_claim():
    for name, exp in experiments.REGISTRY.items():
        controls = {c.name: c for c in exp.controls}
        assert len(controls) == len(exp.controls), f"{name}: control names repeat"
        named = {c.control for c in exp.claims if c.control}
        assert named <= set(controls), f"{name}: claims name unknown controls {named - set(controls)}"
        assert set(controls) <= named, f"{name}: controls no claim uses {set(controls) - named}"
        for control in controls.values():
            broken = experiments.configure(name, preset=control.preset, overrides=dict(control.overrides))
            assert broken != experiments.configure(name, preset=control.preset), (name, control.name)


def test_a_log10_claim_reads_its_gain_in_decades_seed_by_seed():
    """A gain spread over orders of magnitude (wang-thm4.4-heads): its mean over seeds is a geometric mean, and a
    gain that is not positive has no logarithm, so the claim is undefined there, never passed."""
    claim = _claim(key="gain", over="base", test=Between(lo=1.0), log10=True, seeds=2)
    row = judge(claim, {"gain": [1000.0, 100.0], "base": [1.0, 1.0]})
    assert row["status"] == "passed" and row["measured"] == pytest.approx(2.5)  # log10 of √(1000 · 100)
    assert judge(claim, {"gain": [5.0, 5.0], "base": [1.0, 1.0]})["status"] == "failed"  # 0.7 decades
    assert judge(claim, {"gain": [0.0, 100.0], "base": [1.0, 1.0]})["status"] == "undefined"
    assert judge_control(replace(claim, control="c"), {"gain": [1.0], "base": [1.0]})["control_status"] == "rejects"


def test_a_control_judged_over_its_draws_reads_their_mean():
    claim = _claim(control="broken", test=Between(hi=2.0))
    draws = [{"a": {"b": 1.5}}, {"a": {"b": 3.5}}]  # one draw alone would accept, their mean 2.5 rejects
    assert judge_control(claim, draws[:1])["control_status"] == "accepts"
    row = judge_control(claim, draws)
    assert row["control_status"] == "rejects" and row["control_measured_text"] == "2.5 ± 2.8 (2 s.d., 2 seeds)"
    assert judge_control(claim, [draws[0], None])["control_status"] == "not run"  # a draw not finished
    assert judge_control(claim, [draws[0], {"z": 1}])["control_status"] == "undefined"
    with pytest.raises(ValueError, match="draws is the number of data draws"):
        Control(name="c", breaks="x", overrides={}, draws=0)
