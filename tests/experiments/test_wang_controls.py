"""The negative controls of the Wang approximation and optimiser experiments break what their claims rest on
(docs/conventions.md#controls), and the summaries their claims read."""

import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.analysis.claims import judge
from inductionlab.experiments.adam_vs_gd_highdim import _runs
from inductionlab.experiments.approx_gihn import _heads_summary
from inductionlab.runs import RunContext


def _summary(name: str, **overrides) -> dict:
    cfg = experiments.configure(name, preset="smoke", overrides=overrides)
    return experiments.get(name).run(cfg, RunContext(threads=1, progress=False)).summary


@pytest.mark.parametrize("name", ["approx-ih2", "approx-ihn", "approx-gihn"])
def test_without_the_previous_token_copy_the_construction_does_not_improve(name):
    summary = _summary(name, copy_previous=False)
    if name == "approx-ih2":
        assert summary["error_ratio_p2_p7"] == pytest.approx(1.0)  # the slope p no longer matters
    elif name == "approx-ihn":
        assert summary["max_error_over_bound"] > 1
    else:
        assert summary["error_fewest_over_most_heads"] == pytest.approx(1.0)  # the heads no longer matter


def test_the_heads_summary_compares_the_fewest_with_the_most_heads():
    heads = pd.DataFrame({"H": [1, 2, 4], "max_error": [0.4, 0.02, 0.01]})
    summary = _heads_summary(heads)
    assert summary["error_by_H"] == {"1": 0.4, "2": 0.02, "4": 0.01}
    assert summary["error_fewest_over_most_heads"] == pytest.approx(40.0)


def test_swapping_the_optimizers_keeps_the_labels_and_the_budgets():
    cfg = experiments.configure("adam-vs-gd-highdim", preset="smoke", overrides={"gd_steps": 40})
    assert _runs(cfg) == [("GD", "sgd", cfg.gd_lr, 40), ("Adam", "adam", cfg.adam_lr, cfg.train.steps)]
    swapped = experiments.configure(
        "adam-vs-gd-highdim", preset="smoke", overrides={"gd_steps": 40, "swap_optimizers": True}
    )
    assert _runs(swapped) == [("GD", "adam", cfg.adam_lr, 40), ("Adam", "sgd", cfg.gd_lr, cfg.train.steps)]


@pytest.mark.parametrize(
    "name", ["approx-ih2", "approx-ihn", "approx-gihn", "probe", "heads-dims", "adam-vs-gd-highdim"]
)
def test_every_claim_with_a_control_names_a_declared_one(name):
    module = experiments.get(name)
    declared = {c.name for c in module.controls}
    named = {c.control for c in module.claims if c.control}
    assert named == declared


def test_the_restated_ablation_claim_asks_both_heads_to_matter():
    claim = next(c for c in experiments.get("repeated-text").claims if c.id == "mech-ablation-overall")
    assert judge(claim, {"ablation_smaller_over_larger": 3.14 / 3.23})["status"] == "passed"
    assert judge(claim, {"ablation_smaller_over_larger": 0.1})["status"] == "failed"
