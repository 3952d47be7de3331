"""The verdicts' two gates (docs/conventions.md#learned, #controls): a claim about a trained model is judged only on
the seeds that learned, and a paper claim's pass stands only where its mechanism-free control rejects."""

import pytest

from inductionlab.analysis.claims import DID_NOT_LEARN, UNEARNED, Between, Claim, Learned
from inductionlab.analysis.verdicts import earn, judge, judge_control

GATE = Learned(key="loss_over_plateau", test=Between(hi=0.2), what="final loss ≤ 0.2 of the plateau", shown="escape")


def _claim(**kw) -> Claim:
    base = dict(
        id="x", paper="wang", where="Fig. 3", statement="s", key="score", expected="≥ 0.5", test=Between(lo=0.5)
    )
    return Claim(**(base | kw))  # type: ignore[arg-type]


def _draw(score: float, ratio: float, escape: float | None = 100.0) -> dict:
    return {"score": score, "loss_over_plateau": ratio, "escape": escape}


def test_a_seed_that_did_not_learn_is_counted_never_judged():
    claim = _claim(seeds=4, learned=GATE)
    learned = [_draw(0.9, 0.1), _draw(0.8, 0.15), _draw(0.7, 0.05)]
    stuck = _draw(0.0, 0.95, None)  # its score would fail the claim: it is not judged
    row = judge(claim, learned[0], draws=[learned[1], learned[2], stuck])
    assert row["status"] == "passed" and row["n_seeds"] == 3
    assert row["measured"] == pytest.approx(0.8)
    assert row["learned"].startswith("3 of 4 seeds learned (final loss ≤ 0.2 of the plateau); did not learn: 0.95")


def test_fewer_than_three_learned_seeds_is_did_not_learn_not_a_verdict():
    claim = _claim(seeds=4, learned=GATE)
    row = judge(claim, _draw(0.9, 0.1), draws=[_draw(0.9, 0.1), _draw(0.0, 0.9), _draw(0.0, 0.9)])
    assert row["status"] == DID_NOT_LEARN and "2 of 4 seeds learned" in row["reason"]


def test_the_gate_reads_one_value_per_seed_of_a_run_that_holds_its_seeds():
    claim = _claim(seeds=4, learned=GATE)
    summary = {"score": [0.9, 0.1, 0.8, 0.7], "loss_over_plateau": [0.1, 0.9, 0.1, 0.2], "escape": [5, None, 6, 7]}
    row = judge(claim, summary)
    assert row["status"] == "passed" and row["measured"] == pytest.approx(0.8)
    summary["score"][0] = -1.0  # a seed that learned and fails the test fails the claim
    assert judge(claim, summary)["status"] == "failed"


def test_a_run_level_gate_holds_for_each_seed_of_its_run():
    claim = _claim(seeds=4, learned=GATE)
    summary = {"score": [0.9, 0.8, 0.7, 0.6], "loss_over_plateau": 0.1, "escape": 5}
    row = judge(claim, summary)
    assert row["status"] == "passed" and row["n_seeds"] == 4
    assert judge(claim, summary | {"loss_over_plateau": 0.9})["status"] == DID_NOT_LEARN


def test_a_gate_with_another_count_of_seeds_is_a_registry_error_never_a_silent_undefined():
    claim = _claim(seeds=4, learned=GATE)
    summary = {"score": [0.9, 0.8, 0.7, 0.6], "loss_over_plateau": [0.1, 0.1], "escape": 5}
    with pytest.raises(ValueError, match="x: 2 gate values for 4 seeds of score"):
        judge(claim, summary)


def test_an_unfinished_draw_leaves_a_gated_claim_undefined():
    claim = _claim(seeds=4, learned=GATE)
    row = judge(claim, _draw(0.9, 0.1), draws=[_draw(0.9, 0.1), _draw(0.9, 0.1), None])
    assert row["status"] == "undefined"


def test_a_deterministic_gated_claim_is_judged_when_its_one_run_learned():
    claim = _claim(learned=GATE)
    assert judge(claim, _draw(0.9, 0.1))["status"] == "passed"
    assert judge(claim, _draw(0.9, 0.5))["status"] == DID_NOT_LEARN


@pytest.mark.parametrize(
    "control,control_value,status",
    [("c", 0.1, "passed"), ("c", 0.9, UNEARNED), ("", None, UNEARNED), ("c", None, UNEARNED)],
    ids=["control rejects", "control accepts", "no control", "control not run"],
)
def test_a_pass_stands_only_where_its_control_rejects(control, control_value, status):
    claim = _claim(control=control)
    row = judge(claim, {"score": 0.9})
    control_summary = None if control_value is None else {"score": control_value}
    row = earn(row | judge_control(claim, control_summary), claim)
    assert row["status"] == status
    if status == UNEARNED:
        assert "a pass not shown able to fail" in row["reason"]


def test_an_observation_is_grouped_apart_and_keeps_its_pass_without_a_control():
    claim = _claim(observation=True)
    row = earn(judge(claim, {"score": 0.9}) | judge_control(claim, None), claim)
    assert row["status"] == "passed" and row["group"] == "observation"
    assert judge(_claim(), {"score": 0.9})["group"] == "paper"


def test_a_failure_is_not_touched_by_the_control_gate():
    claim = _claim(control="c")
    row = earn(judge(claim, {"score": 0.1}) | judge_control(claim, {"score": 0.9}), claim)
    assert row["status"] == "failed"


def test_a_control_on_fewer_seeds_than_its_claim_is_judged_on_the_seeds_it_ran():
    # chen-fig6-a-log's case: the claim reads four per-seed values, its cheaper control runs one seed (or two)
    claim = _claim(seeds=4, control="c", key="score_per_seed")
    assert judge_control(claim, {"score_per_seed": [0.05]})["control_status"] == "rejects"
    assert judge_control(claim, {"score_per_seed": [0.9]})["control_status"] == "accepts"
    assert judge_control(claim, {"score_per_seed": [0.05, 0.1]})["control_status"] == "rejects"
    assert judge_control(claim, {"score_per_seed": []})["control_status"] == "undefined"
