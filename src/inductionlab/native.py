"""Native kernels built on first use (docs/conventions.md#fused-attention): a C source compiled by the C compiler
(``$CC``, else ``gcc``, else ``cc``: the one Inductor needs; a compile has :data:`BUILD_TIMEOUT` seconds) into
``$XDG_CACHE_HOME/inductionlab/fused`` (``~/.cache``), one library per source, flags, compiler and CPU (its
``/proc/cpuinfo`` flags and torch's CPU capability: ``ATEN_CPU_CAPABILITY=avx2`` builds for AVX2), written
atomically; an entry that fails to load is removed and built again once, and killed builds' temporaries are
swept.  Without a compiler, when ``INDUCTIONLAB_FUSED`` is off, or when the build fails, a kernel is unavailable:
one log line, and its caller runs eagerly."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path

import torch

from inductionlab import environ

_log = logging.getLogger(__name__)
# -ffast-math's parts less -ffinite-math-only: -ffast-math itself links crtfastmath.o (gcc ≤ 12, even -shared), whose
# constructor sets flush-to-zero for the whole process on load — every eager float op after it would flush subnormals
FAST_MATH = ["-fno-math-errno", "-fno-trapping-math", "-fno-signed-zeros", "-freciprocal-math", "-fassociative-math"]
BUILD_TIMEOUT = 300  # seconds a compile may take before it counts as failed (the build takes a few)
STALE = 3600  # seconds after which a build's leftover temporary (a killed build's) is swept


def arch_flags() -> list[str]:
    """Vector flags for torch's CPU capability (which ``ATEN_CPU_CAPABILITY`` lowers): the CPU's own on AVX-512,
    AVX2 + FMA on the AVX2 path, none on the default path or off x86."""
    capability = torch.backends.cpu.get_cpu_capability().lower()
    if os.uname().machine not in ("x86_64", "AMD64"):
        return []
    return {"avx512": ["-march=native", "-mprefer-vector-width=512"], "avx2": ["-mavx2", "-mfma"]}.get(capability, [])


def _cpu_flags() -> str:
    try:
        return next((line for line in open("/proc/cpuinfo") if line.startswith("flags")), "")
    except OSError:
        return ""


def build(
    source: Path,
    flags: list[str],
    declare: Callable[[ctypes.CDLL], None],
    name: str,
    what: str,
    libs: tuple[str, ...] = ("-lm",),
) -> ctypes.CDLL | None:
    """The library of ``source`` built with ``flags`` (and ``-fPIC -shared`` and the vector flags) and linked with
    ``libs``, its entry points
    typed by ``declare`` (which raises AttributeError for a library without them), cached as ``name-KEY.so``; None
    (logged once, naming ``what``) when it cannot be built or loaded.  ``INDUCTIONLAB_FUSED`` and ``CC`` are read
    strictly (:mod:`inductionlab.environ`): a value it cannot read fails, naming the variable."""
    if not environ.flag("INDUCTIONLAB_FUSED", True):
        return None
    cc = environ.compiler()
    if cc is None:
        _log.warning("%s unavailable (no C compiler: set CC); running eagerly", what)
        return None
    flags = [*flags, "-fPIC", "-shared", *arch_flags()]
    try:
        version = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=60).stdout
        parts = [source.read_text(), *cc, *flags, *libs, version, _cpu_flags()]
        key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "inductionlab" / "fused"
        path = cache / f"{name}-{key[:16]}.so"
        _sweep(cache)
        try:
            lib = _load(cc, flags, libs, source, path, declare)
        except (OSError, AttributeError):  # a damaged entry (a truncated file): removed and built again, once
            path.unlink(missing_ok=True)
            lib = _load(cc, flags, libs, source, path, declare)
    except (OSError, AttributeError, subprocess.SubprocessError) as err:
        _log.warning("%s unavailable (%s); running eagerly", what, err)
        return None
    return lib


def _sweep(cache: Path) -> None:
    """Remove the temporaries that killed builds left in ``cache`` (older than :data:`STALE` seconds)."""
    now = time.time()
    for tmp in cache.glob("tmp*.so") if cache.is_dir() else ():
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime > STALE:
                tmp.unlink()


def _load(
    cc: list[str],
    flags: list[str],
    libs: tuple[str, ...],
    source: Path,
    path: Path,
    declare: Callable[[ctypes.CDLL], None],
) -> ctypes.CDLL:
    """The library at ``path``, built there first when absent: into a temporary of this process, then renamed in
    place, so that two processes building at once never read each other's half-written file."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=path.parent)
        os.close(fd)
        try:
            done = subprocess.run(
                [*cc, *flags, str(source), "-o", tmp, *libs], capture_output=True, text=True, timeout=BUILD_TIMEOUT
            )
            if done.returncode:
                raise OSError(f"{cc[0]} failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
            os.replace(tmp, path)
            tmp = ""  # renamed: nothing of ours is left to remove
        finally:
            if tmp:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    lib = ctypes.CDLL(str(path))
    declare(lib)
    return lib


class Gate:
    """When a native kernel may run (docs/conventions.md#fused-attention): switched on (:meth:`enabled` for a
    block), no self-check failed in this process (``failed``: the first disagreement turns the kernel off), and the
    configuration's own self-check passed (``checked``: the keys that did, each checked once)."""

    def __init__(self, disagrees: str, log: logging.Logger) -> None:
        """``disagrees``: the warning's words, e.g. "the fused Chen loops disagree with eager"."""
        self.disagrees, self.log = disagrees, log
        self.on = True
        self.failed: list[str] = []
        self.checked: set[Hashable] = set()

    @contextlib.contextmanager
    def enabled(self, on: bool) -> Iterator[None]:
        """Within the block, the kernel is used where usable (``on``) or never (the eager path)."""
        before, self.on = self.on, on
        try:
            yield
        finally:
            self.on = before

    def open(
        self, tensors: Sequence[torch.Tensor], dtypes: tuple[torch.dtype, ...], library: Callable[[], object]
    ) -> bool:
        """Whether the kernel may take ``tensors``: switched on, no failed check, CPU tensors of one type among
        ``dtypes`` (no promotion), outside ``torch.compile`` and ``torch.func`` transforms, its ``library()`` built."""
        functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)
        return (
            self.on
            and not self.failed
            and all(t.device.type == "cpu" and t.dtype == tensors[0].dtype for t in tensors)
            and tensors[0].dtype in dtypes
            and not torch.compiler.is_compiling()
            and not functorch_active()
            and library() is not None
        )

    def passes(self, key: Hashable, check: Callable[[], str | None]) -> bool:
        """Whether the kernel passed its self-check at ``key`` (``check()`` runs now when the key is new: None, or
        what disagrees); a failure is logged once and turns the kernel off for the process."""
        if key in self.checked:
            return True
        problem = check()
        if problem:
            self.failed.append(problem)
            self.log.warning("%s at %s (%s); running eagerly", self.disagrees, key, problem)
            return False
        self.checked.add(key)
        return True
