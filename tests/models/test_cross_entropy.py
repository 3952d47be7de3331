"""The fused next-token cross-entropy (docs/conventions.md#fused-cross-entropy) against ``F.cross_entropy``:
values and gradients in float32 and bfloat16, extreme rows, its self-check's fallback, and the switches."""

from __future__ import annotations

import logging

import pytest
import torch

from inductionlab import native
from inductionlab.models import cross_entropy as ce
from inductionlab.models import transformer as tf
from inductionlab.train.autograd import pack
from inductionlab.train.text import token_losses

pytestmark = pytest.mark.skipif(ce.library() is None, reason="no C compiler: the fused loss is unavailable")


def _loss_and_grad(fn, z, t, weight):
    leaf = z.clone().requires_grad_(True)
    loss = fn(leaf, t)
    (loss * weight).sum().backward()
    return loss.detach(), leaf.grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("R", "V"), [(1, 1), (3, 2), (64, 2001), (17, 33)])
def test_loss_and_gradient_equal_the_eager_loss(dtype, R, V):
    g = torch.Generator().manual_seed(R * V)
    z = (torch.randn(R, V, generator=g) * 6).to(dtype)
    t = torch.randint(0, V, (R,), generator=g)
    weight = torch.randn(R, generator=g)
    (lf, gf), (le, ge) = (_loss_and_grad(fn, z, t, weight) for fn in (ce.cross_entropy, ce.eager))
    assert lf.dtype == le.dtype == torch.float32 and gf.dtype == ge.dtype == dtype
    torch.testing.assert_close(lf, le, rtol=1e-5, atol=1e-5)
    # bf16: the gradient is rounded to bf16 from float32 values that agree to ~1e-7; one ulp of bf16 at most
    tol = {"rtol": 8e-3, "atol": 1e-6} if dtype == torch.bfloat16 else {"rtol": 1e-5, "atol": 1e-7}
    torch.testing.assert_close(gf.float(), ge.float(), **tol)


def test_threads_split_the_rows_without_moving_a_number():
    g = torch.Generator().manual_seed(7)
    z = torch.randn(2 * ce.ROWS_PER_THREAD + 3, 50, generator=g).bfloat16()
    t = torch.randint(0, 50, (len(z),), generator=g)
    weight = torch.randn(len(z), generator=g)
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 3):
            torch.set_num_threads(threads)
            results.append(_loss_and_grad(ce.cross_entropy, z, t, weight))
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(a, b) for a, b in zip(*results))


def test_extreme_rows_give_what_the_eager_loss_gives():
    z = torch.tensor([[1e4, 0.0, -1e4], [-30.0, -30.0, -30.0], [float("-inf"), 0.0, 1.0], [88.0, 88.0, -88.0]])
    t = torch.tensor([1, 2, 2, 0])
    torch.testing.assert_close(ce.cross_entropy(z, t), ce.eager(z, t))
    (lf, gf), (le, ge) = (_loss_and_grad(fn, z, t, torch.ones(4)) for fn in (ce.cross_entropy, ce.eager))
    torch.testing.assert_close(gf, ge)


def test_the_language_models_step_is_unchanged_within_bf16_rounding():
    cfg = tf.TransformerConfig(vocab=50, d_model=16, n_layers=2, n_heads=2, d_head=8, readout="all")
    theta0, views = pack(tf.init_params(cfg, 2, torch.Generator().manual_seed(0)))
    x = torch.randint(0, 50, (4, 21), generator=torch.Generator().manual_seed(1))
    grads = []
    for on in (True, False):
        theta = theta0.clone().requires_grad_(True)
        with ce.enabled(on), torch.autocast("cpu", dtype=torch.bfloat16):
            token_losses(cfg, views(theta), x).mean().backward()
        grads.append(theta.grad)
    assert float((grads[0] - grads[1]).abs().max()) <= 2e-2 * float(grads[1].abs().max())


def test_a_disagreement_falls_back_to_eager(monkeypatch, caplog):
    monkeypatch.setattr(ce.GATE, "checked", set())
    monkeypatch.setattr(ce.GATE, "failed", [])
    right = ce._CrossEntropy.apply
    monkeypatch.setattr(ce._CrossEntropy, "apply", lambda *a: right(*a) * (1 + 1e-3))
    z, t = torch.randn(5, 7), torch.randint(0, 7, (5,))
    with caplog.at_level(logging.WARNING):
        out = ce.cross_entropy(z, t)
    assert "the fused cross-entropy disagrees with eager" in caplog.text and ce.GATE.failed
    assert torch.equal(out, ce.eager(z, t))  # the eager numbers, bit for bit


def test_the_switches_give_the_eager_loss(monkeypatch):
    z, t = torch.randn(6, 11), torch.randint(0, 11, (6,))
    with ce.enabled(False):
        assert torch.equal(ce.cross_entropy(z, t), ce.eager(z, t))
    ce.library.cache_clear()
    monkeypatch.setenv("INDUCTIONLAB_FUSED", "0")
    try:
        assert ce.library() is None
        assert torch.equal(ce.cross_entropy(z, t), ce.eager(z, t))
    finally:
        monkeypatch.delenv("INDUCTIONLAB_FUSED")
        ce.library.cache_clear()


def test_without_a_compiler_the_loss_runs_eagerly(monkeypatch, caplog):
    ce.library.cache_clear()
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(native.environ.shutil, "which", lambda name: None)
    try:
        with caplog.at_level(logging.WARNING):
            assert ce.library() is None
        assert "the fused cross-entropy unavailable (no C compiler" in caplog.text
        z, t = torch.randn(4, 9), torch.randint(0, 9, (4,))
        assert torch.equal(ce.cross_entropy(z, t), ce.eager(z, t))
    finally:
        ce.library.cache_clear()
