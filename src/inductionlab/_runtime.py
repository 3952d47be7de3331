"""Process-level settings for fast tiny-model training on CPU.

* One torch thread per process: the tensors are small, and sweeps run one process per core.
* glibc ``malloc`` keeps large buffers on its heap instead of ``mmap``-ing and faulting them in anew
  on every allocation (measured: 2–3× on the toy model's step at 32 runs).  A no-op off glibc.
* :func:`compiled`: ``torch.compile`` with an eager fallback, for the hot step of long runs, checked against eager
  at each new input shape (:class:`Checked`, which any fused kernel uses too).
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


def use_bf16(choice: str, device: str = "cpu") -> bool:
    """A ``bf16`` key's choice resolved: ``on``, ``off``, or ``auto`` — bf16 autocast only where ``device`` computes
    bf16 natively (:func:`native_bf16`; a CPU without AVX512-BF16 or AMX emulates it, about 8× slower than float32)."""
    return choice == "on" or (choice == "auto" and native_bf16(device))


# (rtol, atol) of the self-check (:class:`Checked`) per output dtype.  float32: 20× the largest spread measured
# between CPU kernel paths (5.1e-6 relative, docs/conventions.md#portable-numbers); float64: the goldens' 1e-9;
# half precision: about 2.5 units in the last place of bf16.  Other dtypes (integers, bool) must be equal.
CHECK_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-9, 1e-12),
    torch.complex128: (1e-9, 1e-12),
    torch.float32: (1e-4, 1e-5),
    torch.complex64: (1e-4, 1e-5),
    torch.float16: (2e-2, 2e-2),
    torch.bfloat16: (2e-2, 2e-2),
}


class Checked:
    """``fast`` (a compiled function, a fused kernel) checked against ``fn``, its eager reference, on the same inputs.

    The first call at each new input signature — every tensor's shape, stride, dtype and device, every Python
    scalar's value: what makes ``torch.compile(dynamic=False)`` compile anew — runs ``fast``, then ``fn`` on clones of
    the inputs as they were before it.  The outputs, and the inputs ``fast`` may have changed in place, agree when
    every entry of every tensor has ``|fast − eager| ≤ rtol·|eager| + atol·max|eager|`` (the tensor's largest entry
    scales ``atol``, so entries near zero beside large ones may carry the large ones' rounding), with ``(rtol,
    atol)`` from :data:`CHECK_TOLERANCES` by dtype (float32: 1e-4, 1e-5), NaN and ±inf where eager has them, and
    other values equal.  On a disagreement the inputs are restored, ``fn`` runs on them and is returned, one warning
    names the path (``name``), and ``fn`` runs eagerly from then on, at every signature.  Later calls at a checked
    signature cost one signature lookup."""

    def __init__(self, fast: Callable[..., Any] | None, fn: Callable[..., Any], name: str) -> None:
        self.fn, self.fast, self.name = fn, fast, name  # fast: None once running eagerly
        self._checked: set = set()

    def __call__(self, *args):
        if self.fast is None:
            return self.fn(*args)
        key = _signature(args)
        if key in self._checked:
            return self.fast(*args)
        before = _clone(args)
        got = self.fast(*args)
        ref_args = _clone(before)
        want = self.fn(*ref_args)
        problem = _disagreement(got, want, "result") or _disagreement(args, ref_args, "argument")
        if problem is None:
            self._checked.add(key)
            return got
        _restore(args, before)
        logging.getLogger(__name__).warning(
            "%s disagrees with eager %s on its first call at %s (%s); running eagerly",
            self.name,
            getattr(self.fn, "__name__", self.fn),
            _describe(key),
            problem,
        )
        self.fast = None
        return self.fn(*args)


class Compiled(Checked):
    """``torch.compile(fn, dynamic=False)`` — one compiled graph per input shape, so a second experiment size in
    the same process compiles afresh instead of guessing dynamic shapes (past torch's recompile limit, 8 shapes,
    Dynamo runs ``fn`` eagerly and says so) — checked against eager ``fn`` at each new shape (:class:`Checked`),
    that falls back to eager ``fn`` whenever compiling fails, at the first call or any later one (a new shape
    compiles anew; Inductor's CPU kernels need a C++ compiler).  The failure is logged once and ``fn`` runs eagerly
    from then on.  An error that ``fn`` raises itself is never hidden: the failed call is repeated eagerly, and an
    eager error propagates."""

    def __init__(self, fn):
        _separate_inductor_cache()
        super().__init__(torch.compile(fn, dynamic=False), fn, f"torch.compile of {getattr(fn, '__name__', fn)}")

    def __call__(self, *args):
        try:
            return super().__call__(*args)
        except Exception as err:  # noqa: BLE001 - any compiler failure: run eagerly instead
            if self.fast is None:
                raise  # fn's own error, raised eagerly
            out = self.fn(*args)  # raises here if the error is fn's own
            logging.getLogger(__name__).warning(
                "%s failed (%s: %s); running eagerly",
                self.name,
                type(err).__name__,
                str(err).splitlines()[0] if str(err) else "",
            )
            self.fast = None
            return out


def _signature(obj: Any) -> Any:
    """What a new compilation depends on: tensors' shapes, strides, dtypes, devices; Python scalars' values."""
    if isinstance(obj, torch.Tensor):
        return ("tensor", tuple(obj.shape), obj.stride(), obj.dtype, obj.device.type, obj.requires_grad)
    if isinstance(obj, tuple | list):
        return (type(obj).__name__, tuple(_signature(o) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _signature(v)) for k, v in obj.items()))
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return type(obj).__qualname__


def _describe(key: Any) -> str:
    """A signature in a short form: ``(2, 10, 64) float32`` for a tensor."""
    if isinstance(key, tuple) and key[:1] == ("tensor",):
        return f"{key[1]} {str(key[3]).removeprefix('torch.')}"
    if isinstance(key, tuple) and len(key) == 2 and key[0] in ("tuple", "list", "dict"):
        return "(" + ", ".join(_describe(k) for k in key[1]) + ")"
    return repr(key)


def _clone(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone().requires_grad_(obj.requires_grad)
    if isinstance(obj, tuple | list):
        items = [_clone(o) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    return obj


def _restore(obj: Any, saved: Any) -> None:
    """Copy the tensors of ``saved`` back into those of ``obj`` (the same structure), in place."""
    if isinstance(obj, torch.Tensor):
        with torch.no_grad():
            obj.copy_(saved)
    elif isinstance(obj, tuple | list):
        for o, s in zip(obj, saved):
            _restore(o, s)
    elif isinstance(obj, dict):
        for k in obj:
            _restore(obj[k], saved[k])


def _disagreement(got: Any, want: Any, where: str) -> str | None:
    """None when ``got`` agrees with ``want`` (the eager reference) within :data:`CHECK_TOLERANCES`; else what differs."""
    if isinstance(want, tuple | list) and isinstance(got, tuple | list) and len(got) == len(want):
        return next((p for i, (g, w) in enumerate(zip(got, want)) if (p := _disagreement(g, w, f"{where}[{i}]"))), None)
    if isinstance(want, dict) and isinstance(got, dict) and got.keys() == want.keys():
        return next((p for k in want if (p := _disagreement(got[k], want[k], f"{where}[{k!r}]"))), None)
    if not isinstance(want, torch.Tensor):
        try:
            return None if got is want or (type(got) is type(want) and bool(got == want)) else f"{where}: {got!r}"
        except (TypeError, ValueError, RuntimeError):  # no truth value (an array): not shown equal
            return f"{where}: {type(want).__name__} values not comparable"
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
        return f"{where}: {_describe(_signature(got))} for {_describe(_signature(want))}"
    if want.dtype not in CHECK_TOLERANCES:
        return None if torch.equal(got, want) else f"{where}: unequal entries"
    rtol, atol = CHECK_TOLERANCES[want.dtype]
    wide = torch.complex128 if want.is_complex() else torch.float64
    g, w = got.detach().cpu().to(wide), want.detach().cpu().to(wide)
    finite = torch.isfinite(w)
    scale = float(w[finite].abs().max()) if bool(finite.any()) else 0.0
    err = torch.where(finite, (g - w).abs(), 0.0)
    same = torch.equal(torch.isnan(g), torch.isnan(w)) and bool((g == w)[torch.isinf(w)].all())
    if same and bool((err <= rtol * w.abs().where(finite, 0.0) + atol * scale).all()):
        return None
    return f"{where}: max |Δ| {float(err.max()):.3g} beyond rtol {rtol:g}, atol {atol:g}·max|eager| ({scale:.3g})"


def _separate_inductor_cache() -> None:
    """Give Inductor's on-disk cache one folder per CPU kernel path, unless the user chose ``TORCHINDUCTOR_CACHE_DIR``.
    Its keys do not include ``ATEN_CPU_CAPABILITY``: a process on the AVX2 path that hits an entry cached on the
    AVX-512 path compiles C++ written for 16-wide vectors with 8-wide ones and returns wrong numbers or corrupts the
    heap (torch 2.13 on an AVX-512 CPU, docs/conventions.md#portable-numbers; ``benchmarks/compiled_mismatch_repro.py``).
    Torch's own default folder counts as not chosen: ``import torch._dynamo`` (which ``transformers`` runs when it
    loads a model class) writes it into the environment."""
    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if chosen is not None and not (
        os.path.basename(chosen).startswith("inductionlab-")  # one of ours, inherited from a parent: chosen anew
        or os.path.abspath(chosen) == os.path.abspath(_torch_default_cache_dir())
    ):
        return  # the user's own folder
    path = "-".join(
        [torch.backends.cpu.get_cpu_capability()]
        + [os.environ.get(k, "") for k in ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")]
    )
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
        _torch_default_cache_dir(), re.sub(r"[^A-Za-z0-9_.-]", "_", f"inductionlab-{path}")
    )


def _torch_default_cache_dir() -> str:
    """The folder Inductor uses when ``TORCHINDUCTOR_CACHE_DIR`` is unset (``$TMPDIR/torchinductor_$USER``)."""
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        return default_cache_dir()
    except (ImportError, AttributeError):
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "user"
        return os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")


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
