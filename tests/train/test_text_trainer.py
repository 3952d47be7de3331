import numpy as np
import pytest
import torch
import torch.nn.functional as F

from inductionlab.analysis.heads import score_columns
from inductionlab.config import ConfigError
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.text import EvalConfig, fit_lm, token_losses, weight_norms

MODEL = tf.TransformerConfig(
    vocab=12, d_model=16, n_layers=2, n_heads=2, d_head=8, ffn_width=32, readout="all", init_std=0.1, slope_init=0.01
)


def test_token_losses_are_next_token_cross_entropy_at_every_position():
    params = tf.init_params(MODEL, 2, torch.Generator().manual_seed(0))
    x = torch.randint(12, (3, 9), generator=torch.Generator().manual_seed(1))
    losses = token_losses(MODEL, params, x)
    assert losses.shape == (2, 3, 8)
    logits = tf.forward(MODEL, params, x[:, :-1].unsqueeze(0))[0]
    want = torch.stack(
        [
            F.cross_entropy(logits[s].reshape(-1, 12), x[:, 1:].reshape(-1), reduction="none").view(3, 8)
            for s in range(2)
        ]
    )
    torch.testing.assert_close(losses, want)


def test_weight_norms_cover_all_slopes_and_all_query_key_matrices():
    params = tf.zero_params(MODEL, 1, torch.float32)
    params["blocks.0.attn.p"][:] = torch.tensor([3.0, 0.0])
    params["blocks.1.attn.p"][:] = torch.tensor([0.0, 4.0])
    params["blocks.1.attn.W_K"][0, 1, 0, 0] = 1.0
    params["blocks.0.attn.W_Q"][0, 0, 2, 3] = 2.0
    params["blocks.0.attn.W_V"][:] = 7.0  # not counted
    n = weight_norms(MODEL, params)
    assert n["p_norm"][0] == pytest.approx(5.0) and n["wkq_norm"][0] == pytest.approx(5**0.5)
    assert n["wkq_norm_l1"][0] == pytest.approx(2.0) and n["wkq_norm_l2"][0] == pytest.approx(1.0)


def _stream(n=4000, seed=0):
    """A learnable stream: a deterministic cycle with noise tokens."""
    g = torch.Generator().manual_seed(seed)
    base = torch.arange(n) % 7
    noise = torch.rand(n, generator=g) < 0.1
    return torch.where(noise, torch.randint(12, (n,), generator=g), base)


def test_language_model_training_learns_resumes_exactly_and_reports_the_metrics(tmp_path):
    ids = _stream()
    cfg = TrainConfig(
        optimizer="adam", lr=1e-2, steps=40, batch_size=8, eval_every=20, eval_log_points=0, checkpoint_every=20
    )
    evals = EvalConfig(val_batches=2, score_batch=2, score_period=5)
    ctx = RunContext(tmp_path, threads=1)
    params, m = fit_lm(MODEL, cfg, evals, ids, _stream(seed=1), 16, (0, 1), ctx, diagnostics=score_columns)
    assert {
        "val_loss",
        "p_norm",
        "wkq_norm",
        "induction_score",
        "previous_token_score",
        "prefix_matching_score",
        "seed",
    } <= set(m.columns)
    first, last = m[m.step == 0], m[m.step == 40]
    assert (last.val_loss.to_numpy() < 0.7 * first.val_loss.to_numpy()).all()
    again, m2 = fit_lm(
        MODEL, cfg, evals, ids, _stream(seed=1), 16, (0, 1), ctx.child(resume=True), diagnostics=score_columns
    )
    for k in params:
        torch.testing.assert_close(again[k], params[k])
    np.testing.assert_allclose(m2.val_loss, m.val_loss)
    rep = fit_lm(
        MODEL,
        TrainConfig(optimizer="adam", lr=1e-2, steps=4, batch_size=4, eval_every=2),
        evals,
        ids,
        _stream(seed=1),
        16,
        (0,),
        repeated=True,
    )[1]
    assert {"loss_repeated", "loss_other"} <= set(rep.columns)


def test_the_model_must_be_a_language_model():
    with pytest.raises(ConfigError, match="readout"):
        fit_lm(tf.TransformerConfig(vocab=12), TrainConfig(steps=1), EvalConfig(), _stream(), _stream(), 8, (0,))
