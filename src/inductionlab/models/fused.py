"""The general transformer's attention layer fused, forward and backward (``fused_attention.c``;
docs/conventions.md#fused-attention).

What it computes is :func:`inductionlab.models.transformer.attention`'s output: ``softmax(scale·q kᵀ + bias)·v``
with the strictly causal mask from ``key_start``, the RPE slope (paper eq. 2) and rows without keys set to 0,
through W_O — the projections by W_Q, W_K, W_V and W_O inside the kernel, without q, k, v or the (S, B, H, L', L)
score and pattern tensors, which eager autograd writes and reads some twenty times per step.  Only z and the
output change layout, to batch-last (the kernel's vector lanes are sequences).

* Built on first use by the C compiler (:func:`inductionlab.native.build`): without a compiler, or when the
  build fails, it is unavailable: one log line, and the eager path.
* Checked against the eager path, outputs and gradients, at the first call of each configuration (query rows,
  keys, head size, ``key_start``, scale) on inputs of its own; a disagreement logs one warning and turns it off
  for the process (:func:`inductionlab._runtime._disagreement`, float32 tolerances, or no farther from float64 than
  eager float32: :data:`NO_WORSE`).
* Used for float32 tensors on the CPU, outside ``torch.compile`` and ``torch.func`` transforms, and unless
  ``INDUCTIONLAB_FUSED`` is off (0, false, no, off) or inside ``enabled(False)``.  Several torch threads split the
  tasks between them.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from inductionlab import native, rng
from inductionlab._runtime import _disagreement

SOURCE = Path(__file__).with_name("fused_attention.c")
KMAX = 32  # the largest head size it takes: measured, eager/fused ≈ 3 at K = 8, 1.1–1.5 at 16, 0.9–1.2 at 32, 0.7 at 64
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kernel:
    """The built library's two entry points (ctypes functions) and its vector width: sequences per task."""

    forward: Any
    backward: Any
    lanes: int


def _declare(lib: ctypes.CDLL) -> None:
    i64, i32, f32, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    lib.fused_forward.argtypes = [i64, i64, *[i32] * 7, f32, *[ptr] * 9]  # AttributeError: not this library
    lib.fused_backward.argtypes = [i64, i64, *[i32] * 7, f32, *[ptr] * 15]


@functools.cache
def library() -> Kernel | None:
    """The built kernel (:func:`inductionlab.native.build`), or None (logged once) when it cannot be built
    or loaded."""
    lib = native.build(SOURCE, ["-O3", *native.FAST_MATH], _declare, "fused", "fused attention")
    return None if lib is None else Kernel(lib.fused_forward, lib.fused_backward, lib.fused_lanes())  # 16 or 8 lanes


def _kernel() -> Kernel:
    kernel = library()
    if kernel is None:
        raise RuntimeError("fused attention: no kernel (fused.attend uses the eager path then)")
    return kernel


@functools.cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix="inductionlab-fused")


def _call(fn, n_blocks: int, *args) -> None:
    """``fn(n0, n1, *args)`` over all blocks, split between the torch threads (ctypes releases the GIL)."""
    threads = min(torch.get_num_threads(), n_blocks // 4) if n_blocks >= 8 else 1
    bounds = [n_blocks * t // max(threads, 1) for t in range(max(threads, 1) + 1)]
    if threads <= 1:
        codes = [fn(0, n_blocks, *args)]
    else:
        codes = list(_pool(threads).map(lambda t: fn(bounds[t], bounds[t + 1], *args), range(threads)))
    if any(codes):
        raise MemoryError("fused attention: out of memory for a block buffer")


class _Fused(torch.autograd.Function):
    """zt (S, D, L, Bp) contiguous (the batch last, padded to a multiple of the kernel's lanes), W_Q, W_K, W_V
    (S, H, D, K), W_O (S, H, K, D), slope (S, H), float32 → the layer's output (S, D, Lq, Bp)."""

    @staticmethod
    def forward(ctx, zt, W_Q, W_K, W_V, W_O, slope, key_start: int, scale: float, Lq: int):
        tensors = [t.contiguous() for t in (zt, W_Q, W_K, W_V, W_O, slope)]
        if any(t.dtype != torch.float32 or t.device.type != "cpu" for t in tensors):
            raise TypeError("fused attention: float32 CPU tensors only")  # the kernel reads raw float32 memory
        (S, D, L, Bp), (H, K) = zt.shape, W_Q.shape[1::2]
        out, heads, stats = zt.new_empty(S, D, Lq, Bp), zt.new_empty(S, H, Lq * K, Bp), zt.new_empty(S, H, 2 * Lq, Bp)
        dims = (Bp, Lq, L, D, H, K, key_start, scale)
        lib = _kernel()
        _call(lib.forward, S * Bp // lib.lanes, *dims, *(t.data_ptr() for t in (*tensors, out, heads, stats)))
        ctx.save_for_backward(*tensors, heads, stats)
        ctx.dims = dims
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        zt, W_Q = ctx.saved_tensors[:2]
        (S, D, _, Bp), (H, K) = zt.shape, W_Q.shape[1::2]
        lib = _kernel()
        tasks = Bp // lib.lanes
        dz = torch.empty_like(zt)
        dW = [zt.new_empty(S, tasks, H, D, K) for _ in range(4)]  # per task, summed below; W_O's as (K, D)
        dslope = zt.new_empty(S, tasks, H)
        tensors = (*ctx.saved_tensors, dout.contiguous(), dz, *dW, dslope)
        _call(lib.backward, S * tasks, *ctx.dims, *(t.data_ptr() for t in tensors))
        dW_Q, dW_K, dW_V, dW_O = (d.sum(1) for d in dW)
        return dz, dW_Q, dW_K, dW_V, dW_O.view(S, H, K, D), dslope.sum(1), None, None, None


def _layer(
    z: torch.Tensor, W: tuple[torch.Tensor, ...], slope: torch.Tensor, key_start: int, scale: float, Lq: int
) -> torch.Tensor:
    """The attention layer's output (S, B, Lq, D) from z (S, B, L, D), W = (W_Q, W_K, W_V) (S, H, D, K) and W_O
    (S, H, K, D): projections, core and output projection in one kernel, so only z and the output — D wide — change
    layout, and q, k, v never reach memory."""
    S, B, L, D = z.shape
    lanes = _kernel().lanes
    Bp = -(-B // lanes) * lanes
    zt = torch.nn.functional.pad(z.permute(0, 3, 2, 1), (0, Bp - B)).contiguous()  # (S, D, L, Bp)
    out = _Fused.apply(zt, *W, slope, key_start, scale, Lq)
    return out[..., :B].permute(0, 3, 2, 1)


def _usable(*tensors: torch.Tensor) -> bool:
    autocast = any(torch.is_autocast_enabled(t.device.type) for t in tensors)  # the projections would be bf16
    return not autocast and GATE.open(tensors, (torch.float32,), library)


GATE = native.Gate("fused attention disagrees with eager", _log)
enabled = GATE.enabled  # within the block, the fused layer is used where usable (on) or never (the eager path)


Layer = Callable[[torch.Tensor, tuple[torch.Tensor, ...], torch.Tensor, int, float, int], torch.Tensor]


def attend(
    z: torch.Tensor,
    W: tuple[torch.Tensor, ...],
    slope: torch.Tensor,
    key_start: int,
    scale: float,
    Lq: int,
    eager: Layer,
) -> torch.Tensor:
    """An attention layer's output (S, B, Lq, D) for the last Lq queries — fused where usable and checked, else
    ``eager(z, W, slope, key_start, scale, Lq)``.  z (S, B, L, D); W = (W_Q, W_K, W_V, W_O), (S, H, D, K) and
    (S, H, K, D); slope (S, H): each head's RPE slope (0: no RPE term)."""
    key = (tuple(W[0].shape[1:]), z.shape[2], Lq, key_start, scale)
    check = lambda: _self_check(z.shape[2], W[0].shape[1:], key_start, scale, Lq, eager)  # noqa: E731
    if key_start < 1 or W[0].shape[-1] > KMAX or not _usable(z, slope, *W) or not GATE.passes(key, check):
        return eager(z, W, slope, key_start, scale, Lq)
    return _layer(z, W, slope, key_start, scale, Lq)


def _self_check(L: int, HDK: tuple[int, ...], key_start: int, scale: float, Lq: int, eager: Layer) -> str | None:
    """Output and gradients of the fused layer against ``eager`` on inputs of its own (2 runs, 19 sequences: a
    padded lane block; scores of order 1, slopes of either sign); None when they agree within the float32
    tolerances, or when the fused values lie no farther from ``eager`` in float64 than :data:`NO_WORSE` times
    eager's own float32 values do (docs/conventions.md#fused-attention: a gradient summed over B·L² terms, the RPE
    slope's, rounds beyond a fixed tolerance in either path)."""
    H, D, K = HDK
    g = rng.generator(0, "check")
    shapes = [(2, 19, L, D), (2, H, D, K), (2, H, D, K), (2, H, D, K), (2, H, K, D), (2, H)]
    inputs = [torch.randn(s, generator=g) / (D**0.25 if len(s) == 4 and s[1] == H else 1.0) for s in shapes]
    inputs[-1] = inputs[-1] * 0.3
    weight = torch.randn(2, 19, Lq, D, generator=g)
    results = []
    for fn, dtype in ((_layer, torch.float32), (eager, torch.float32), (eager, torch.float64)):
        leaves = [t.to(dtype, copy=True).requires_grad_(True) for t in inputs]
        try:
            with torch.inference_mode(False), torch.enable_grad():
                out = fn(leaves[0], tuple(leaves[1:5]), leaves[5], key_start, scale, Lq)
                (out * weight.to(dtype)).sum().backward()
        except (RuntimeError, MemoryError) as err:
            return f"{type(err).__name__}: {err}"
        results.append([out.detach(), *(torch.zeros_like(t) if t.grad is None else t.grad for t in leaves)])
    problem = _disagreement(results[0], results[1], "(out, dz, dW_Q, dW_K, dW_V, dW_O, dslope)")
    fused, eager32, exact = results
    worse = [
        i
        for i, (f, e, x) in enumerate(zip(fused, eager32, exact))
        if not float((f.double() - x).abs().max()) <= NO_WORSE * float((e.double() - x).abs().max())
    ]
    return problem if problem and worse else None


NO_WORSE = 4.0  # the fused path may round up to this many times farther from float64 than eager float32 does
