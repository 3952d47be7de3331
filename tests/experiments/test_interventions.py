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
