"""Process-level settings for fast tiny-model training on CPU.

* One torch thread per process: the tensors are small, and sweeps run one process per core.
* glibc ``malloc`` keeps large buffers on its heap instead of ``mmap``-ing and faulting them in anew
  on every allocation (measured: 2–3× on the toy model's step at 32 runs).  A no-op off glibc.
* :func:`compiled`: ``torch.compile`` with an eager fallback, for the hot step of long runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import getpass
import logging
import os
import re
import signal
import tempfile
import threading
from collections.abc import Callable
from typing import Any

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
    """``torch.compile(fn, dynamic=False)`` — one compiled graph per input shape, so a second experiment size in
    the same process compiles afresh instead of guessing dynamic shapes (past torch's recompile limit, 8 shapes,
    Dynamo runs ``fn`` eagerly and says so) — that falls back to eager ``fn`` whenever
    compiling fails, at the first call or any later one (a new shape compiles anew; Inductor's CPU kernels need
    a C++ compiler).  The failure is logged once and ``fn`` runs eagerly from then on.  An error that ``fn``
    raises itself is never hidden: the failed call is repeated eagerly, and an eager error propagates."""

    def __init__(self, fn):
        _separate_inductor_cache()
        self.fn, self._compiled = fn, torch.compile(fn, dynamic=False)

    def __call__(self, *args):
        if self._compiled is None:
            return self.fn(*args)
        try:
            return self._compiled(*args)
        except Exception as err:  # noqa: BLE001 - any compiler failure: run eagerly instead
            out = self.fn(*args)  # raises here if the error is fn's own
            logging.getLogger(__name__).warning(
                "torch.compile of %s failed (%s: %s); running eagerly",
                getattr(self.fn, "__name__", self.fn),
                type(err).__name__,
                str(err).splitlines()[0] if str(err) else "",
            )
            self._compiled = None
            return out


def _separate_inductor_cache() -> None:
    """Give Inductor's on-disk cache one folder per CPU kernel path, unless the user set ``TORCHINDUCTOR_CACHE_DIR``.
    Its keys do not include ``ATEN_CPU_CAPABILITY``: a kernel cached by a process on the AVX2 path and loaded by
    one on the AVX-512 path corrupted the heap (measured with torch 2.13 on an AVX-512 CPU:
    docs/conventions.md#portable-numbers)."""
    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if chosen is not None and not os.path.basename(chosen).startswith("inductionlab-"):
        return  # the user's own folder (one of ours, inherited from a parent process, is chosen anew)
    path = "-".join(
        [torch.backends.cpu.get_cpu_capability()]
        + [os.environ.get(k, "") for k in ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")]
    )
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "user"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
        tempfile.gettempdir(), f"torchinductor_{user}", re.sub(r"[^A-Za-z0-9_.-]", "_", f"inductionlab-{path}")
    )


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


class Worker:
    """A spawned process that runs ``fn`` on each item sent through its own pipe (:func:`_serve`), so that a pool
    of them can tell which item a worker that died (killed, out of memory) was running: that one fails, no other."""

    def __init__(self, ctx: Any, fn: Callable[[Any], Any]) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, os.getpid(), fn))
        self.process.start()
        child.close()

    def outcome(self) -> tuple[str, Any]:
        """("done", fn's result) or ("failed", the error) of the item this worker was running, also if it died."""
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self.process.join()
            code = self.process.exitcode or 0
            how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            return "failed", f"WorkerDied: the process running it died ({how}); re-run the sweep to retry it"

    def stop(self) -> None:
        """End the process: at once when idle; when busy, SIGTERM (a training loop checkpoints on it), then kill."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        for end, wait_s in ((None, 1), (self.process.terminate, 30), (self.process.kill, None)):
            if end is not None and self.process.is_alive():
                end()
            self.process.join(wait_s)
        self.conn.close()


def _serve(conn: Any, parent: int, fn: Callable[[Any], Any]) -> None:
    """A pool worker: run ``fn`` on each item received until None comes, replying ("done", result) or ("failed",
    error); a Ctrl-C ends it quietly (an interrupted sweep job resumes when the sweep is run again)."""
    worker_init(parent)
    with contextlib.suppress(KeyboardInterrupt, EOFError):  # Ctrl-C, or the parent is gone
        while (item := conn.recv()) is not None:
            try:
                reply: tuple[str, Any] = ("done", fn(item))
            except Exception as err:  # noqa: BLE001 - sent back and recorded; the worker takes the next item
                reply = ("failed", f"{type(err).__name__}: {err}")
            conn.send(reply)
