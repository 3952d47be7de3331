"""Next-token cross-entropy over rows of logits in one native pass per row, forward and backward
(``cross_entropy.c``; docs/conventions.md#fused-cross-entropy).

The eager path, ``F.cross_entropy(z.float(), t, reduction="none")``, writes a float32 copy of bf16 logits, their
log-softmax, a zero gradient for the picked entries, the log-softmax backward and the cast back: five passes over
the largest tensor of a language model's step.  The fused loss reads the logits once forward and once backward and
writes their gradient in their own type.

* Built on first use (:func:`inductionlab.native.build`, IEEE comparisons, glibc's vector ``expf``).
* Checked against the eager loss, values and gradients, at the first call of each logit dtype on inputs of its
  own; a disagreement logs one warning and turns it off for the process.
* Used for contiguous 2-D CPU logits (float32 or bfloat16) outside ``torch.compile`` and ``torch.func``
  transforms, unless ``INDUCTIONLAB_FUSED`` is off or inside ``enabled(False)``; anywhere else the eager loss runs.
* Several torch threads split the rows between them (each row is its own: the numbers do not depend on the split).
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import torch.nn.functional as F

from inductionlab import native, rng
from inductionlab._runtime import _disagreement

SOURCE = Path(__file__).with_name("cross_entropy.c")
GATE = native.Gate("the fused cross-entropy disagrees with eager", logging.getLogger(__name__))
enabled = GATE.enabled  # within the block, the fused loss is used where usable (on) or never (the eager loss)


def _declare(lib: ctypes.CDLL) -> None:
    i64, i32, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    lib.ce_forward.argtypes = [i32, i64, i64, i64, *[ptr] * 5]
    lib.ce_backward.argtypes = [i32, i64, i64, i64, *[ptr] * 6]


@functools.cache
def library() -> ctypes.CDLL | None:
    """The built loops, or None (logged once) when they cannot be built or loaded."""
    flags = ["-O3", "-fopenmp-simd", "-fno-math-errno"]
    return native.build(SOURCE, flags, _declare, "cross-entropy", "the fused cross-entropy", ("-lmvec", "-lm"))


ROWS_PER_THREAD = 256  # rows below which another thread is not worth its start


@functools.cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix="inductionlab-ce")


def _over_rows(fn: Callable[..., None], R: int, V: int, *args: int) -> None:
    """``fn(r0, r1, V, *args, buf)`` over the rows 0..R−1, split between the torch threads (ctypes releases the
    GIL), each with its own float32 buffer of V."""
    threads = max(1, min(torch.get_num_threads(), R // ROWS_PER_THREAD))
    bufs = torch.empty(threads, V, dtype=torch.float32)
    bounds = [R * k // threads for k in range(threads + 1)]
    call = lambda k: fn(bounds[k], bounds[k + 1], V, *args, bufs[k].data_ptr())  # noqa: E731
    if threads == 1:
        call(0)
    else:
        list(_pool(threads).map(call, range(threads)))


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, t):
        R, V = z.shape
        lse, loss = torch.empty(R, dtype=torch.float32), torch.empty(R, dtype=torch.float32)
        lib = library()
        assert lib is not None  # _usable checked it
        forward = functools.partial(lib.ce_forward, z.dtype == torch.bfloat16)
        _over_rows(forward, R, V, z.data_ptr(), t.data_ptr(), *_ptrs(lse, loss))
        ctx.save_for_backward(z, t, lse)
        return loss

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        z, t, lse = ctx.saved_tensors
        R, V = z.shape
        dz, g = torch.empty_like(z), g.float().contiguous()
        lib = library()
        assert lib is not None  # the forward ran
        backward = functools.partial(lib.ce_backward, z.dtype == torch.bfloat16)
        _over_rows(backward, R, V, z.data_ptr(), t.data_ptr(), *_ptrs(lse, g, dz))
        return dz, None


def _ptrs(*tensors: torch.Tensor) -> list[int]:
    return [x.data_ptr() for x in tensors]


def eager(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The reference: ``F.cross_entropy`` of the float32 logits, per row."""
    return F.cross_entropy(z.float(), t, reduction="none")


def _usable(z: torch.Tensor, t: torch.Tensor) -> bool:
    good = z.dim() == 2 and z.shape[1] >= 1 and t.dtype == torch.int64 and t.device == z.device
    return good and GATE.open((z,), (torch.float32, torch.bfloat16), library)


def cross_entropy(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Per-row next-token loss (R,) float32 of logits z (R, V) at targets t (R,) — fused where usable and checked,
    else :func:`eager`.  Targets must lie in 0..V−1 (the fused path does not check them; a language model's do)."""
    if not _usable(z, t) or not GATE.passes(z.dtype, lambda: _check(z.dtype)):
        return eager(z, t)
    return _CrossEntropy.apply(z.contiguous(), t.contiguous())


def _check(dtype: torch.dtype) -> str | None:
    """Loss and gradient (of a random weighting) on 37 rows of 203 logits of its own, large and small."""
    g = rng.generator(4, "check")
    z = (torch.randn(37, 203, generator=g) * torch.logspace(-2, 1.5, 37).view(-1, 1)).to(dtype)
    t = torch.randint(0, 203, (37,), generator=g)
    weight = torch.randn(37, generator=g)
    results = []
    for fn in (_CrossEntropy.apply, eager):
        leaf = z.clone().requires_grad_(True)
        with torch.inference_mode(False), torch.enable_grad():
            loss = fn(leaf, t)
            (loss * weight).sum().backward()
        assert leaf.grad is not None
        results.append([loss.detach(), leaf.grad.float()])
    return _disagreement(results[0], results[1], "(loss, dz)")
