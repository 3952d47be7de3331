"""fit_tokens: the general transformer on a token task of one's own — its losses are the cross-entropies of the
model it returns, a learnable task is learned, the model comes back from its checkpoint, bad input is refused."""

import math

import pytest
import torch

from inductionlab import rng
from inductionlab.config import ConfigError
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.text import token_losses
from inductionlab.train.tokens import fit_tokens

MODEL = tf.TransformerConfig(vocab=4, d_model=16, n_heads=1, readout="all")


def _cycle(batch, g):
    """x_{t+1} = x_t + 1 mod 4 from a random start: learnable from the previous token alone."""
    start = torch.randint(4, (batch, 1), generator=g)
    return (start + torch.arange(9)) % 4


def test_a_learnable_task_is_learned_and_the_metrics_are_the_returned_models_losses(tmp_path):
    held_out = _cycle(64, rng.generator(0, "held-out"))
    cfg = TrainConfig(lr=1e-2, steps=150, batch_size=32, eval_every=50)
    ctx = RunContext(tmp_path, threads=1)
    params, metrics = fit_tokens(MODEL, lambda g: _cycle(32, g), cfg, (0, 1), held_out, ctx)
    first, last = metrics[metrics.step == 0], metrics[metrics.step == 150]
    assert first.loss.to_numpy() == pytest.approx(math.log(4), abs=0.05)  # init_std 0.01: near uniform
    assert (last.loss < 0.3).all() and (last.accuracy > 0.9).all() and list(last.seed) == [0, 1]
    want = token_losses(MODEL, params, held_out).mean((1, 2)).double().numpy()
    assert last.loss.to_numpy() == pytest.approx(want, rel=1e-6)
    assert last.last_loss.to_numpy() == pytest.approx(
        token_losses(MODEL, params, held_out)[:, :, -1].mean(1).double().numpy(), rel=1e-6
    )


def test_positions_last_trains_and_scores_the_final_token_only():
    held_out = _cycle(16, rng.generator(0, "held-out"))
    cfg = TrainConfig(lr=1e-2, steps=2, batch_size=8, eval_every=1)
    params, metrics = fit_tokens(MODEL, lambda g: _cycle(8, g), cfg, (3,), held_out, positions="last")
    assert "last_loss" not in metrics
    want = token_losses(MODEL, params, held_out)[:, :, -1].mean(1).double().numpy()
    assert metrics.loss.iloc[-1] == pytest.approx(want[0], rel=1e-6)


@pytest.mark.parametrize(
    "model, sample, held_out, match",
    [
        (tf.TransformerConfig(vocab=4), lambda g: _cycle(8, g), _cycle(4, rng.generator(0)), "readout"),
        (MODEL, lambda g: _cycle(8, g), _cycle(4, rng.generator(0)).float(), "eval_tokens"),
        (MODEL, lambda g: _cycle(8, g) + 4, _cycle(4, rng.generator(0)), r"sample\(generator\).*0\.\.3"),
    ],
)
def test_bad_input_is_refused_naming_what(model, sample, held_out, match):
    with pytest.raises(ConfigError, match=match):
        fit_tokens(model, sample, TrainConfig(steps=2, batch_size=8), (0,), held_out)
