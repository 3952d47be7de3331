import math
from dataclasses import replace

import pytest
import torch

from inductionlab import experiments
from inductionlab.analysis.verdicts import judge
from inductionlab.models import chen
from inductionlab.models.chen import copier_attention


def test_copier_attention_is_the_least_softmax_of_the_selected_heads_on_their_lag():
    model = chen.ChenConfig(vocab_size=3, n_heads=3, window=3, max_degree=2)
    w = torch.tensor([[3.0, 0.1, 0.1], [0.1, 9.0, 0.1], [0.1, 0.1, 3.0]])
    sharp = math.exp(9.0) / (math.exp(9.0) + 2 * math.exp(0.1))
    init = math.exp(3.0) / (math.exp(3.0) + 2 * math.exp(0.1))
    assert copier_attention(model, w, (1,)) == pytest.approx(sharp)
    assert copier_attention(model, w, (0, 1)) == pytest.approx(init)  # the least of the two heads
    assert math.isnan(copier_attention(model, w, ()))


def test_shifted_windows_renormalise_over_each_heads_own_lags():
    model = chen.ChenConfig(vocab_size=3, n_heads=3, window=5, max_degree=2, windows="shifted")
    w = torch.zeros(3, 5)
    w[1, 1] = 2.0  # head 2 sees lags 2..4 only
    expected = math.exp(2.0) / (math.exp(2.0) + 2)
    assert copier_attention(model, w, (1,)) == pytest.approx(expected)


@pytest.mark.parametrize(
    "name",
    ["markov-stages", "markov-joint", "markov-full", "markov-mi", "markov-transformer", "markov-length-generalization"],
)
def test_every_claim_names_a_declared_control_and_every_control_is_used(name):
    module = experiments.get(name)
    controls = {c.name for c in module.controls}
    named = {c.control for c in module.claims if c.control}
    assert named <= controls and controls <= named
    for control in module.controls:  # each control's run configures at its preset
        experiments.configure(name, preset=control.preset, overrides=dict(control.overrides))


def test_a_missing_variant_key_leaves_its_claim_undefined():
    claim = next(c for c in experiments.get("markov-stages").claims if c.id == "chen-thm3.3-D3-select")
    claim = replace(claim, seeds=0)  # one run: the statement's logic (the mean over draws: tests/test_reproduce.py)
    assert judge(claim, {"runs": {"D=2, softmax_of_probs": {"p_selected": {"{1,2}": 1.0}}}})["status"] == "undefined"
    ok = judge(claim, {"runs": {"D=3, softmax_of_probs": {"p_selected": {"{1,2}": 0.999}}}})
    assert ok["status"] == "passed"


def test_heads_1_and_2_attention_is_their_least_attention_on_lags_1_and_2():
    model = chen.ChenConfig(vocab_size=3, n_heads=3, window=3, max_degree=2)
    w = torch.tensor([[9.0, 0.1, 0.1], [0.1, 3.0, 0.1], [5.0, 0.1, 0.1]])  # head 3's top lag is 1, not its own
    init = math.exp(3.0) / (math.exp(3.0) + 2 * math.exp(0.1))
    attention = chen.lag_attention(model, w)
    assert attention[1] == pytest.approx(init) and float(attention[:2].min()) == pytest.approx(init)
    assert attention[2] == pytest.approx(math.exp(0.1) / (math.exp(5.0) + 2 * math.exp(0.1)))


def test_the_bigram_control_leaves_head_2_at_its_initial_attention():
    """The control of chen-thm3.3-copiers-sharpen: on a bigram chain Stage I selects {1}, so head 2 gets no
    gradient and its attention on lag 2 stays at 0.90 (defined, and below the claim's 0.99)."""
    from inductionlab.analysis.verdicts import judge_control
    from inductionlab.runs import RunContext

    name = "markov-stages"
    control = next(c for c in experiments.get(name).controls if c.name == "bigram")
    overrides = {**control.overrides, "train.epochs": "200,200,10", "n_samples": 2000, "n_val": 200}
    cfg = experiments.configure(name, preset=control.preset, overrides=overrides)  # the default's rates
    summary = experiments.get(name).run(cfg, RunContext(threads=1)).summary
    claim = next(c for c in experiments.get(name).claims if c.id == "chen-thm3.3-copiers-sharpen")
    assert summary["copier_attention_12"] == pytest.approx(0.9009, abs=1e-3)
    assert judge_control(claim, summary)["control_status"] == "rejects"
