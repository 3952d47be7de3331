import pandas as pd
import pytest

from inductionlab.experiments.across.markov_transformer import chain_summary


def _metrics(weights: dict[tuple[int, int], float]) -> pd.DataFrame:
    row = {"run": 0, "step": 10, "previous_token_score": 0.9, "induction_score": 0.9}
    for k, name in enumerate(("uniform", "unigram", "bigram", "bayes")):
        row[f"kl_{name}"], row[f"tv_{name}"] = 1.0 - 0.2 * k, 0.1
    return pd.DataFrame([row | {f"lag_h{h}_{j}": w for (h, j), w in weights.items()}])


def test_parent_mass_averages_each_heads_attention_on_the_parent_lags():
    w = {(0, 1): 0.9, (0, 2): 0.05, (0, 3): 0.05, (1, 1): 0.7, (1, 2): 0.2, (1, 3): 0.1}
    s = chain_summary(_metrics(w), "1+2", 3, 2)
    assert s["layer1_parent_mass"] == pytest.approx((0.95 + 0.9) / 2)
    assert s["layer1_lag_weights"]["head1"] == {"1": 0.7, "2": 0.2, "3": 0.1}
    assert s["layer1_top_lags"] == [1, 1] and not s["layer1_lags_are_parents"]
    assert chain_summary(_metrics(w), "1+3", 3, 2)["layer1_parent_mass"] == pytest.approx((0.95 + 0.8) / 2)
