import math

import pandas as pd
import pytest

from inductionlab.experiments.chen.markov_full import AUTHORS_A, AUTHORS_P, SPREAD_FLOOR, seed_spread


def test_seed_spread_is_the_mean_and_sample_std_of_the_last_epoch_with_the_authors_z_scores():
    rows = []
    for run, (p12, a) in enumerate([(0.5, 0.6), (0.7, 0.8), (0.6, 0.7)]):
        rows.append({"run": run, "epoch": 10, "p_{1,2}": p12, "p_{1,3}": 0.2, "p_{2,3}": 0.8 - p12, "a": a})
        rows.append({"run": run, "epoch": 5, "p_{1,2}": 0.0, "p_{1,3}": 0.0, "p_{2,3}": 0.0, "a": 0.0})
    s = seed_spread(pd.DataFrame(rows))
    assert s["p_selected_mean"]["{1,2}"] == pytest.approx(0.6)
    assert s["p_selected_std"]["{1,2}"] == pytest.approx(0.1)  # sample standard deviation (ddof 1)
    assert s["a_mean"] == pytest.approx(0.7) and s["a_std"] == pytest.approx(0.1)
    assert s["authors_z"]["{1,2}"] == pytest.approx((AUTHORS_P["{1,2}"] - 0.6) / 0.1)
    assert s["authors_z"]["a"] == pytest.approx((AUTHORS_A - 0.7) / 0.1)
    assert s["authors_z"]["{1,3}"] == pytest.approx((AUTHORS_P["{1,3}"] - 0.2) / SPREAD_FLOOR)  # a floored spread
    assert s["p_selected_per_seed"]["1"]["{1,2}"] == 0.7
    assert s["p_selected_seeds"]["{1,2}"] == [0.5, 0.7, 0.6]  # what the selection claims judge: their mean, n = 3
    assert not any(math.isnan(v) for v in s["p_selected_mean"].values())


def test_spread_is_computed_per_loss_and_the_headline_is_the_first():
    from inductionlab.cli import resolve
    from inductionlab.experiments.chen import markov_full
    from inductionlab.runs import RunContext

    cfg = resolve("markov-full", "smoke", {"seeds": "2024,2025", "train.epochs": "2"})
    s = markov_full.run(cfg, RunContext(threads=1)).summary
    assert set(s["by_loss"]) == {"softmax_of_probs", "ce"}
    assert s["authors_z"] == s["by_loss"]["softmax_of_probs"]["authors_z"]
    assert s["by_loss"]["ce"]["p_selected_mean"] != s["by_loss"]["softmax_of_probs"]["p_selected_mean"]
    assert set(s["authors_config"]) == {"softmax_of_probs", "ce"}  # every loss again at the authors' configuration
    assert s["authors_config"]["ce"]["p_selected_mean"] != s["by_loss"]["ce"]["p_selected_mean"]


def test_one_seed_gives_no_z_score():
    rows = [{"run": 0, "epoch": 10, "p_{1,2}": 0.5, "p_{1,3}": 0.2, "p_{2,3}": 0.3, "a": 0.6}]
    assert seed_spread(pd.DataFrame(rows))["authors_z"]["a"] is None


def test_the_authors_configuration_is_their_stored_runs():
    from inductionlab.experiments.chen.markov_full import CONFIG

    model = CONFIG.authors_model.build(3)
    assert (model.proj_init, model.layernorm, model.variant, model.norm) == (0.001, "shared", "full", "layernorm")
    assert CONFIG.model.proj_init == 0.01 and CONFIG.model.layernorm == "per_head"  # the default keeps its numbers


def test_a_shared_layernorm_is_a_per_head_one_with_the_same_parameters_on_every_head():
    import torch

    from inductionlab.models import chen

    shared = chen.ChenConfig(variant="full", norm="layernorm", w_plus=1.0, w_minus=0.01, layernorm="shared")
    per_head = chen.ChenConfig(variant="full", norm="layernorm", w_plus=1.0, w_minus=0.01)
    p = chen.init_params(shared, 1)
    assert p["ln_gamma"].shape == (1, 1, 3)  # one LayerNorm's parameters, broadcast over the heads
    p["ln_gamma"], p["ln_beta"] = torch.tensor([[[1.5, 0.5, 2.0]]]), torch.tensor([[[0.1, -0.2, 0.3]]])
    q = {**p, "ln_gamma": p["ln_gamma"].expand(1, 3, 3), "ln_beta": p["ln_beta"].expand(1, 3, 3)}
    assert torch.equal(chen.kernel_table(shared, p), chen.kernel_table(per_head, q))
