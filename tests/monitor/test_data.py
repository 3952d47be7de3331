"""``RepeatedWindows``: the data of the head-in-a-minute recipe (docs/monitor.md#a-head-in-a-minute)."""

import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.monitor import RepeatedWindows, repeated_window_tokens


def test_each_sequence_repeats_a_window_of_its_own_length_and_the_draw_is_the_seeds():
    data = RepeatedWindows(200, vocab=64, L=32, periods=(4, 16), seed=3)
    assert len(data) == 200 and data[0]["input_ids"].shape == (32,)
    assert torch.equal(data[5]["input_ids"], data[5]["labels"])
    periods = set()
    for i in range(len(data)):
        x = data[i]["input_ids"]
        k = next(k for k in range(4, 17) if torch.equal(x[k:], x[:-k]))  # the smallest shift that maps x onto itself
        periods.add(k)
    assert min(periods) == 4 and max(periods) == 16  # a period per sequence, over the whole range
    assert torch.equal(RepeatedWindows(200, 64, 32, (4, 16), 3).tokens, data.tokens)
    assert not torch.equal(RepeatedWindows(200, 64, 32, (4, 16), 4).tokens, data.tokens)


def test_the_shuffled_control_recurs_without_repeating_what_follows():
    x = repeated_window_tokens(64, 32, (8, 8), (50,), torch.Generator().manual_seed(0), shuffled=True)
    assert all(sorted(row[:8].tolist()) == sorted(row[8:16].tolist()) for row in x)  # the same tokens, each repeat
    assert sum(torch.equal(row[:8], row[8:16]) for row in x) < 5  # in an order of its own


def test_it_is_a_datasets_dataset_too_and_bad_sizes_are_refused():
    pytest.importorskip("datasets")
    data = RepeatedWindows(10, vocab=20, L=16, periods=(2, 8))
    hf = data.to_datasets()
    assert len(hf) == 10 and torch.equal(hf[3]["input_ids"], data[3]["input_ids"])
    for bad, field in [({"n": 0}, "n"), ({"vocab": 1}, "vocab"), ({"periods": (2, 32)}, "periods")]:
        with pytest.raises(ConfigError, match=field):
            RepeatedWindows(**({"n": 4, "L": 32} | bad))
