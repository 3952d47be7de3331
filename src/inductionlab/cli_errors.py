"""What the command line makes of an error: its exit status (2 bad input, 3 a NaN/inf stop, 1 failed sweep jobs;
None for a bug, which keeps its traceback) and the one line it prints.  Modules are looked up in ``sys.modules`` so
that ``inductionlab list`` imports no torch."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

from inductionlab.config import ConfigError
from inductionlab.extras import MissingExtra


def exit_code(err: BaseException) -> int | None:
    """2 for bad input (config, run directory, missing file, a missing extra), 3 for a NaN/inf stop, None for a bug."""
    runner, loop = sys.modules.get("inductionlab.runner"), sys.modules.get("inductionlab.train.loop")
    sweep = sys.modules.get("inductionlab.sweep")
    runs = sys.modules.get("inductionlab.runs")
    if isinstance(err, (ConfigError, FileNotFoundError)) or (runner and isinstance(err, runner.RunDirError)):
        return 2
    if runs and isinstance(err, (runs.WriteError, runs.DirectoryInUse)):
        return 2
    if isinstance(err, (PermissionError, IsADirectoryError, NotADirectoryError)) or (
        isinstance(err, OSError)
        and err.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.ENOENT, errno.ENAMETOOLONG)
    ):
        return 2
    if isinstance(err, MissingExtra):  # an optional package not installed (docs/conventions.md#extras)
        return 2
    if sweep and isinstance(err, sweep.SweepError):  # before the memory test: a job's error may say "alloc"
        return 1
    if loop and isinstance(err, loop.CheckpointError):
        return 2
    if (loop and isinstance(err, loop.NonFiniteError)) or (runner and isinstance(err, runner.NaNResultsError)):
        return 3
    if _out_of_memory(err):
        return 2
    return None


def _out_of_memory(err: BaseException) -> bool:
    return isinstance(err, MemoryError) or (isinstance(err, RuntimeError) and "alloc" in str(err).lower())


def message(err: BaseException) -> str:
    """One line saying what is wrong and what to do."""
    if isinstance(err, OSError) and err.errno == errno.ENAMETOOLONG:
        return f"{err.filename or err}: a name in this path is longer than the file system allows; choose a shorter one"
    runs = sys.modules.get("inductionlab.runs")
    if runs and isinstance(err, runs.WriteError):
        kept = (
            " (the last good checkpoint is kept; --resume continues from it)"
            if str(err.filename).endswith(".pt")
            else ""
        )
        return f"cannot write {err.filename} ({err.strerror}){kept}; free space, or choose another --out"
    if isinstance(err, OSError) and err.filename:
        return f"cannot write or read {err.filename} ({err.strerror}); choose another --out"
    sweep = sys.modules.get("inductionlab.sweep")
    if _out_of_memory(err) and not (sweep and isinstance(err, sweep.SweepError)):
        line = (str(err).splitlines() or [type(err).__name__])[0]  # cut at a space, never inside a number
        first = line if len(line) <= 160 else line[:160].rsplit(" ", 1)[0] + " …"
        return f"out of memory ({first}); lower the largest size (batch size, sample or evaluation size, model size)"
    return str(err)


def said(err: BaseException) -> str:
    """The line for ``err``; for a run file that could not be written (a full disk), what the failure left, looked
    at after the run gave up: the last good checkpoint, or nothing where the unfinished run was removed."""
    runs, path = sys.modules.get("inductionlab.runs"), Path(str(getattr(err, "filename", None)))
    if not (runs and isinstance(err, runs.WriteError)) or (path.suffix != ".pt" and path.parent.exists()):
        return message(err)
    if path.is_file():
        left = f"the last good checkpoint, {path.name}, is kept; --resume continues from it"
    elif not path.parent.exists():
        left = "nothing of the run is left: it had no checkpoint yet, so its unfinished directory was removed"
    else:
        left = "no checkpoint of it was written yet: --resume starts that training over"
    return f"cannot write {path} ({err.strerror}); {left}. Free space, or choose another --out"
