"""``torch.rand`` on a CPU generator, the same numbers faster (``mt19937.c``; docs/conventions.md#fast-uniforms).

A torch CPU generator is a 32-bit MT19937 whose state ``Generator.get_state()`` exposes: :func:`rand` reads it,
draws the values in C as ``torch.rand`` does (one draw per float32 value, two per float64) and writes the state
back, so the values and the generator afterwards are ``torch.rand``'s bit for bit.

* Built on first use (:func:`inductionlab.native.build`, integer arithmetic and exact conversions).
* Checked against ``torch.rand`` at the first call of each dtype (values, and the generator's state after), on a
  generator of its own; a disagreement (another torch's generator layout, say) logs one warning and ``torch.rand``
  runs from then on; so does any generator state it does not recognise.
* Used for CPU generators unless ``INDUCTIONLAB_FUSED`` is off or inside ``enabled(False)``.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import math
from pathlib import Path

import numpy as np
import torch

from inductionlab import native, rng

SOURCE = Path(__file__).with_name("mt19937.c")
GATE = native.Gate("the fast uniforms disagree with torch.rand", logging.getLogger(__name__))
enabled = GATE.enabled  # within the block, the C draws are used where usable (on) or never (torch.rand)
SMALL = 4096  # values below which torch.rand itself is quicker than reading and writing the state (~5 KB)
STATE_BYTES, WORDS = 5056, 624  # torch's CPU generator state: seed, left, seeded, next, then 624 words (uint64 each)
_LEFT, _NEXT, _STATE = 8, 16, 24  # byte offsets of left (int32), next (uint64) and the words in it


def _declare(lib: ctypes.CDLL) -> None:
    ptr, i64 = ctypes.c_void_p, ctypes.c_int64
    for name in ("uniform_f32", "uniform_f64"):
        getattr(lib, name).argtypes = [ptr, ptr, ptr, i64, ptr]


@functools.cache
def library() -> ctypes.CDLL | None:
    """The built generator, or None (logged once) when it cannot be built or loaded."""
    return native.build(SOURCE, ["-O3", "-fopenmp-simd"], _declare, "mt19937", "the fast uniforms")


def _draw(generator: torch.Generator, n: int, dtype: torch.dtype) -> torch.Tensor | None:
    """n values (flat) drawn in C from ``generator``'s state, which is advanced as torch.rand would; None (nothing
    drawn) when the state is not one it reads."""
    lib = library()
    state = generator.get_state()
    if lib is None or state.numel() != STATE_BYTES:
        return None
    raw = state.numpy().tobytes()
    words = np.frombuffer(raw, dtype="<u8", count=WORDS, offset=_STATE)
    left = np.frombuffer(raw, dtype="<i4", count=1, offset=_LEFT).astype(np.int64)
    nxt = np.frombuffer(raw, dtype="<u8", count=1, offset=_NEXT).astype(np.int64)
    if not (1 <= left[0] <= WORDS and 0 <= nxt[0] <= WORDS and left[0] + nxt[0] <= WORDS + 1 and words.max() < 2**32):
        return None
    s = words.astype(np.uint32)
    out = torch.empty(n, dtype=dtype)
    fn = lib.uniform_f64 if dtype == torch.float64 else lib.uniform_f32
    fn(s.ctypes.data, left.ctypes.data, nxt.ctypes.data, n, out.data_ptr())
    new = bytearray(raw)
    new[_STATE : _STATE + 8 * WORDS] = s.astype("<u8").tobytes()
    new[_LEFT : _LEFT + 4] = int(left[0]).to_bytes(4, "little", signed=True)
    new[_NEXT : _NEXT + 8] = int(nxt[0]).to_bytes(8, "little")
    generator.set_state(torch.frombuffer(new, dtype=torch.uint8).clone())
    return out


def rand(shape: tuple[int, ...], generator: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``torch.rand(shape, generator=generator, dtype=dtype)``, bit for bit and with the generator left where it
    would leave it — drawn in C where usable and checked."""
    usable = (
        math.prod(shape) >= SMALL
        and dtype in (torch.float32, torch.float64)
        and generator.device.type == "cpu"
        and GATE.open((torch.empty(0),), (torch.float32,), library)
        and GATE.passes(dtype, lambda: _check(dtype))
    )
    out = _draw(generator, math.prod(shape), dtype) if usable else None
    return torch.rand(shape, generator=generator, dtype=dtype) if out is None else out.view(shape)


def _check(dtype: torch.dtype) -> str | None:
    """Values and the state after, against torch.rand, from a fresh seed and from mid-block, across a twist."""
    mine, theirs = rng.generator(11, "check"), rng.generator(11, "check")
    for n in (5, 1000, 1500):  # 2 × 1500 float64 draws cross the 624-word blocks
        got = _draw(mine, n, dtype)
        want = torch.rand(n, generator=theirs, dtype=dtype)
        if got is None or not torch.equal(got, want):
            return f"the values of {n} draws differ"
        if not torch.equal(mine.get_state(), theirs.get_state()):
            return f"the generator's state after {n} draws differs"
    return None
