import math

import pandas as pd
import pytest

from inductionlab.experiments.markov_full import AUTHORS_A, AUTHORS_P, seed_spread


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
    assert s["authors_z"]["{1,3}"] is None  # no spread: no z-score
    assert s["p_selected_per_seed"]["1"]["{1,2}"] == 0.7
    assert not any(math.isnan(v) for v in s["p_selected_mean"].values())


def test_spread_is_computed_per_loss_and_the_headline_is_the_first():
    from inductionlab.cli import resolve
    from inductionlab.experiments import markov_full
    from inductionlab.runs import RunContext

    cfg = resolve("markov-full", "smoke", {"seeds": "2024,2025", "train.epochs": "2"})
    s = markov_full.run(cfg, RunContext(threads=1)).summary
    assert set(s["by_loss"]) == {"softmax_of_probs", "ce"}
    assert s["authors_z"] == s["by_loss"]["softmax_of_probs"]["authors_z"]
    assert s["by_loss"]["ce"]["p_selected_mean"] != s["by_loss"]["softmax_of_probs"]["p_selected_mean"]
