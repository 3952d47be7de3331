"""The negative controls of the Wang approximation and optimiser experiments break what their claims rest on
(docs/conventions.md#controls), and the summaries their claims read."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.analysis.verdicts import judge
from inductionlab.experiments.wang.adam_vs_gd_highdim import g4_lead
from inductionlab.experiments.wang.approx_gihn import _heads_summary
from inductionlab.experiments.wang.heads_dims import _summary as heads_dims_summary
from inductionlab.experiments.wang.wikitext import _corpus
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


def test_the_4gram_lead_is_read_where_the_ih_loss_first_halves():
    loss_ih = np.array([1.0, 0.8, 0.5, 0.2])
    assert g4_lead(np.array([2.0, 1.0, 0.5, 0.1]), loss_ih) == pytest.approx(0.25 / 0.5)
    assert g4_lead(np.array([2.0, 2.0, 2.0, 0.1]), loss_ih) == pytest.approx(2.0)
    assert g4_lead(np.ones(4), np.array([1.0, 0.9, 0.8, 0.7])) is None  # never halves: undefined


@pytest.mark.parametrize(
    "name", ["approx-ih2", "approx-ihn", "approx-gihn", "probe", "heads-dims", "adam-vs-gd-highdim", "wikitext"]
)
def test_every_claim_with_a_control_names_a_declared_one(name):
    module = experiments.get(name)
    declared = {c.name for c in module.controls}
    named = {c.control for c in module.claims if c.control}
    assert named == declared


def test_the_restated_ablation_claim_asks_both_heads_to_matter():
    claim = next(c for c in experiments.get("repeated-text").claims if c.id == "mech-ablation-overall")
    claim = replace(claim, seeds=0)  # one summary, not the mean over the experiment's data draws
    copies = {"copy_gain": 2.0}  # the draw learned to copy (the claim's precondition)
    assert judge(claim, {**copies, "ablation_smaller_over_larger": 3.14 / 3.23})["status"] == "passed"
    assert judge(claim, {**copies, "ablation_smaller_over_larger": 0.1})["status"] == "failed"


def test_heads_dims_reads_each_seeds_late_mean_and_start():
    rows = [(p, seed, step, loss) for p in ("2x2", "8x8") for seed in (1, 0) for step, loss in enumerate((4, 3, 2, 1))]
    metrics = pd.DataFrame(rows, columns=["pair", "seed", "step", "loss"])
    metrics.loc[(metrics.pair == "8x8") & (metrics.seed == 1), "loss"] *= 10
    summary = heads_dims_summary(metrics, late=2)
    assert summary["late_loss"] == {"2x2": [1.5, 1.5], "8x8": [1.5, 15.0]}  # ascending seed
    assert summary["start_loss"] == {"2x2": [4.0, 4.0], "8x8": [4.0, 40.0]}
    assert summary["final_loss"] == {"2x2": 1.0, "8x8": 5.5}


def test_heads_dims_seeds_draw_different_data_and_keep_seed_0():
    one = _summary("heads-dims", seeds=(0,), heads=(2,), dims=(2,))
    two = _summary("heads-dims", seeds=(0, 1), heads=(2,), dims=(2,))
    assert two["late_loss"]["2x2"][0] == one["late_loss"]["2x2"][0]  # seed 0 alone or beside seed 1: the same run
    assert two["late_loss"]["2x2"][0] != two["late_loss"]["2x2"][1]
    with pytest.raises(ValueError, match="train.seed"):
        experiments.configure("heads-dims", preset="smoke", overrides={"train.seed": 3})


def test_the_shuffled_wikitext_control_keeps_the_tokens_and_the_validation_split():
    cfg = experiments.configure("wikitext", preset="smoke")
    plain, shuffled = (
        _corpus(cfg),
        _corpus(experiments.configure("wikitext", preset="smoke", overrides={"shuffle": True})),
    )
    assert not bool((plain.train == shuffled.train).all())
    assert sorted(plain.train.tolist()) == sorted(shuffled.train.tolist())
    assert bool((plain.val == shuffled.val).all()) and plain.vocab == shuffled.vocab


def test_the_heads_dims_contrast_is_judged_over_four_seeds_and_fails_when_the_pairs_are_alike():
    claims = {c.id: c for c in experiments.get("heads-dims").claims}
    contrast, small = claims["wang-fig4-heads-dims"], claims["wang-fig4-small-fails"]
    learned = {"late_over_plateau": {"8x8": [0.1] * 4}}
    fits = {"late_loss": {"8x8": [0.005] * 4, "2x2": [0.05] * 4}, "start_loss": {"2x2": [0.065] * 4}, **learned}
    alike = {"late_loss": {"8x8": [0.05] * 4, "2x2": [0.05] * 4}, "start_loss": {"2x2": [0.065] * 4}, **learned}
    assert judge(contrast, fits)["status"] == "passed" and judge(contrast, alike)["status"] == "failed"
    assert judge(small, fits)["status"] == "passed"
    assert judge(small, {**fits, "late_loss": {"2x2": [0.005] * 4}})["status"] == "failed"
    two = {"late_loss": {"8x8": [0.005] * 2, "2x2": [0.05] * 2}, "late_over_plateau": {"8x8": [0.1] * 2}}
    assert judge(contrast, two)["status"] == "undefined"  # fewer seeds than the claim asks, learned or not
    stuck = {**fits, "late_over_plateau": {"8x8": [0.1, 0.9, 0.9, 0.1]}, "escape_step": {"8x8": [900, None, None, 800]}}
    row = judge(contrast, stuck)
    assert row["status"] == "did not learn" and "2 of 4 seeds learned" in row["learned"]


def test_the_wikitext_order_claim_is_not_judged_on_a_cpu():
    claim = next(c for c in experiments.get("wikitext").claims if c.id == "wang-fig5-p-first-cpu")
    assert judge(claim, {"t_half_p_norm": 1558.0, "t_double_wkq_norm": None})["status"] == "not judged at this scale"
