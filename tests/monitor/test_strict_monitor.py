"""The monitor checks what an adapter returns — shapes, causal normalised rows, finiteness — naming the adapter and
the layer; validates its config (integers, a period whose patterns fit in memory) and the token ids against the
vocabulary; and with no finite head score names no best head."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.models import transformer as tf
from inductionlab.monitor import AdapterError, FunctionAdapter, Monitor, MonitorConfig, phase_change
from inductionlab.monitor.phase import phase_line
from inductionlab.monitor.settings import PATTERN_BYTES

SMALL = MonitorConfig(batch=3, period=6, vocab=11, every=5)


def _good():
    """(cfg, params) of a small toolkit transformer: 2 layers, 2 heads, vocabulary 11."""
    cfg = tf.TransformerConfig(vocab=11, d_model=8, n_layers=2, n_heads=2, ffn_width=(0, 6), readout="all")
    return cfg, tf.init_params(cfg, 1, torch.Generator().manual_seed(3), torch.float64)


def _adapter(corrupt=None, vocab=11, **kw):
    """A FunctionAdapter named "fake" around the toolkit transformer; ``corrupt(logits, patterns)`` changes what
    it returns once ``corrupt`` is switched on (``adapter.bad = True``)."""
    cfg, params = _good()

    def run(tokens):
        logits, cache = tf.forward(cfg, params, tokens, keep=True)
        out = logits[0], [cache[f"blocks.{l}.attn.hook_pattern"][0] for l in range(2)]
        return corrupt(*out) if adapter.bad and corrupt else out

    adapter = FunctionAdapter(2, 2, run, vocab=vocab, name="fake", **kw)
    adapter.bad = False
    return adapter


def _set(patterns, layer, value):
    patterns[layer] = value
    return patterns


# case → (corrupt(logits, patterns) → (logits, patterns), what the message says, the layer it names or None)
BAD = {
    "3-D pattern": (lambda lo, p: (lo, _set(p, 1, p[1][:, 0])), r"must be \(B, H, L, L\) = \(3, 2, 12, 12\)", 1),
    "mixed head counts": (lambda lo, p: (lo, _set(p, 1, p[1][:, :1])), "same number of heads", 1),
    "no patterns": (lambda lo, p: (lo, []), "returned 0 attention patterns", None),
    "too many layers": (lambda lo, p: (lo, [*p, p[0]]), "returned 3 attention patterns", None),
    "unnormalised": (lambda lo, p: (lo, _set(p, 0, 2 * p[0])), "must sum to 1 .* over the keys j ≤ i", 0),
    "raw scores": (lambda lo, p: (lo, _set(p, 1, torch.randn_like(p[1]).tril())), "negative|sum to 1", 1),
    "later keys": (lambda lo, p: (lo, _set(p, 0, p[0].transpose(-1, -2))), r"later keys \(j > i\)", 0),
    "NaN pattern": (lambda lo, p: (lo, _set(p, 1, torch.full_like(p[1], math.nan))), "NaN or infinite weights", 1),
    "NaN logits": (lambda lo, p: (torch.full_like(lo, math.nan), p), "logits hold .* NaN", None),
    "2-D logits": (lambda lo, p: (lo[:, -1], p), r"logits must be \(B, L, V\)", None),
    "logits of a smaller vocabulary": (lambda lo, p: (lo[..., :4], p), "beyond the model's vocabulary size 4", None),
}


@pytest.mark.parametrize("case", list(BAD))
def test_what_an_adapter_returns_is_checked_naming_the_adapter_and_layer(case):
    corrupt, says, layer = BAD[case]
    adapter = _adapter(corrupt)
    monitor = Monitor(adapter, SMALL)
    monitor.measure(0)
    adapter.bad = True
    with pytest.raises(AdapterError, match=says) as caught:
        monitor.measure(5)
    assert "adapter fake" in str(caught.value)
    if layer is not None:
        assert f"layer {layer}:" in str(caught.value)
    assert isinstance(caught.value, ConfigError)
    assert monitor.steps.step.tolist() == [0] and len(monitor.heads) == 4  # the good measurement kept, no half row


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("every", 1.5, "every: must be an integer, got 1.5"),
        ("every", True, "every: must be an integer"),
        ("every", 0, "every: must be an integer ≥ 1"),
        ("batch", 2.0, "batch: must be an integer"),
        ("period", "25", "period: must be an integer"),
        ("period", 10**6, r"period: .*GiB of attention patterns .*period ≤ 2896"),
        ("seed", 0.5, "seed: must be an integer"),
        ("threshold", math.nan, "threshold: must be a number in"),
        ("threshold", "0.3", "threshold: must be a number in"),
    ],
)
def test_the_config_is_validated_at_construction(field, value, says):
    with pytest.raises(ConfigError, match=says):
        MonitorConfig(**{field: value})


def test_the_period_is_bounded_by_the_models_layers_and_heads_before_any_forward():
    def run(tokens):
        raise AssertionError("no forward pass for a refused config")

    adapter = FunctionAdapter(12, 64, run, vocab=100)
    config = MonitorConfig(batch=16, period=400)  # one head: fine; 768 heads: 58.6 GiB
    assert 768 * 16 * 800**2 * 8 > PATTERN_BYTES
    with pytest.raises(ConfigError, match=r"layers · heads · batch · L² · 8 bytes = .* period ≤ 104\b"):
        Monitor(adapter, config)


def test_ids_beyond_the_vocabulary_are_refused_naming_its_size():
    adapter = _adapter(vocab=0)  # the vocabulary read from the logits: 11
    with pytest.raises(ConfigError, match="vocab: must be ≤ the model's vocabulary size 11, got 50"):
        Monitor(adapter, MonitorConfig(batch=3, period=6, vocab=50))
    held_out = torch.full((2, 50), 20)
    held_out[0, 0] = -1
    config = MonitorConfig(batch=3, period=6, icl_early=2, icl_late=40)
    with pytest.raises(ConfigError, match=r"held_out: token ids must lie in 0\.\.10 .*size is 11\), got -1\.\.20"):
        Monitor(adapter, config, held_out=held_out)
    with pytest.raises(ConfigError, match="held_out: must be token ids"):
        Monitor(adapter, config, held_out=torch.zeros(2, 50))


def test_no_finite_score_names_no_best_head():
    def empty(logits, patterns):  # every query without keys: valid rows, no score
        return logits, [torch.zeros_like(p) for p in patterns]

    adapter = _adapter(empty)
    adapter.bad = True
    monitor = Monitor(adapter, SMALL)
    row = monitor.measure(0)
    assert row["best_layer"] is None and row["best_head"] is None and math.isnan(row["best_induction"])
    phase = monitor.phase()
    assert phase.head is None and math.isnan(phase.score) and math.isnan(phase.step) and not phase.coincides
    assert phase_line(phase).startswith("phase change: none (no head has an induction score)")
    heads = pd.DataFrame({"step": [0, 0, 10, 10], "layer": 0, "head": [0, 1, 0, 1], "induction": np.nan})
    steps = pd.DataFrame({"step": [0, 10, 20], "loss_repeated": [3.0, 1.0, 1.0]})
    found = phase_change(heads, steps, every=10, chance=0.05, attainable=0.5)
    assert found.head is None and found.loss_drop_step == pytest.approx(5.0)  # the loss drop is still timed
    heads.loc[3, "induction"] = 0.2  # one finite score at the last step: that head, not (0, 0)
    assert phase_change(heads, steps, every=10, chance=0.05, attainable=0.5).head == (0, 1)
