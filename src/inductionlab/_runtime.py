"""Process-level settings for fast tiny-model training on CPU.

* One torch thread per process: the tensors are small, and sweeps run one process per core.
* glibc ``malloc`` keeps large buffers on its heap instead of ``mmap``-ing and faulting them in anew
  on every allocation (measured: 2–3× on the toy model's step at 32 runs).  A no-op off glibc.
* :func:`compiled`: ``torch.compile`` with an eager fallback, for the hot step of long runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import signal
import threading

import torch

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def tune_process(threads: int = 1) -> bool:
    """Set the torch threads (every call) and tune the allocator (once per process); returns whether the
    allocator tuning took effect."""
    torch.set_num_threads(threads)
    return _tune_allocator()


@functools.cache
def _tune_allocator() -> bool:
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 1 << 30)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 31))


_PR_SET_PDEATHSIG = 1


def worker_init(parent: int | None = None) -> None:
    """Initialiser of a sweep's worker processes: one torch thread, the tuned allocator, and — on Linux — a
    request to the kernel to kill this worker when its parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), so a
    killed sweep leaves no orphan finishing jobs behind it.  Elsewhere the workers notice at their next job.
    ``parent``: the sweep's pid; a worker that starts after its parent already died (a spawned worker still
    importing when the sweep is killed: the kernel request comes too late for it) exits at once."""
    name = ctypes.util.find_library("c")
    if name is not None and hasattr(signal, "SIGKILL"):
        try:
            ctypes.CDLL(name).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if parent is not None and os.getppid() != parent:
        os._exit(1)
    tune_process()


def native_bf16(device: str = "cpu") -> bool:
    """Whether bf16 matrix products run natively on ``device``: a GPU that supports bf16, or a CPU with AVX512-BF16
    or AMX-BF16 (without them autocast emulates bf16 and runs several times slower than float32)."""
    if device.startswith("cuda"):
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


class Compiled:
    """``torch.compile(fn)`` that falls back to eager ``fn`` if compiling fails (Inductor's CPU kernels
    need a C++ compiler); the failure is logged once.  Only the first call can fall back, so an error
    raised by ``fn`` itself later is never hidden."""

    def __init__(self, fn):
        self.fn, self._compiled, self._checked = fn, torch.compile(fn), False

    def __call__(self, *args):
        if self._checked:
            return self._compiled(*args) if self._compiled is not None else self.fn(*args)
        try:
            out = self._compiled(*args)
        except Exception as err:  # noqa: BLE001 - any compiler failure: run eagerly instead
            logging.getLogger(__name__).warning(
                "torch.compile of %s failed (%s: %s); running eagerly",
                getattr(self.fn, "__name__", self.fn),
                type(err).__name__,
                err,
            )
            self._compiled, out = None, self.fn(*args)
        self._checked = True
        return out


@functools.cache
def compiled(fn) -> Compiled:
    """One :class:`Compiled` wrapper per function and process (compiled code is reused across calls)."""
    return Compiled(fn)


class StopFlag:
    """Context manager: SIGINT (Ctrl-C) or SIGTERM (``timeout``, a scheduler's time limit) sets ``raised``, which a
    training loop checks at step boundaries to checkpoint and stop cleanly (installed from the main thread only)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.raised = False
        self._old: dict = {}

    def __enter__(self) -> StopFlag:
        if threading.current_thread() is threading.main_thread():
            self._old = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def _handle(self, signum, frame) -> None:
        self.raised = True

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
