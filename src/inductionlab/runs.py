"""The run directory: what every experiment writes, and how to read and write it (the format only; running an
experiment into one is :mod:`inductionlab.runner`).

Layout of a run directory::

    config.json        the resolved config (every field, after presets and overrides), under the experiment's
                       name; a plug-in's experiment also records its plug-in (``plugins``: :data:`META`)
    metrics.parquet    training curves, long format: one row per (run, stage, eval step) — columns
                       run, seed, stage, step, t (= lr × step within the stage), loss, loss_G4,
                       loss_IH2, p_tilde, p, w_V1, w_V2, w_Q, w_K, w_KQ
    <name>.parquet     further tables of the experiment (e.g. gf.parquet, results.parquet)
    summary.json       headline numbers (phase times, final parameters, wall_seconds, versions); written
                       last, it marks a finished run.  ``wall_seconds`` is the run's time over all its segments
                       (the first run and each ``--resume``); a resumed run's ``wall_seconds_segments`` lists them
    wall.json          an unfinished run's segments so far (removed when the run finishes)
    *.png              figures (re-made from the saved tables by ``inductionlab report DIR``)
    checkpoints/       ckpt.pt (and one file per further training run of the experiment): resumable
                       with ``--resume``
    .lock              held (``flock``) by the one process writing the directory; holds its PID

Every file is written atomically (temporary file + rename), so an interrupted run never leaves a
half-written file behind (docs/conventions.md#one-writer).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from inductionlab.config import ConfigError
from inductionlab.record import jsonable

CONFIG, SUMMARY, WALL = "config.json", "summary.json", "wall.json"
# config.json's keys that are no config values: the experiment's name and, for a plug-in's experiment, the plug-in
# that registers it ([{"spec": as given, "resolved": module or absolute .py path}], docs/own_experiment.md#travel)
META = ("experiment", "plugins", "code")  # not config values: what runs it and which code made it
SWEEP_INFO, REPRODUCE_INFO = "sweep.json", "reproduce.json"  # what marks a sweep's and a reproduce's directory
KINDS = {CONFIG: "a run", SWEEP_INFO: "a sweep", REPRODUCE_INFO: "a reproduce run"}


def other_kind(path: Path, own: str) -> str:
    """What directory ``path`` holds that is not of the kind ``own`` marks (a key of :data:`KINDS`): runs, sweeps
    and reproduce runs never share a directory.  ``"a sweep (sweep.json)"``, or ``""``."""
    for mark, what in KINDS.items():
        if mark != own and (Path(path) / mark).exists():
            return f"{what} ({mark})"
    return ""


def config_values(saved: dict[str, Any]) -> dict[str, Any]:
    """The config values of a saved config.json (a dict): every key but :data:`META`'s."""
    return {k: v for k, v in saved.items() if k not in META}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class RunFileError(ConfigError):
    """A file of a run directory is missing, damaged, or not this toolkit's (``path``: the file); the message names
    it and what to do.  A :class:`~inductionlab.config.ConfigError`, so that the command line exits with status 2."""

    def __init__(self, message: str, path: str | Path | None = None):
        super().__init__(message)
        self.path = Path(path) if path is not None else None


def why(err: BaseException) -> str:
    """``Type: first line`` of an exception, at most 160 characters."""
    line = (str(err).splitlines() or [""])[0]
    return f"{type(err).__name__}: {line[:160]}".rstrip(": ")


def read_json(path: Path, what: str, default: Any = None, fix: str = "re-run the experiment") -> Any:
    """The one reader of a run's JSON files (summary.json, config.json, reproduce.json, …): its object, ``default``
    when the file does not exist (None: it must), or :class:`RunFileError` naming the file, what it should hold and
    ``fix`` when it cannot be read or holds no JSON object."""
    path = Path(path)
    if default is not None and not path.exists():
        return default
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunFileError(f"{path} is damaged or not {what} ({why(err)}); {fix}", path) from None
    if not isinstance(data, dict):
        raise RunFileError(f"{path} holds no JSON object, so it is not {what}; {fix}", path)
    return data


class WriteError(OSError):
    """A file of a run could not be written (a full disk, a quota, a lost mount); ``filename`` names it.  The file
    it was to replace, if any, is untouched: a checkpoint write that fails keeps the last good checkpoint."""


# How torch.save reports a write the file system refused (a full disk, a quota): a RuntimeError from its zip writer.
TORCH_WRITE_FAILED = re.compile(r"inline_container|PytorchStreamWriter|file write failed|unexpected pos")


def atomic_write(path: Path, write: Callable[[str], object]) -> None:
    """Write through a temporary file and a rename, with the permissions the umask gives a new file (0644 under
    022; ``mkstemp`` alone would leave 0600).  Any failure of the write is a :class:`WriteError` naming ``path``
    (torch reports a full disk as a ``RuntimeError``, matplotlib as an ``OSError`` without the file's name); any
    other error of ``write`` is a bug and keeps its traceback."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:
        if isinstance(err, RuntimeError) and not TORCH_WRITE_FAILED.search(str(err)):
            raise  # a bug of the writer, not a failed write: keep its traceback
        code = getattr(err, "errno", None) or _errno_of(tmp)
        reason = os.strerror(code) if code else str(err).splitlines()[0] if str(err) else type(err).__name__
        raise WriteError(code or errno.EIO, reason, str(path)) from err
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _errno_of(tmp: str) -> int | None:
    """ENOSPC when the file system of ``tmp`` has no space left (what a failed write most often means), else None."""
    try:
        stat = os.statvfs(os.path.dirname(tmp) or ".")
    except OSError:
        return None
    return errno.ENOSPC if stat.f_bavail * stat.f_frsize < (1 << 20) else None


LOCK = ".lock"


class DirectoryInUse(RuntimeError):
    """Another live process writes this directory (it holds the directory's lock); the message names its PID."""


def _take(path: Path, create: bool, wait_s: float) -> int | None:
    """The open lock file of ``path`` with its exclusive lock held (None: ``create`` is off and there is none);
    :class:`DirectoryInUse`, naming the holder's PID, if a live process holds it longer than ``wait_s`` (a check
    by :func:`check_free` holds it for a moment).  A lock file its last holder removed after we opened it is opened
    anew, so two processes never hold locks on two different files."""
    deadline = time.monotonic() + wait_s
    while True:
        if create:
            path.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path / LOCK, os.O_RDWR | (os.O_CREAT if create else 0), 0o666 & ~_umask())
        except (FileNotFoundError, NotADirectoryError):
            if create:
                continue  # the directory went between mkdir and open: make it again
            return None  # no lock file, no directory (or a file): nobody writes there
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            if time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            raise DirectoryInUse(
                f"{path} is being written by process {holder} (it holds {path / LOCK}); wait for it to finish, "
                f"stop it (kill {holder}), or use another --out"
            ) from None
        try:
            current = os.path.samestat(os.fstat(fd), os.stat(path / LOCK))
        except FileNotFoundError:
            current = False
        if current or not create:
            return fd
        os.close(fd)


def check_free(path: Path) -> None:
    """Raise :class:`DirectoryInUse` at once if a live process holds ``path``'s lock (before any other check)."""
    fd = _take(Path(path), create=False, wait_s=0.0)
    if fd is not None:
        os.close(fd)


@contextmanager
def lock_dir(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path/.lock`` for the block: one writer per run, sweep or reproduce
    directory.  The kernel releases the lock when its process dies, so a lock left by a dead process is taken over.
    A directory the block created and left holding only the lock file is removed afterwards (a process waiting on
    that lock file then opens the new one: :func:`_take`)."""
    path = Path(path)
    created = not path.exists()
    fd = _take(path, create=True, wait_s=1.0)
    assert fd is not None  # _take returns None only when create is off
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    try:
        yield
    finally:
        if created and path.is_dir() and [p.name for p in path.iterdir()] == [LOCK]:
            (path / LOCK).unlink()
            path.rmdir()
        os.close(fd)


@contextmanager
def claim_dir(
    out: Path,
    own: str,
    needs: str,
    error: Callable[[str], Exception],
    foreign: Callable[[Path], str] | None = None,
) -> Iterator[None]:
    """Hold ``out``'s lock (:func:`lock_dir`) for the block, once ``out`` is known to be free for ``needs`` (``"a
    run"``, ``"a sweep"``, ``"reproduce"``): not a file; not written by a live process (:class:`DirectoryInUse`,
    named before anything else); holding nothing of another kind than its mark ``own`` (:func:`other_kind`), nor
    what ``foreign`` finds there (a sweep of another experiment).  Each refusal is an ``error`` naming ``--out``
    (docs/conventions.md#one-writer)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise error(f"--out {out} is a file, not a directory. Give a directory path.")
    check_free(out)
    held = other_kind(out, own) or (foreign(out) if foreign is not None else "")
    if held:
        raise error(f"--out {out} holds {held}; {needs} needs a directory of its own: use another --out")
    with lock_dir(out):
        yield


def write_json(path: Path, data: Any) -> None:
    """Atomic JSON write; NaN/inf become null so that the file stays valid JSON."""
    text = json.dumps(jsonable(data), indent=2, sort_keys=False)
    atomic_write(Path(path), lambda tmp: Path(tmp).write_text(text + "\n"))


def write_text(path: Path, text: str) -> None:
    """Atomic UTF-8 text write."""
    atomic_write(Path(path), lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def write_parquet(path: Path, df: pd.DataFrame) -> None:
    atomic_write(Path(path), lambda tmp: df.to_parquet(tmp, index=False))


def save_checkpoint(path: Path, state: dict) -> None:
    atomic_write(Path(path), lambda tmp: torch.save(state, tmp))


def load_checkpoint(path: Path) -> dict:
    return torch.load(path, weights_only=False)


def versions() -> dict[str, str]:
    """Package versions for summary.json."""
    import matplotlib
    import numpy
    import scipy

    from inductionlab._version import __version__

    return {
        "inductionlab": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "pandas": pd.__version__,
        "matplotlib": matplotlib.__version__,
    }


@dataclass
class Results:
    """What an experiment's ``run`` returns: named tables and a summary dict."""

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any]


def save_tables(run_dir: Path, results: Results) -> None:
    """Write each table of ``results`` to ``<name>.parquet`` (the summary is the caller's: written last, it marks
    a finished run)."""
    for name, df in results.tables.items():
        write_parquet(Path(run_dir) / f"{name}.parquet", df)


def load_results(run_dir: Path) -> Results:
    run_dir = Path(run_dir)
    if not (run_dir / SUMMARY).exists():
        raise FileNotFoundError(
            f"{run_dir} is not a finished run directory (no {SUMMARY}); run an experiment into it first"
        )
    tables = {}
    for path in sorted(run_dir.glob("*.parquet")):
        try:
            tables[path.stem] = pd.read_parquet(path)
        except Exception as err:  # noqa: BLE001 - any failure to read: the file is damaged
            raise FileNotFoundError(
                f"{path} cannot be read ({type(err).__name__}); the run's table is damaged: "
                "re-run the experiment (--force)"
            ) from None
    return Results(tables, read_json(run_dir / SUMMARY, "a run's summary", fix="re-run the experiment (--force)"))


@dataclass
class LoadedRun:
    """A run directory read back: resolved config (dict), metrics (pandas), summary, other tables."""

    path: Path
    config: dict[str, Any]
    metrics: pd.DataFrame | None
    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame]


def load_run(run_dir: str | os.PathLike) -> LoadedRun:
    """Load a run directory: ``run = load_run("runs/lazy-to-rich"); run.metrics.plot(x="t", y="loss_IH2")``."""
    res = load_results(Path(run_dir))
    config = read_json(Path(run_dir) / CONFIG, "a run's config", fix="re-run the experiment (--force)")
    return LoadedRun(Path(run_dir), config, res.tables.get("metrics"), res.summary, res.tables)


@dataclass(frozen=True)
class RunContext:
    """Where a training run writes, and how: ``run_dir`` (None: no checkpoints), ``resume``, ``progress``,
    ``threads`` — how many torch threads the run may use (:func:`inductionlab.runner.thread_budget`) —,
    ``hooks`` (:class:`inductionlab.train.loop.Hook` objects every training loop of the run calls), ``name``,
    the checkpoint's name under ``checkpoints/``, and ``device``, where the autograd trainer puts the parameters
    and each batch.  An experiment that trains several times gives each its own
    name with :meth:`child`.

    The same seed and thread count give the same numbers bit for bit; another thread count splits the
    matrix products' sums differently, which changes the last bits (float32) or more (bf16 autocast)."""

    run_dir: Path | None = None
    resume: bool = False
    progress: bool = False
    threads: int = 2
    hooks: tuple = ()
    name: str = "ckpt"
    device: str = "cpu"
    fingerprint: str = ""  # the run's config hash: a checkpoint of another config is refused on resume
    config: dict | None = None  # the run's config (nested dict), to name what differs from a foreign checkpoint
    keep_checkpoints: bool = False  # also keep checkpoints/<name>/step-<step>.pt at every evaluation

    @property
    def checkpoint(self) -> Path | None:
        return None if self.run_dir is None else Path(self.run_dir) / "checkpoints" / f"{self.name}.pt"

    def kept(self, step: int) -> Path | None:
        """Where the checkpoint kept at (global) training step ``step`` goes, with ``keep_checkpoints``
        (docs/models.md#checkpoints-over-time); None without it or without a run directory."""
        path = self.checkpoint
        return path.with_suffix("") / f"step-{step:09d}.pt" if path is not None and self.keep_checkpoints else None

    def child(self, name: str | None = None, **changes: Any) -> RunContext:
        """The same context with the checkpoint ``checkpoints/<name>.pt`` (and any other field changed)."""
        return replace(self, name=name or self.name, **changes)
