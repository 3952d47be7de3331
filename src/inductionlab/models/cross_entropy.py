"""Next-token cross-entropy over rows of logits in one native pass per row, forward and backward
(``cross_entropy.c``; docs/conventions.md#fused-cross-entropy).

The eager path, ``F.cross_entropy(z.float(), t, reduction="none")``, writes a float32 copy of bf16 logits, their
log-softmax, a zero gradient for the picked entries, the log-softmax backward and the cast back: five passes over
the largest tensor of a language model's step.  The fused loss reads the logits once forward and once backward and
writes their gradient in their own type.

* Built on first use (:func:`inductionlab.models.native.build`, IEEE comparisons, glibc's vector ``expf``).
* Checked against the eager loss, values and gradients, at the first call of each logit dtype on inputs of its
  own; a disagreement logs one warning and turns it off for the process.
* Used for contiguous 2-D CPU logits (float32 or bfloat16) outside ``torch.compile`` and ``torch.func``
  transforms, unless ``INDUCTIONLAB_FUSED`` is off or inside ``enabled(False)``; anywhere else the eager loss runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F

from inductionlab import rng
from inductionlab._runtime import _disagreement
from inductionlab.models import native

SOURCE = Path(__file__).with_name("cross_entropy.c")
_log = logging.getLogger(__name__)
_switch = {"on": True}
_failed: list[str] = []  # the first disagreement: the fused loss is off for the process
_checked: set[torch.dtype] = set()


def _declare(lib: ctypes.CDLL) -> None:
    i64, i32, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    lib.ce_forward.argtypes = [i32, i64, i64, *[ptr] * 5]
    lib.ce_backward.argtypes = [i32, i64, i64, *[ptr] * 6]


@functools.cache
def library() -> ctypes.CDLL | None:
    """The built loops, or None (logged once) when they cannot be built or loaded."""
    flags = ["-O3", "-fopenmp-simd", "-fno-math-errno"]
    return native.build(SOURCE, flags, _declare, "cross-entropy", "the fused cross-entropy", ("-lmvec", "-lm"))


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, t):
        R, V = z.shape
        lse, loss, buf = (torch.empty(n, dtype=torch.float32) for n in (R, R, V))
        assert library() is not None  # _usable checked it
        library().ce_forward(z.dtype == torch.bfloat16, R, V, z.data_ptr(), t.data_ptr(), *_ptrs(buf, lse, loss))
        ctx.save_for_backward(z, t, lse)
        return loss

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        z, t, lse = ctx.saved_tensors
        R, V = z.shape
        dz, buf, g = torch.empty_like(z), torch.empty(V, dtype=torch.float32), g.float().contiguous()
        args = (z.data_ptr(), t.data_ptr(), *_ptrs(lse, g, buf, dz))
        library().ce_backward(z.dtype == torch.bfloat16, R, V, *args)
        return dz, None


def _ptrs(*tensors: torch.Tensor) -> list[int]:
    return [x.data_ptr() for x in tensors]


def eager(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The reference: ``F.cross_entropy`` of the float32 logits, per row."""
    return F.cross_entropy(z.float(), t, reduction="none")


def _usable(z: torch.Tensor, t: torch.Tensor) -> bool:
    functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)
    return (
        _switch["on"]
        and not _failed
        and z.device.type == "cpu"
        and z.dim() == 2
        and z.shape[1] >= 1
        and z.dtype in (torch.float32, torch.bfloat16)
        and t.dtype == torch.int64
        and not torch.compiler.is_compiling()
        and not functorch_active()
        and library() is not None
    )


@contextlib.contextmanager
def enabled(on: bool) -> Iterator[None]:
    """Within the block, the fused loss is used where usable (``on``) or never (the eager path)."""
    before, _switch["on"] = _switch["on"], on
    try:
        yield
    finally:
        _switch["on"] = before


def cross_entropy(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Per-row next-token loss (R,) float32 of logits z (R, V) at targets t (R,) — fused where usable and checked,
    else :func:`eager`.  Targets must lie in 0..V−1 (the fused path does not check them; a language model's do)."""
    if not _usable(z, t) or not _passes(z.dtype):
        return eager(z, t)
    return _CrossEntropy.apply(z.contiguous(), t.contiguous())


def _passes(dtype: torch.dtype) -> bool:
    """Whether the fused loss passed its self-check for logits of ``dtype`` (run now when new); a failure is
    logged once and turns it off for the process."""
    if dtype in _checked:
        return True
    problem = _check(dtype)
    if problem:
        _failed.append(problem)
        _log.warning("the fused cross-entropy disagrees with eager for %s logits (%s); running eagerly", dtype, problem)
        return False
    _checked.add(dtype)
    return True


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
