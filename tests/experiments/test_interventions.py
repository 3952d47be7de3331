"""interventions' negative control (``act`` False, docs/conventions.md#controls): every toy variant of a schedule is
its baseline and the ablated transformer trains unablated, so each is trained once and relabelled — the numbers of
training each again."""

from __future__ import annotations

import pandas as pd

from inductionlab import experiments
from inductionlab.experiments.across import interventions
from inductionlab.experiments.across.interventions import arms
from inductionlab.runs import RunContext


def _run(monkeypatch, act: bool, reuse: bool):
    calls: list[str] = []
    train_toy, variant, toy = interventions._train_toy, arms.transformer_variant, interventions._toy

    def counted_toy(*args, **kwargs):
        calls.append("toy")
        return train_toy(*args, **kwargs)

    def counted_variant(*args, **kwargs):
        calls.append("transformer")
        return variant(*args, **kwargs)

    monkeypatch.setattr(interventions, "_train_toy", counted_toy)
    monkeypatch.setattr(arms, "transformer_variant", counted_variant)
    if not reuse:  # every variant trained anew, as before the reuse
        monkeypatch.setattr(interventions, "_toy", lambda *a: toy(*a[:-1], {}))
    cfg = experiments.configure("interventions", preset="smoke", overrides={"act": act})
    results = interventions.run(cfg, RunContext(threads=1))
    monkeypatch.undo()
    return results, calls


def test_the_control_trains_each_schedule_once_and_gives_the_numbers_of_training_each_variant(monkeypatch):
    reused, calls = _run(monkeypatch, act=False, reuse=True)
    assert sorted(calls) == ["toy", "toy", "transformer"]
    again, calls_again = _run(monkeypatch, act=False, reuse=False)
    assert sorted(calls_again) == ["toy"] * 5 + ["transformer"]
    assert reused.summary == again.summary
    for name in ("metrics", "transformer"):
        pd.testing.assert_frame_equal(reused.tables[name], again.tables[name])


def test_with_the_interventions_every_variant_trains(monkeypatch):
    _, calls = _run(monkeypatch, act=True, reuse=True)
    assert sorted(calls) == ["toy"] * 5 + ["transformer"] * 2


def test_the_chen_section_is_the_same_whatever_the_other_sections_budgets():
    """mech-chen-rpe-frozen's control cuts the toy and transformer sections (arms.OTHER_SECTIONS_CUT): they draw
    from their own generators, so the Chen section's numbers do not move."""
    base = {"chen_lag_agnostic": False}
    longer = {**base, "train.stage2_steps": 120, "tf_train.steps": 12, "t0": 4.0}
    chen = [
        interventions.run(experiments.configure("interventions", preset="smoke", overrides=o), RunContext(threads=1))
        for o in (base, longer)
    ]
    assert chen[0].summary["chen_rpe_frozen"] == chen[1].summary["chen_rpe_frozen"]
    assert chen[0].summary["transformer_layer1_ablated"] != chen[1].summary["transformer_layer1_ablated"]
    assert set(arms.OTHER_SECTIONS_CUT) <= set(experiments.get("interventions").presets["smoke"])
