"""Which code made a run (docs/conventions.md#provenance): the key of its experiment's code — the digest of its
closure (:mod:`~inductionlab.store.closure`: exactly the files its run imports) and the versions of the software it
imports (:mod:`~inductionlab.store.key`) — and, beside it, the git commit that holds the package (``-dirty`` when the
work tree differs from it; empty outside a git checkout).  A run directory records it in config.json and
summary.json (``code``); ``reproduce``, ``sweep`` and ``--resume`` reuse or continue a run only when its digest and
software are this process's for that experiment, so an edit outside the closure (a docstring anywhere, the command
line, the report) leaves every run current."""

from __future__ import annotations

import functools
import logging
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inductionlab.runs import CONFIG, SUMMARY, RunFileError, lock_dir, read_json
from inductionlab.store import closure, key

log = logging.getLogger(__name__)

PACKAGE = closure.PACKAGE
UNRECORDED = "unrecorded"  # the digest shown for a run made before runs recorded their code


@functools.cache
def commit() -> str:
    """The short git commit that holds the package, ``-dirty`` when the tracked files differ from it; "" when the
    package is not in a git checkout (an installed wheel) or git is absent."""
    try:
        head = _git("rev-parse", "--short=12", "HEAD")
        changed = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return ""
    return head + ("-dirty" if changed else "")


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(PACKAGE), *args], capture_output=True, text=True, check=True, timeout=30)
    return done.stdout.strip()


def record(name: str) -> dict[str, Any]:
    """The code of experiment ``name`` in this process: ``{"digest", "software", "files", "commit"}``."""
    code = key.experiment_closure(name)
    return {
        "digest": code.digest,
        "software": key.software(code.libraries),
        "files": dict(sorted(code.files.items())),
        "commit": commit(),
    }


def of(saved: Mapping[str, Any] | None) -> dict[str, Any]:
    """The code a saved config.json or summary.json records (``digest`` :data:`UNRECORDED` where it records none)."""
    code = saved.get("code") if isinstance(saved, Mapping) else None
    if isinstance(code, Mapping) and isinstance(code.get("digest"), str):
        return {**code, "commit": str(code.get("commit", ""))}
    return {"digest": UNRECORDED, "commit": ""}


def describe(code: Mapping[str, Any]) -> str:
    """One phrase naming a code version: "code 0123456789abcdef (commit 1a2b3c4d5e6f-dirty)"."""
    if code["digest"] == UNRECORDED:
        return "code not recorded (a run older than the record)"
    return f"code {code['digest']}" + (f" (commit {code['commit']})" if code.get("commit") else " (no git commit)")


def made_by(run_dir: Path) -> dict[str, Any] | None:
    """The code that made the run in ``run_dir`` where it is not this process's code of its experiment (another
    closure digest or software; None: the same, or no run there); read from its config.json, which every run writes
    first."""
    path = Path(run_dir) / CONFIG
    if not path.exists():
        return None
    try:
        saved = read_json(path, "a run's config")
    except RunFileError:
        return None  # a damaged config: the run directory's own checks name it
    code = of(saved)
    here = record(str(saved.get("experiment", "")))
    return None if (code["digest"], code.get("software")) == (here["digest"], here["software"]) else code


def what_changed(code: Mapping[str, Any], name: str) -> str:
    """What differs between the recorded ``code`` of a run of experiment ``name`` and this process's: the files of
    its closure that changed, came or went, and the libraries whose versions moved (at most five named)."""
    here = record(name)
    old, new = code.get("files") or {}, here["files"]
    parts = [f"{f} changed" for f in sorted(set(old) & set(new)) if old[f] != new[f]]
    parts += [f"{f} joined the closure" for f in sorted(set(new) - set(old)) if old]
    parts += [f"{f} left the closure" for f in sorted(set(old) - set(new))]
    soft = code.get("software") or {}
    parts += [
        f"{lib} {soft.get(lib, 'absent')} → {v}" for lib, v in here["software"].items() if soft and soft.get(lib) != v
    ]
    if not parts:
        return "its code is not recorded file by file" if not old else "the same files"
    return ", ".join(parts[:5]) + (f" and {len(parts) - 5} more" if len(parts) > 5 else "")


def set_aside(run_dir: Path, code: Mapping[str, Any]) -> Path:
    """Move the run in ``run_dir``, made by other ``code``, to ``<name>.made-by-<digest>`` beside it (a number added
    if taken), so that it is re-made in its place and nothing that trained is deleted; returns where it went."""
    run_dir = Path(run_dir)
    target = run_dir.with_name(f"{run_dir.name}.made-by-{code['digest'][:8]}")
    n = 1
    while target.exists():
        n += 1
        target = run_dir.with_name(f"{run_dir.name}.made-by-{code['digest'][:8]}-{n}")
    with lock_dir(run_dir):  # one writer: a run being written there is not moved
        run_dir.rename(target)
    log.warning("%s was made by %s, not this code: moved to %s", run_dir, describe(code), target)
    return target


def set_aside_stale(run_dirs: list[Path], reuse_stale: bool) -> list[Path]:
    """Set aside (:func:`set_aside`) each run of ``run_dirs`` made by other code, so that it is made again with this
    code; with ``reuse_stale`` a finished one stays (the report marks it), while an unfinished one is still set aside,
    since a resume across code versions is refused.  Returns where they went."""
    moved = []
    for run_dir in map(Path, run_dirs):
        made = made_by(run_dir)
        if made is not None and not (reuse_stale and (run_dir / SUMMARY).exists()):
            moved.append(set_aside(run_dir, made))
    return moved
