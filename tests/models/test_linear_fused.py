"""The fused SCB sampler and gradient (models/linear_fused.py, docs/conventions.md#scb-fused): the same tokens, last
tokens and labels as tasks/scb.py's eager draws from the same uniforms, the same gradients as models/linear.py, at
N ≤ 16 and > 16, T = 1, float64 and float32, u on a CDF value; the fallback on a disagreement, under
``INDUCTIONLAB_FUSED=0`` and ``enabled(False)``; transfer_start fused against eager; ``sample`` unchanged."""

import logging

import numpy as np
import pytest
import torch

from inductionlab.models import linear, linear_fused
from inductionlab.tasks import scb
from inductionlab.theory.scb import signal
from inductionlab.train import scb_batch
from inductionlab.train.proximal import threshold
from inductionlab.train.transfer import transfer_start

needs_kernel = pytest.mark.skipif(linear_fused.library() is None, reason="no C compiler here: the eager path is tested")
SHAPES = [(1, 7, 1, 2), (2, 16, 30, 5), (3, 9, 40, 20), (2, 5, 1, 5), (1, 33, 200, 2)]  # (S, B, T, N)


def _instance(S: int, T: int, N: int, dtype=torch.float64) -> scb.SCBInstance:
    inst = scb.random_instance(scb.SCBConfig(N=N, T=T, Q=min(3, T), C=8.0), S, np.random.default_rng(N * 100 + T))
    return scb.SCBInstance(*(t.to(dtype) for t in (inst.P, inst.mu, inst.Q)))


def _inputs(S, B, T, N, dtype, seed=0):
    """Uniforms of a fresh stream (some set to CDF values exactly) and the instance's caches; V, A random."""
    inst = _instance(S, T, N, dtype)
    g = torch.Generator().manual_seed(seed)
    u_tok, u_pl = scb.draw_uniforms(inst, B, g)
    u_tok[0, 0, : T + 1 : 2] = inst.mu_cdf.float()[0, N // 2]  # on a CDF step: the token above it
    u_tok[0, -1, T] = inst.mu_cdf.float()[0, 0]
    u_pl[0, 1 % B, 0], u_pl[0, 0, 1] = inst.q_cdf[0, 0, 0], inst.p_cdf[0, 1, 0]
    V = torch.randn(S, N, N, generator=g, dtype=dtype)
    A = torch.rand(S, T, N, generator=g, dtype=dtype)
    return (u_tok, u_pl, inst.mu_cdf, inst.q_positions, inst.q_cdf, inst.p_cdf, V, A), inst


def _close(got, want, tol):
    return torch.allclose(got, want, rtol=tol, atol=tol * float(want.abs().max()))


@needs_kernel
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"S{s}-B{b}-T{t}-N{n}" for s, b, t, n in SHAPES])
def test_fused_draws_and_sums_equal_the_eager_composition(shape, dtype):
    S, B, T, N = shape
    args, inst = _inputs(S, B, T, N, dtype)
    tokens, last, label = scb.from_uniforms(inst, *args[:2])
    out = linear_fused.gradient_sums(args[:6], *args[6:], with_tokens=True)
    assert torch.equal(out["tokens"], tokens) and torch.equal(out["last"], last) and torch.equal(out["label"], label)
    g_v, g_a = linear.gradients(*args[6:], tokens, last, label)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert _close(out["G_V"], g_v * B, tol) and _close(out["G_A"], g_a * B, tol)
    assert out["G_V"].dtype == dtype and out["G_A"].shape == (S, T, N)


@needs_kernel
def test_a_u_on_a_cdf_value_takes_the_step_above_it():
    args, inst = _inputs(1, 4, 12, 5, torch.float64)
    out = linear_fused.gradient_sums(args[:6], *args[6:], with_tokens=True)
    assert bool((out["tokens"][0, 0, ::2] == 3).all()) and int(out["last"][0, -1]) == 1  # u = cdf[2] → 3; cdf[0] → 1


@needs_kernel
@pytest.mark.parametrize("N", [5, 20])
def test_one_batch_shared_by_the_runs_and_the_mean_path(N):
    args, inst = _inputs(1, 12, 25, N, torch.float64)
    V, A = (t.expand(3, *t.shape[1:]) + torch.randn(3, *t.shape[1:], dtype=t.dtype) for t in args[6:])
    with linear_fused.enabled(True):
        got = linear_fused.gradients(args[:6], V, A, scb_batch.eager_gradients)
    want = scb_batch.eager_gradients(args[:6], V, A)
    assert all(_close(x, y, 1e-12) for x, y in zip(got, want)) and (N, torch.float64) in linear_fused.GATE.checked


def test_the_kernel_refuses_what_it_cannot_index():
    args, _ = _inputs(2, 4, 10, 5, torch.float64)
    for bad in ({2: args[2][:, :4]}, {3: args[3] + 10}, {0: args[0].double()}, {7: args[7][:, :9]}):
        with pytest.raises(ValueError, match="do not fit"):
            given = [bad.get(i, t) for i, t in enumerate(args)]
            linear_fused.gradient_sums(tuple(given[:6]), *given[6:])


@needs_kernel
def test_a_disagreement_falls_back_to_eager(monkeypatch, caplog):
    monkeypatch.setattr(linear_fused.GATE, "checked", set())
    monkeypatch.setattr(linear_fused.GATE, "failed", [])
    right = linear_fused.gradient_sums

    def wrong(*args, **kwargs):
        out = right(*args, **kwargs)
        return {**out, "G_A": out["G_A"] * (1 + 1e-4)}

    monkeypatch.setattr(linear_fused, "gradient_sums", wrong)
    inst = _instance(2, 30, 5)
    V, A = torch.randn(2, 5, 5, dtype=torch.float64), torch.rand(2, 30, 5, dtype=torch.float64)
    with caplog.at_level(logging.WARNING):
        got = scb_batch.sampled_gradients(V, A, inst, 8, torch.Generator().manual_seed(3))
    assert "the fused SCB gradient disagrees with eager" in caplog.text and linear_fused.GATE.failed
    want = linear.gradients(V, A, *scb.sample(inst, 8, torch.Generator().manual_seed(3)))
    assert all(torch.equal(x, y) for x, y in zip(got, want))  # the eager numbers, bit for bit


def test_switched_off_the_eager_path_runs(monkeypatch):
    inst = _instance(2, 30, 5)
    V, A = torch.randn(2, 5, 5, dtype=torch.float64), torch.rand(2, 30, 5, dtype=torch.float64)
    want = linear.gradients(V, A, *scb.sample(inst, 8, torch.Generator().manual_seed(3)))
    called = []
    monkeypatch.setattr(linear_fused, "gradient_sums", lambda *a, **k: called.append(1))
    with linear_fused.enabled(False):
        got = scb_batch.sampled_gradients(V, A, inst, 8, torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(got, want))
    linear_fused.library.cache_clear()
    monkeypatch.setenv("INDUCTIONLAB_FUSED", "0")
    try:
        assert linear_fused.library() is None
        got = scb_batch.sampled_gradients(V, A, inst, 8, torch.Generator().manual_seed(3))
        assert all(torch.equal(x, y) for x, y in zip(got, want)) and not called
    finally:
        linear_fused.library.cache_clear()


@needs_kernel
def test_transfer_start_fused_equals_eager():
    inst = _instance(4, 300, 5)
    V_bar = inst.P + 0.05 * torch.rand(inst.P.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    steps = []
    for on in (True, False):
        with linear_fused.enabled(on):
            steps.append(transfer_start(inst, V_bar, 0.5, 0.8, 3000, torch.Generator().manual_seed(2), chunk=700))
    (V0, A1, beta), (V0_e, A1_e, beta_e) = steps
    assert torch.equal(V0, V0_e) and torch.equal(beta, beta_e) and _close(A1, A1_e, 1e-12)
    theta = threshold(signal(V0_e, A1_e, inst)["alpha"].clamp(0, 1), inst.T, 2.0, 3)
    assert torch.equal(A1 >= theta, A1_e >= theta)


def _old_sample(inst, batch, generator):
    """tasks/scb.py's sample before the split (commit 21d8a66), inline."""
    S, T = inst.P.shape[0], inst.T
    u = torch.rand((S, batch, T + 1), generator=generator)
    cdf = inst.mu_cdf.float()
    if cdf.shape[-1] > 16:
        tokens = torch.searchsorted(cdf.contiguous(), u.view(S, -1), right=True).clamp_max(cdf.shape[-1] - 1)
        tokens = tokens.view(u.shape)
    else:
        tokens = torch.zeros(u.shape, dtype=torch.uint8)
        for j in range(cdf.shape[-1] - 1):
            tokens += u >= cdf[:, j].view(S, 1, 1)
        tokens = tokens.long()
    u = torch.rand(S, batch, 2, generator=generator, dtype=inst.mu.dtype)
    last = tokens[:, :, T]
    runs = torch.arange(S).view(-1, 1)
    j = (u[:, :, 0, None] >= inst.q_cdf[runs, last][..., :-1]).sum(-1)
    s = inst.q_positions[runs, last].gather(2, j.unsqueeze(-1)).squeeze(-1)
    source = tokens.gather(2, s.unsqueeze(-1)).squeeze(-1)
    label = (u[:, :, 1, None] >= inst.p_cdf[runs, source][..., :-1]).sum(-1)
    return tokens[:, :, :T], last, label


@pytest.mark.parametrize("shape", SHAPES, ids=[f"S{s}-B{b}-T{t}-N{n}" for s, b, t, n in SHAPES])
def test_sample_is_unchanged_bit_for_bit(shape):
    S, B, T, N = shape
    inst = _instance(S, T, N)
    gen, old_gen = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    got, want = scb.sample(inst, B, gen), _old_sample(inst, B, old_gen)
    assert all(torch.equal(x, y) and x.dtype == y.dtype for x, y in zip(got, want))
    assert torch.equal(gen.get_state(), old_gen.get_state())  # the stream continues where the old one did
