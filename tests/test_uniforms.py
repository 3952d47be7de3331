"""The fast uniforms (docs/conventions.md#fast-uniforms) are torch.rand's numbers: the same values and the generator
left in the same state, for float32 and float64, any shape, from any point of the stream; a disagreement falls back."""

from __future__ import annotations

import logging

import pytest
import torch

from inductionlab import native, uniforms

needs_kernel = pytest.mark.skipif(uniforms.library() is None, reason="no C compiler: the fast uniforms are unavailable")


@needs_kernel
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("skip", [0, 1, 623, 624, 625, 1247])
def test_values_and_the_state_after_are_torch_rands(dtype, skip):
    mine, theirs = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for g in (mine, theirs):
        torch.rand(skip, generator=g)  # anywhere in a 624-word block, before and after a twist
    for shape in [(1,), (7, 3), (2, 65, 1001), (0,), (5000,)]:
        got = uniforms.rand(shape, mine, dtype)
        want = torch.rand(shape, generator=theirs, dtype=dtype)
        assert got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want)
        assert torch.equal(mine.get_state(), theirs.get_state())
    assert torch.equal(torch.rand(9, generator=mine), torch.rand(9, generator=theirs))  # torch goes on from there


@needs_kernel
def test_a_generator_in_the_middle_of_normal_draws_keeps_its_cached_normal():
    mine, theirs = torch.Generator().manual_seed(8), torch.Generator().manual_seed(8)
    for g in (mine, theirs):
        torch.randn(3, generator=g, dtype=torch.float64)  # caches a normal in the state
    uniforms.rand((100,), mine)
    torch.rand(100, generator=theirs)
    assert torch.equal(
        torch.randn(4, generator=mine, dtype=torch.float64), torch.randn(4, generator=theirs, dtype=torch.float64)
    )


def test_a_disagreement_falls_back_to_torch_rand(monkeypatch, caplog):
    monkeypatch.setattr(uniforms.GATE, "checked", set())
    monkeypatch.setattr(uniforms.GATE, "failed", [])
    right = uniforms._draw
    monkeypatch.setattr(uniforms, "_draw", lambda g, n, d: None if (out := right(g, n, d)) is None else out + 1e-7)
    g, h = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    with caplog.at_level(logging.WARNING):
        got = uniforms.rand((uniforms.SMALL,), g)
    if uniforms.library() is not None:
        assert "the fast uniforms disagree with torch.rand" in caplog.text and uniforms.GATE.failed
    assert torch.equal(got, torch.rand(uniforms.SMALL, generator=h)) and torch.equal(g.get_state(), h.get_state())


def test_switched_off_or_without_a_compiler_it_is_torch_rand(monkeypatch):
    g, h = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    with uniforms.enabled(False):
        assert torch.equal(uniforms.rand((30,), g), torch.rand(30, generator=h))
    uniforms.library.cache_clear()
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(native.environ.shutil, "which", lambda name: None)
    try:
        assert uniforms.library() is None
        assert torch.equal(uniforms.rand((30,), g, torch.float64), torch.rand(30, generator=h, dtype=torch.float64))
    finally:
        uniforms.library.cache_clear()
