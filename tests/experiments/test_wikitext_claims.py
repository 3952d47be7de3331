"""The wikitext claims: each names a mechanism-free control, a cheaper one says why, and each is judged only on
draws whose validation loss fell (docs/conventions.md#controls)."""

from inductionlab import experiments
from inductionlab.analysis.verdicts import judge


def test_each_claim_names_a_control_that_runs_at_the_default_or_says_why_not():
    exp = experiments.get("wikitext")
    controls = {c.name: c for c in exp.controls}
    for claim in exp.claims:
        control = controls[claim.control]
        assert control.preset is None or control.cheaper, (claim.id, control.name)


def test_a_draw_whose_loss_did_not_fall_did_not_learn():
    claim = next(c for c in experiments.get("wikitext").claims if c.id == "wang-fig5-p-learned")
    fell = {"p_relative_growth": 18.0, "final": {"val_loss": 4.3}, "initial": {"val_loss": 7.6}}
    flat = {**fell, "final": {"val_loss": 7.0}}
    assert judge(claim, fell, draws=[fell, fell, fell])["status"] == "passed"
    assert judge(claim, flat, draws=[flat, flat, fell])["status"] == "did not learn"
    doubled = {**fell, "p_relative_growth": 1.5}  # doubling: below the tenfold bar (docs/conventions.md#calibration)
    assert judge(claim, doubled, draws=[doubled, doubled])["status"] == "failed"
