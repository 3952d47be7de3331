"""Which code made a run (docs/conventions.md#provenance): the digest of the package's own source files — its
``.py`` and ``.c`` files, so a docs-only commit leaves it unchanged — and, beside it, the git commit that holds
them (``-dirty`` when the work tree differs from it; empty outside a git checkout).  A run directory records it in
config.json and summary.json (``code``); ``reproduce``, ``sweep`` and ``--resume`` reuse or continue a run only
when its digest is this process's."""

from __future__ import annotations

import functools
import hashlib
import logging
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inductionlab.runs import CONFIG, SUMMARY, RunFileError, lock_dir, read_json

log = logging.getLogger(__name__)

PACKAGE = Path(__file__).resolve().parent
SOURCES = ("*.py", "*.c")  # what the digest reads: the code, not its docs, caches or compiled objects
UNRECORDED = "unrecorded"  # the digest shown for a run made before runs recorded their code


def digest_of(root: Path) -> str:
    """The first 16 hex digits of the SHA-256 over the source files under ``root`` (:data:`SOURCES`), each entered
    as its path relative to ``root`` and its bytes, in path order."""
    h = hashlib.sha256()
    files = sorted(p for pattern in SOURCES for p in Path(root).rglob(pattern) if "__pycache__" not in p.parts)
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.cache
def code_digest() -> str:
    """This package's :func:`digest_of`, once per process."""
    return digest_of(PACKAGE)


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


def record() -> dict[str, str]:
    """This process's code: ``{"digest": ..., "commit": ...}``."""
    return {"digest": code_digest(), "commit": commit()}


def of(saved: Mapping[str, Any] | None) -> dict[str, str]:
    """The code a saved config.json or summary.json records (``digest`` :data:`UNRECORDED` where it records none)."""
    code = saved.get("code") if isinstance(saved, Mapping) else None
    if isinstance(code, Mapping) and isinstance(code.get("digest"), str):
        return {"digest": code["digest"], "commit": str(code.get("commit", ""))}
    return {"digest": UNRECORDED, "commit": ""}


def describe(code: Mapping[str, str]) -> str:
    """One phrase naming a code version: "code 0123456789abcdef (commit 1a2b3c4d5e6f-dirty)"."""
    if code["digest"] == UNRECORDED:
        return "code not recorded (a run older than the record)"
    return f"code {code['digest']}" + (f" (commit {code['commit']})" if code.get("commit") else " (no git commit)")


def made_by(run_dir: Path) -> dict[str, str] | None:
    """The code that made the run in ``run_dir`` where it is not this process's (None: the same code, or no run
    there); read from its config.json, which every run writes first."""
    path = Path(run_dir) / CONFIG
    if not path.exists():
        return None
    try:
        saved = read_json(path, "a run's config")
    except RunFileError:
        return None  # a damaged config: the run directory's own checks name it
    code = of(saved)
    return None if code["digest"] == code_digest() else code


def set_aside(run_dir: Path, code: Mapping[str, str]) -> Path:
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
    log.warning("%s was made by %s, not this %s: moved to %s", run_dir, describe(code), describe(record()), target)
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
