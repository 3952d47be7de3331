"""The repeated-text experiment: its ablation figure names a head an induction head only at the monitor's threshold;
its control ``plain-text`` trains on plain text but measures exactly what the repeated run measures; the circuit's
ablation costs are read against the copying gain (docs/conventions.md#controls)."""

import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.analysis.claims import MIN_LEARNED
from inductionlab.analysis.verdicts import judge
from inductionlab.experiments.wang import repeated_text
from inductionlab.runs import RunContext

MEASURED = ["val_loss", "loss_repeated", "loss_other", "induction_score", "previous_token_score"]


@pytest.mark.parametrize("score, named", [(0.62, "induction head (1, 0), score 0.62"), (0.03, "no induction head")])
def test_a_head_is_an_induction_head_only_at_the_monitors_threshold(score, named):
    scores = pd.Series([0.01, score, 0.02], index=pd.MultiIndex.from_tuples([(0, 0), (1, 0), (1, 1)]))
    text = repeated_text._induction_head(scores)
    assert text.startswith(named) and str(repeated_text.INDUCTION_THRESHOLD) in text
    assert repeated_text.INDUCTION_THRESHOLD == 0.3


def _metrics(**overrides) -> pd.DataFrame:
    cfg = experiments.configure("repeated-text", preset="smoke", overrides=overrides)
    return experiments.get("repeated-text").run(cfg, RunContext(threads=1, progress=False)).tables["metrics"]


def test_plain_text_changes_the_training_sequences_not_the_measurement():
    """At step 0 the two runs hold the same parameters, so every measured column agrees bit for bit: the same
    repeated validation batches and head-diagnostic tokens; later the training data differ, and so do the models."""
    intact, plain = _metrics(), _metrics(repeat=False)
    first = [m[m.step == 0][MEASURED].to_numpy() for m in (intact, plain)]
    assert (first[0] == first[1]).all()
    last = [m[m.step == m.step.max()][MEASURED].to_numpy() for m in (intact, plain)]
    assert (last[0] != last[1]).any()


def _table(costs: dict[tuple[int, int], float], induction: dict[tuple[int, int], float]) -> pd.DataFrame:
    rows = [
        {
            "layer": l,
            "head": h,
            "loss_change_repeated": cost,
            "induction_score": induction.get((l, h), 0.0),
            "previous_token_score": 0.9 if (l, h) == (0, 1) else 0.1,
        }
        for (l, h), cost in costs.items()
    ]
    return pd.DataFrame(rows)


def test_two_heads_that_do_nothing_are_not_a_circuit():
    """The floor of the larger cost is half the copying gain: two ablations of 0.02 nats beside a gain of 3 nats
    give a ratio near 0, where the old 0.01-nat floor gave 1."""
    idle = _table({(0, 0): 0.0, (0, 1): 0.02, (1, 0): 0.02, (1, 1): 0.0}, {(1, 0): 0.8})
    circuit = repeated_text._circuit(idle, gain=3.0)
    assert circuit["ablation_smaller_over_larger"] == pytest.approx(0.02 / 1.5)
    assert circuit["induction_ablation_margin"] == pytest.approx(0.02 / 3.0)
    working = _table({(0, 0): 0.02, (0, 1): 2.1, (1, 0): 2.0, (1, 1): -0.4}, {(1, 0): 0.8})
    circuit = repeated_text._circuit(working, gain=3.0)
    assert circuit["ablation_cost"] == {"induction": 2.0, "previous_token": 2.1}
    assert circuit["ablation_smaller_over_larger"] == pytest.approx(2.0 / 2.1)
    assert circuit["induction_ablation_margin"] == pytest.approx(2.0 / 3.0)  # the next head's −0.4 is no copying


def test_ablations_that_lower_the_loss_carry_no_copying():
    """A model that does not copy (the plain-text control's pattern on the ledger): every last-layer ablation lowers
    the repeated tokens' loss, the top induction head's least.  Its head is not "ahead of the next" in copying: its
    margin is its own cost, ≤ 0, however much more the other ablation helps."""
    helped = _table({(0, 0): -0.2, (0, 1): -0.37, (1, 0): -0.45, (1, 1): -1.04}, {(1, 0): 0.002})
    circuit = repeated_text._circuit(helped, gain=0.12)
    assert circuit["induction_ablation_margin"] == pytest.approx(-0.45 / repeated_text.MIN_GAIN)
    assert circuit["ablation_smaller_over_larger"] < 0
    assert circuit["top_ablation_head"] is None and circuit["top_ablation_head_last_layer"] is None
    assert not circuit["top_ablation_is_top_induction"] and not circuit["top_ablation_overall_is_top_induction"]


def test_a_next_head_that_costs_copying_narrows_the_margin():
    rival = _table({(0, 0): 0.02, (0, 1): 2.1, (1, 0): 2.0, (1, 1): 0.5}, {(1, 0): 0.8})
    circuit = repeated_text._circuit(rival, gain=3.0)
    assert circuit["induction_ablation_margin"] == pytest.approx((2.0 - 0.5) / 3.0)
    assert circuit["top_ablation_head_last_layer"] == [1, 0] and circuit["top_ablation_is_top_induction"]
    assert circuit["top_ablation_head"] == [0, 1] and not circuit["top_ablation_overall_is_top_induction"]


def test_a_model_that_does_not_copy_is_measured_against_the_least_gain_that_counts():
    small = _table({(0, 0): 0.0, (0, 1): 0.03, (1, 0): 0.04, (1, 1): 0.0}, {(1, 0): 0.1})
    circuit = repeated_text._circuit(small, gain=0.01)
    scale = repeated_text.MIN_GAIN
    assert circuit["ablation_smaller_over_larger"] == pytest.approx(0.03 / (repeated_text.ABLATION_FLOOR * scale))
    assert circuit["induction_ablation_margin"] == pytest.approx(0.04 / scale)


def test_a_draw_that_did_not_copy_is_not_judged_on_the_circuit():
    claims = {c.id: c for c in experiments.get("repeated-text").claims}
    learned = {"copy_gain": 2.5, "ablation_smaller_over_larger": 0.9, "induction_ablation_margin": 0.5}
    idle = {**learned, "copy_gain": 0.1}
    for name in ("mech-ablation-overall", "mech-ablation-last-layer", "wang-fig5r-induction"):
        n = max(claims[name].seeds, MIN_LEARNED)  # judged on the draws that learned, at least MIN_LEARNED of them
        learned["final_induction_score"] = idle["final_induction_score"] = 0.6
        assert judge(claims[name], learned, draws=[learned] * (n - 1) + [idle])["status"] == "passed"
        assert judge(claims[name], learned, draws=[learned] * (n - 2) + [idle])["status"] == "did not learn"
        assert judge(claims[name], idle, draws=[idle] * (n - 2) + [learned])["status"] == "did not learn"


def test_every_paper_claim_names_a_control_that_runs_at_the_default_preset():
    exp = experiments.get("repeated-text")
    controls = {c.name: c for c in exp.controls}
    assert {c.control for c in exp.claims} == set(controls)
    assert all(controls[c.control].preset is None for c in exp.claims)
