"""The claims and negative controls of lazy-to-rich (Wang et al. Fig. 2, Lemmas 5.3–5.4; docs/conventions.md#controls):
every control configures, breaks a mechanism rather than setting the measured value, and its measured numbers fail
the claim's own test on a defined value."""

from dataclasses import replace

import pytest

from inductionlab import experiments
from inductionlab.analysis.verdicts import judge, judge_control
from inductionlab.runs import RunContext


def _summary(name: str = "lazy-to-rich", **overrides) -> dict:
    cfg = experiments.configure(name, preset="smoke", overrides=overrides)
    return experiments.get(name).run(cfg, RunContext(threads=1, progress=False)).summary


def _claim(claim_id: str, name: str = "lazy-to-rich"):
    """The claim judged on one run: its statement's logic (the mean over data draws: tests/test_reproduce.py)."""
    return replace(next(c for c in experiments.get(name).claims if c.id == claim_id), seeds=0)


@pytest.mark.parametrize("name", ["lazy-to-rich", "lazy-to-rich-boolean"])
def test_every_control_configures_and_is_named_by_a_claim(name):
    module = experiments.get(name)
    assert {c.control for c in module.claims if c.control} == {c.name for c in module.controls}
    for control in module.controls:
        experiments.configure(name, preset=control.preset, overrides=dict(control.overrides))


def test_the_kicked_companion_leaves_the_seeds_runs_alone_and_keeps_its_gap():
    kicked, alone = _summary(), _summary(kick=0)
    assert alone["kicked_gap_change"] is None
    assert 0 < kicked["kicked_gap_change"] < 1e-3
    assert kicked["final"] == alone["final"]


def test_weight_decay_breaks_the_conservation_of_lemma_5_4():
    decayed = _summary(weight_decay=1.0)  # lr·λ = 0.1: the gap shrinks by 0.81 a step
    claim = _claim("wang-lemma5.4-balance")
    assert decayed["kicked_gap_change"] > 0.5
    assert judge_control(claim, decayed)["control_status"] == "rejects"


# Measured on the quick preset, seed 0 (the claims' own runs, and the controls' runs at their overrides).
MEASURED = {
    "wang-fig2-lazy-first": ({"T_I": 205.31, "T_50": 2305.86}, {"T_I": 201.15, "T_50": 283.45}),  # wkq-grown
    "wang-thm5.5-flow": (  # wkq-late
        {"T_50": 2305.86, "gf_phases": {"exact": {"T_50": 2196.16}}},
        {"T_50": 3263.64, "gf_phases": {"exact": {"T_50": 2196.16}}},
    ),
    "wang-fig2-wkq": ({"final": {"w_KQ": 0.48876}}, {"final": {"w_KQ": 0.59997}}),  # other-w-star
    "wang-lemma5.4-balance": ({"kicked_gap_change": 6.9e-4}, {"kicked_gap_change": 0.535}),  # layer2-decay
    # 5000 Stage-I steps (not the stage1 preset's 100k): p̃ 0.067 as trained, −0.019 with w_V1 = −σ_init
    "wang-lemma5.3-stage1": (None, {"p_tilde_after_stage1": -0.019}),
}


@pytest.mark.parametrize("claim_id", sorted(MEASURED))
def test_the_measured_runs_pass_and_their_controls_reject(claim_id):
    run, control = MEASURED[claim_id]
    claim = _claim(claim_id)
    if run is not None:
        assert judge(claim, run)["status"] == "passed"
    if control is not None:
        assert judge_control(claim, control)["control_status"] == "rejects"


def test_the_literal_bands_reject_the_p_tilde_infinite_fixed_point():
    """At p̃ = 0.94 the p̃ = ∞ answers w_KQ = w*, w_V1 = g* are the ratios 1/√(1+e^{−p̃}), 1/(1+e^{−p̃})."""
    r = 2.718281828**-0.94
    assert (
        judge(_claim("wang-fig2-literal-wkq"), {"literal": {"w_KQ_over_predicted": (1 + r) ** -0.5}})["status"]
        == "failed"
    )
    assert judge(_claim("wang-fig2-literal-wv1"), {"literal": {"w_V1_over_predicted": 1 / (1 + r)}})["status"] == (
        "failed"
    )
