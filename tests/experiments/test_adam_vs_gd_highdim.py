"""adam-vs-gd-highdim (docs/conventions.md#wang-6-3): the GD readings of loss (3)'s normalisation, the umbrella
verdict over them, the D = 1 Fig. 1 reference and the negative controls (docs/conventions.md#controls)."""

from dataclasses import replace

import pytest

from inductionlab import experiments
from inductionlab.analysis.verdicts import judge
from inductionlab.experiments.wang.adam_vs_gd_highdim import (
    D1,
    READINGS,
    STUCK_EVERYWHERE,
    _runs,
    _start,
    plateau_verdict,
)
from inductionlab.runs import RunContext

NAME = "adam-vs-gd-highdim"


def _cfg(**overrides):
    return experiments.configure(NAME, preset="smoke", overrides=overrides)


def _metrics(**overrides):
    cfg = _cfg(**overrides)
    return experiments.get(NAME).run(cfg, RunContext(threads=1, progress=False))


def test_each_reading_trains_its_own_loss_at_its_own_rate():
    cfg = _cfg()
    gd, adam, d1 = _runs(cfg)
    assert [(n, r, lr) for n, r, lr in gd.rows] == [
        ("sum", READINGS["sum"], cfg.gd_lr_sum),
        ("sum-ih", READINGS["sum-ih"], cfg.gd_lr),
        ("mean", READINGS["mean"], cfg.gd_lr),
    ]
    assert (gd.optimizer, gd.steps, adam.optimizer, adam.steps) == ("sgd", cfg.gd_steps, "adam", cfg.train.steps)
    assert adam.rows[0][1].loss == cfg.model.loss == "sum"  # Adam trains (3) as printed
    assert (d1.name, d1.D, d1.optimizer, d1.steps, d1.rows[0][2]) == (D1, 1, "sgd", cfg.gd_steps, cfg.gd_lr)


def test_swapping_the_optimizers_keeps_the_labels_budgets_and_the_d1_reference():
    cfg, swapped = _cfg(), _cfg(swap_optimizers=True)
    gd, adam, d1 = _runs(swapped)
    assert gd.optimizer == "adam" and {lr for *_, lr in gd.rows} == {cfg.adam_lr} and gd.steps == cfg.gd_steps
    assert [r for _, r, _ in gd.rows] == [r for _, r, _ in _runs(cfg)[0].rows]  # each row keeps its loss
    assert adam.optimizer == "sgd" and adam.rows == _runs(cfg)[0].rows[:1] and adam.steps == cfg.train.steps
    assert d1 == _runs(cfg)[2]


def test_the_d1_reference_is_the_fig1_toy_and_its_control_starts_on_the_saddle():
    cfg = _cfg()
    d1 = _runs(cfg)[2]
    m = experiments.configure(NAME).model
    fig1 = replace(m, D=1, reading="B")
    assert float(fig1.w_star()) == pytest.approx(0.49**2)  # Fig. 1: score w*² x_L y_s with w* = 0.49
    aligned, saddle = _start(cfg, d1, fig1), _start(_cfg(d1_start="saddle"), d1, fig1)
    assert aligned[0, 3] == aligned[0, 4] == pytest.approx(0.01)
    assert saddle[0, 3] == -saddle[0, 4] == pytest.approx(0.01)


def test_the_verdict_over_readings_names_the_ones_that_leave():
    stuck, left = {"ih_fraction_of_plateau": 0.99}, {"ih_fraction_of_plateau": 0.1}
    assert plateau_verdict({"sum": stuck, "mean": stuck}) == STUCK_EVERYWHERE
    assert plateau_verdict({"sum": left, "mean": left}) == "leaves under every reading"
    flips = plateau_verdict({"sum": stuck, "sum-ih": left, "mean": stuck})
    assert flips == "flips with the normalisation: stuck under sum, mean; leaves under sum-ih"
    assert plateau_verdict({}) is None


def test_the_plateau_claims_judge_each_reading_and_the_umbrella_fails_when_they_disagree():
    claims = {c.id: c for c in experiments.get(NAME).claims}
    gd = {"sum": {"ih_fraction_of_plateau": 0.99}, "sum-ih": {"ih_fraction_of_plateau": 0.1}}
    summary = {"gd": gd, "gd_plateau_verdict": plateau_verdict(gd)}
    assert judge(claims["wang-ws4-gd-plateau-sum"], summary)["status"] == "passed"
    assert judge(claims["wang-ws4-gd-plateau-sum-ih"], summary)["status"] == "failed"
    assert judge(claims["wang-ws4-gd-plateau-mean"], summary)["status"] == "undefined"
    row = judge(claims["wang-ws4-gd-plateau"], summary)
    assert row["status"] == "failed" and row["kind"] == "open" and "leaves under sum-ih" in row["measured_text"]
    assert judge(claims["wang-ws4-gd-plateau"], {"gd_plateau_verdict": STUCK_EVERYWHERE})["status"] == "passed"
    assert judge(claims["wang-ws4-gd-d1-leaves"], {"gd_d1_ih_fraction_of_plateau": 0.75})["status"] == "failed"


def test_every_paper_claim_names_a_control_and_the_adam_trajectory_claims_ask_adam_to_have_learned():
    exp = experiments.get(NAME)
    assert all(c.control for c in exp.claims if not c.observation)
    assert {c.control for c in exp.claims} == {c.name for c in exp.controls}
    gated = {c.id for c in exp.claims if c.learned is not None}
    assert gated == {"wang-ws4-adam-4gram-first", "wang-ws4-adam-plateaus"}
    assert all(c.cheaper for c in exp.controls if c.preset is not None)  # each says why its budget suffices


def test_the_induction_only_reading_leaves_the_4gram_part_and_freeze_p_holds_the_slope():
    metrics = _metrics().tables["metrics"]
    ih_only = metrics[(metrics.optimizer == "GD") & (metrics.reading == "sum-ih")]
    assert (ih_only.p == ih_only.p.iloc[0]).all() and (ih_only.g == ih_only.g.iloc[0]).all()
    assert ih_only.h.iloc[-1] != ih_only.h.iloc[0]
    frozen = _metrics(freeze_p=True).tables["metrics"]
    assert frozen.p.nunique() == 1 and frozen.g.nunique() > 1  # p stays at σ_init, g trains
