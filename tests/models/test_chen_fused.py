"""The fused pair and entry loops of the Chen et al. model (models/chen_fused.py, docs/conventions.md#chen-fused):
the same loss and gradients as the eager path at every normalisation, variant and precision; the fallback on a
disagreement, without a compiler, and under ``enabled(False)``."""

import logging

import numpy as np
import pytest
import torch

from inductionlab import native
from inductionlab.models import chen, chen_fused
from inductionlab.tasks.markov import MarkovConfig, sample
from inductionlab.train.autograd import pack

needs_kernel = pytest.mark.skipif(chen_fused.library() is None, reason="no C compiler here: the eager path is tested")

CONFIGS = {
    "simplified, head_l2, shifted": chen.ChenConfig(windows="shifted", window=5),
    "simplified, layernorm, D = 3": chen.ChenConfig(norm="layernorm", max_degree=3),
    "full, shared layernorm (the authors')": chen.ChenConfig(
        variant="full", norm="layernorm", layernorm="shared", windows="shifted", window=5, w_plus=1.0, w_minus=0.01
    ),
}


def _loss_and_grad(cfg, dtype, on: bool, runs: int = 2):
    tokens = torch.stack(
        [torch.as_tensor(sample(MarkovConfig(), 300, np.random.default_rng(s))[0]) for s in range(runs)]
    )
    batch = chen.make_batch(cfg, tokens, dtype)
    theta, views = pack(chen.init_params(cfg, runs, dtype))
    with torch.no_grad():  # away from the symmetric start, where some grams sit at the relu's kink
        theta.add_(0.3 * torch.randn(theta.shape, generator=torch.Generator().manual_seed(0), dtype=dtype))
    theta.requires_grad_(True)
    with chen_fused.enabled(on):
        loss = chen.loss(cfg, views(theta), batch)
        loss.sum().backward()
    return loss.detach(), theta.grad


@needs_kernel
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_fused_loss_and_gradients_equal_the_eager_path(name, dtype):
    cfg = CONFIGS[name]
    (loss, grad), (want, want_grad) = (_loss_and_grad(cfg, dtype, on) for on in (True, False))
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert torch.allclose(loss, want, rtol=tol, atol=0)
    assert torch.allclose(grad, want_grad, rtol=tol, atol=tol * float(want_grad.abs().max()))
    assert not chen_fused.GATE.failed and {k[0] for k in chen_fused.GATE.checked} >= {"pairs", "mass"}


@needs_kernel
def test_a_disagreement_falls_back_to_eager(monkeypatch, caplog):
    monkeypatch.setattr(chen_fused.GATE, "checked", set())
    monkeypatch.setattr(chen_fused.GATE, "failed", [])
    wrong = chen_fused._Pairs.apply
    monkeypatch.setattr(chen_fused._Pairs, "apply", lambda *a: wrong(*a) * (1 + 1e-4))
    cfg = CONFIGS["simplified, head_l2, shifted"]
    with caplog.at_level(logging.WARNING):
        loss, _ = _loss_and_grad(cfg, torch.float64, True)
    assert "the fused Chen loops disagree with eager" in caplog.text and chen_fused.GATE.failed
    assert torch.equal(loss, _loss_and_grad(cfg, torch.float64, False)[0])  # the eager numbers, bit for bit


def test_without_a_compiler_the_model_runs_eagerly(monkeypatch, caplog):
    chen_fused.library.cache_clear()
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(native.environ.shutil, "which", lambda name: None)
    try:
        with caplog.at_level(logging.WARNING):
            assert chen_fused.library() is None
        assert "the fused Chen loops unavailable (no C compiler" in caplog.text
        cfg = CONFIGS["simplified, head_l2, shifted"]
        loss, _ = _loss_and_grad(cfg, torch.float64, True)
        assert torch.equal(loss, _loss_and_grad(cfg, torch.float64, False)[0])
    finally:
        chen_fused.library.cache_clear()
