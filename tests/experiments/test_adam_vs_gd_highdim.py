"""adam-vs-gd-highdim (docs/conventions.md#wang-6-3): GD on the mean reading of loss (3) at Fig. 1's budget, the
other readings as a diagnostic preset, the D = 1 Fig. 1 reference and the negative controls
(docs/conventions.md#controls)."""

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


def test_the_default_is_fig1s_gd_on_the_mean_and_the_readings_preset_adds_the_diagnostic_rows():
    default = experiments.configure(NAME)
    assert (default.gd_readings, default.gd_steps, default.model.loss) == (("mean",), 100_000, "mean")
    gd, adam, d1 = _runs(default)
    assert gd.rows == (("mean", READINGS["mean"], 0.1),) and adam.rows[0][1].loss == "mean"  # Adam on GD's loss
    assert (d1.name, d1.D, d1.optimizer, d1.steps, d1.rows[0][2]) == (D1, 1, "sgd", 100_000, 0.1)
    cfg = experiments.configure(NAME, preset="readings")
    assert [(n, r, lr) for n, r, lr in _runs(cfg)[0].rows] == [
        ("mean", READINGS["mean"], cfg.gd_lr),
        ("sum", READINGS["sum"], cfg.gd_lr_sum),
        ("sum-ih", READINGS["sum-ih"], cfg.gd_lr),
    ]


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


def test_the_plateau_claim_reads_the_mean_reading_alone():
    claims = {c.id: c for c in experiments.get(NAME).claims}
    assert not any(i.startswith("wang-ws4-gd-plateau-") for i in claims)  # the other readings judge nothing
    assert all(c.key.startswith("gd.mean.") for c in claims.values() if c.key.startswith("gd."))
    gd = {"mean": {"ih_fraction_of_plateau": 0.99}, "sum-ih": {"ih_fraction_of_plateau": 0.1}}
    draws = experiments.get(NAME).draws - 1  # each claim is judged over the run and its data draws

    def verdict(claim: str, summary: dict) -> dict:
        return judge(claims[claim], summary, draws=[summary] * draws)

    assert verdict("wang-ws4-gd-plateau", {"gd": gd})["status"] == "passed"
    row = verdict("wang-ws4-gd-plateau", {"gd": {"mean": {"ih_fraction_of_plateau": 0.5}}})
    assert row["status"] == "failed" and row["kind"] == "open"
    assert verdict("wang-ws4-gd-d1-leaves", {"gd_d1_ih_fraction_of_plateau": 0.75})["status"] == "failed"


def test_every_paper_claim_names_a_control_and_the_adam_trajectory_claims_ask_adam_to_have_learned():
    exp = experiments.get(NAME)
    assert all(c.control for c in exp.claims if not c.observation)
    assert {c.control for c in exp.claims} == {c.name for c in exp.controls}
    gated = {c.id for c in exp.claims if c.learned is not None}
    assert gated == {"wang-ws4-adam-4gram-first", "wang-ws4-adam-plateaus"}
    assert all(c.cheaper for c in exp.controls if c.preset is not None)  # each says why its budget suffices


def test_the_induction_only_reading_leaves_the_4gram_part_and_freeze_p_holds_the_slope():
    metrics = _metrics(gd_readings=("mean", "sum", "sum-ih")).tables["metrics"]
    ih_only = metrics[(metrics.optimizer == "GD") & (metrics.reading == "sum-ih")]
    assert (ih_only.p == ih_only.p.iloc[0]).all() and (ih_only.g == ih_only.g.iloc[0]).all()
    assert ih_only.h.iloc[-1] != ih_only.h.iloc[0]
    frozen = _metrics(freeze_p=True).tables["metrics"]
    assert frozen.p.nunique() == 1 and frozen.g.nunique() > 1  # p stays at σ_init, g trains
