"""The Chen et al. model's pair and entry loops fused, forward and backward (``chen_fused.c``;
docs/conventions.md#chen-fused).

:func:`pairs` is the selector's kernel K_q = Σ_S p_S Π_{h∈S} relu⟨v_row, v_col⟩_h at the batch's Q pairs, and
:func:`mass` the classifier's softmax numerators Σ_u count_u exp(a K_{pair_u} − shift) per (sequence, token) over
its U entries (docs/conventions.md#chen-2-2, #chen-a2) — each one loop in index order instead of some fifteen
gathers, products and scatters over Q or U.

* Built on first use (:func:`inductionlab.native.build`, IEEE arithmetic: no fast-math), float32 and float64.
* Checked against the eager path, values and gradients, at the first call of each configuration (heads, token
  width, subsets, dtype) on inputs of its own; a disagreement logs one warning and turns it off for the process.
* Used for CPU tensors outside ``torch.compile`` and ``torch.func`` transforms, unless ``INDUCTIONLAB_FUSED`` is
  off or inside ``enabled(False)``; anywhere else the eager function passed in runs.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from inductionlab import native, rng
from inductionlab._runtime import _disagreement

SOURCE = Path(__file__).with_name("chen_fused.c")
HMAX, SUBSETS_MAX = 16, 64  # the kernel's limits (chen_fused.c); larger models run eagerly
GATE = native.Gate("the fused Chen loops disagree with eager", logging.getLogger(__name__))
enabled = GATE.enabled  # within the block, the fused loops are used where usable (on) or never (the eager path)
Pairs = Callable[..., torch.Tensor]  # (v (S·Z, H, d), p (S, n_sub), masks, row, col, pair_run) → K (Q,)
Mass = Callable[..., torch.Tensor]  # (K (Q,), a (S,), pair, run, seq, slot, count (U,), n_seq, d) → (n_seq·d,)


def _declare(lib: ctypes.CDLL) -> None:
    i64, i32, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    for suffix in ("f32", "f64"):
        getattr(lib, f"pairs_forward_{suffix}").argtypes = [i64, i32, i32, i32, *[ptr] * 8]
        getattr(lib, f"pairs_backward_{suffix}").argtypes = [i64, i32, i32, i32, *[ptr] * 10]
        getattr(lib, f"entries_forward_{suffix}").argtypes = [i64, i64, *[ptr] * 10]
        getattr(lib, f"entries_backward_{suffix}").argtypes = [i64, *[ptr] * 9]


@functools.cache
def library() -> ctypes.CDLL | None:
    """The built loops, or None (logged once) when they cannot be built or loaded."""
    return native.build(SOURCE, ["-O3"], _declare, "chen", "the fused Chen loops")


def _entry(name: str, dtype: torch.dtype) -> Any:
    lib = library()
    assert lib is not None  # _usable checked it
    return getattr(lib, f"{name}_{'f64' if dtype == torch.float64 else 'f32'}")


def _ptrs(*tensors: torch.Tensor) -> list[int]:
    return [t.data_ptr() for t in tensors]


class _Pairs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, p, masks, row, col, pair_run):
        v, p = v.contiguous(), p.contiguous()
        (Q,), (_, H, d) = row.shape, v.shape
        g, K = v.new_empty(Q, H), v.new_empty(Q)
        index = (masks, v, row, col, pair_run, p)
        _entry("pairs_forward", v.dtype)(Q, H, d, len(masks), *_ptrs(*index, g, K))
        ctx.save_for_backward(v, p, masks, row, col, pair_run, g)
        return K

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dK):
        v, p, masks, row, col, pair_run, g = ctx.saved_tensors
        dv, dp = torch.zeros_like(v), torch.zeros_like(p)
        index = (masks, v, row, col, pair_run, p, g, dK.contiguous())
        _entry("pairs_backward", v.dtype)(len(row), v.shape[1], v.shape[2], len(masks), *_ptrs(*index, dv, dp))
        return dv, dp, None, None, None, None


class _Mass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, K, a, pair, run, seq, slot, count, n_seq: int, d: int):
        K, a, count = K.contiguous(), a.contiguous(), count.to(K.dtype).contiguous()
        shift, w, mass = K.new_empty(n_seq), K.new_empty(len(pair)), K.new_zeros(n_seq * d)
        index = (K, a, pair, run, seq, slot, count)
        _entry("entries_forward", K.dtype)(len(pair), n_seq, *_ptrs(*index, shift, w, mass))
        ctx.save_for_backward(K, a, pair, run, slot, w)
        return mass

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dmass):
        K, a, pair, run, slot, w = ctx.saved_tensors
        dK, da = torch.zeros_like(K), torch.zeros_like(a)
        _entry("entries_backward", K.dtype)(len(pair), *_ptrs(K, a, pair, run, slot, w, dmass.contiguous(), dK, da))
        return dK, da, None, None, None, None, None, None, None


def _usable(*tensors: torch.Tensor) -> bool:
    return GATE.open(tensors, (torch.float32, torch.float64), library)


def pairs(
    v: torch.Tensor,
    p: torch.Tensor,
    masks: torch.Tensor,
    row: torch.Tensor,
    col: torch.Tensor,
    pair_run: torch.Tensor,
    eager: Pairs,
) -> torch.Tensor:
    """K (Q,) at the pairs (``row``, ``col``: indices into v's S·Z states; ``pair_run``: each pair's run) from the
    normalised head outputs v (S·Z, H, d) and the selection weights p (S, n_sub) of the subsets ``masks``
    (n_sub,) int32 head bitmasks — fused where usable and checked, else ``eager`` of the same arguments."""
    H, d = v.shape[1:]
    key = ("pairs", H, d, tuple(masks.tolist()), v.dtype)
    if (
        H > HMAX
        or len(masks) > SUBSETS_MAX
        or not _usable(v, p)
        or not GATE.passes(key, lambda: _check_pairs(key, eager))
    ):
        return eager(v, p, masks, row, col, pair_run)
    return _Pairs.apply(v, p, masks, *_indices(row, col, pair_run))


def mass(
    K: torch.Tensor,
    a: torch.Tensor,
    pair: torch.Tensor,
    run: torch.Tensor,
    seq: torch.Tensor,
    slot: torch.Tensor,
    count: torch.Tensor,
    n_seq: int,
    d: int,
    eager: Mass,
) -> torch.Tensor:
    """(n_seq·d,) the classifier's unnormalised y: Σ over the entries u of count_u exp(a[run_u] K[pair_u] −
    shift[seq_u]) into ``slot`` u (seq·d + token), the shift each sequence's largest logit (held constant) — fused
    where usable and checked, else ``eager`` of the same arguments."""
    key = ("mass", d, K.dtype)
    if not _usable(K, a) or not GATE.passes(key, lambda: _check_mass(key, eager)):
        return eager(K, a, pair, run, seq, slot, count, n_seq, d)
    return _Mass.apply(K, a, *_indices(pair, run, seq, slot), count, n_seq, d)


def _indices(*index: torch.Tensor) -> list[torch.Tensor]:
    """The index tensors as the kernel reads them: int64, contiguous (no copy when they are already)."""
    return [t.to(torch.int64).contiguous() for t in index]


def _compare(fused: Callable, eager: Callable, inputs: list[torch.Tensor], rest: tuple, what: str) -> str | None:
    """Values and gradients (of a random weighting) of ``fused`` and ``eager`` on ``inputs`` (differentiated) and
    ``rest``; None when they agree within the dtype's tolerances."""
    results = []
    for fn in (fused, eager):
        leaves = [t.clone().requires_grad_(True) for t in inputs]
        with torch.inference_mode(False), torch.enable_grad():
            out = fn(*leaves, *rest)
            weight = torch.randn(out.shape, generator=rng.generator(3, "check"), dtype=out.dtype)
            (out * weight).sum().backward()
        results.append([out.detach(), *(t.grad for t in leaves)])
    return _disagreement(results[0], results[1], what)


def _check_pairs(key: tuple, eager: Pairs) -> str | None:
    """The pair loop on inputs of its own: 2 runs of 5 states (one of them v = 0, as an empty window's), 40 pairs
    within runs, with row = col among them; grams of either sign and exactly 0, so the relu's both sides count."""
    _, H, d, masks, dtype = key
    g = rng.generator(1, "check")
    v = torch.randn(10, H, d, generator=g, dtype=dtype)
    v[3] = 0.0
    p = torch.rand(2, len(masks), generator=g, dtype=dtype) + 0.1
    pair_run = torch.randint(0, 2, (40,), generator=g)
    row, col = (pair_run * 5 + torch.randint(0, 5, (40,), generator=g) for _ in range(2))
    col[:4] = row[:4]
    rest = (torch.tensor(masks, dtype=torch.int32), row, col, pair_run)
    return _compare(lambda v, p, *r: _Pairs.apply(v, p, *r), eager, [v, p], rest, "(K, dv, dp)")


def _check_mass(key: tuple, eager: Mass) -> str | None:
    """The entry loop on inputs of its own: 2 runs of 3 sequences, 30 pairs, 120 entries."""
    _, d, dtype = key
    g = rng.generator(2, "check")
    K, a = torch.randn(30, generator=g, dtype=dtype), torch.randn(2, generator=g, dtype=dtype) * 3
    pair = torch.randint(0, 30, (120,), generator=g)
    run = torch.randint(0, 2, (30,), generator=g)[pair]
    seq = run * 3 + torch.randint(0, 3, (120,), generator=g)
    slot = seq * d + torch.randint(0, d, (120,), generator=g)
    count = torch.randint(1, 5, (120,), generator=g).to(dtype)
    rest = (pair, run, seq, slot, count, 6, d)
    return _compare(lambda K, a, *r: _Mass.apply(K, a, *r), eager, [K, a], rest, "(mass, dK, da)")
