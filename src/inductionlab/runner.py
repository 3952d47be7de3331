"""Run one experiment into a run directory (see :mod:`inductionlab.runs` for the format): check the directory,
write config.json, run, add wall time and versions to the summary, save the tables and draw the figures."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from inductionlab import experiments
from inductionlab.config import config_hash, differences, to_dict
from inductionlab.runs import CONFIG, SUMMARY, RunContext, save_results, versions, write_json


class RunDirError(RuntimeError):
    """The output directory holds another run (or an unfinished one, or files that are not ours): say what to do."""


OURS = ("config.json", "summary.json", "*.parquet", "*.png", "*.md", "*.csv", "checkpoints", ".*.tmp")


def saved_config(out: Path) -> dict[str, Any] | None:
    """The config.json of run directory ``out`` as a dict (None if there is none); a clear error if it is not a
    config this toolkit wrote."""
    path = Path(out) / CONFIG
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RunDirError(
            f"{path} is not valid JSON ({err}); it was not written by inductionlab, or was damaged. Use another --out."
        ) from None
    if not isinstance(data, dict) or "experiment" not in data:
        raise RunDirError(f"{path} is not an inductionlab config (no 'experiment' key). Use another --out.")
    return data


def run_experiment(
    name: str,
    cfg: Any,
    out_dir: str | os.PathLike,
    resume: bool = False,
    force: bool = False,
    progress: bool = False,
    threads: int = 2,
    hooks: tuple = (),
) -> Path:
    """Run experiment ``name`` with the resolved config ``cfg`` into ``out_dir``; return the directory.

    Writes config.json first, then the tables, summary.json (with wall_seconds, versions, config_hash) and the
    figures.  ``resume`` continues an interrupted run (the same config required; a finished run is left as it
    is); ``force`` first removes what an earlier run left there (only files this toolkit writes).  A run that
    fails before it writes its first checkpoint leaves nothing behind, so the corrected command just works.
    ``hooks`` reach every training loop of the run (:class:`inductionlab.train.loop.Hook`).
    """
    exp = experiments.get(name)
    out = Path(out_dir)
    _check_run_dir(out, name, to_dict(cfg), resume, force)
    if resume and not force and (out / SUMMARY).exists():
        return out  # finished already: nothing to resume
    if force:
        clear(out)
    fresh = not (out / CONFIG).exists()
    write_json(out / CONFIG, {"experiment": name, **to_dict(cfg)})
    start = time.perf_counter()
    try:
        ctx = RunContext(
            out, resume, progress, threads, tuple(hooks), fingerprint=config_hash(cfg), config=to_dict(cfg)
        )
        results = exp.run(cfg, ctx)
    except BaseException:
        if fresh and not any((out / "checkpoints").glob("*.pt")):
            clear(out)  # nothing to resume: leave no unfinished run behind
        raise
    results.summary = {
        "experiment": name,
        **results.summary,
        "wall_seconds": time.perf_counter() - start,
        "config_hash": config_hash(cfg),
        "versions": versions(),
    }
    save_results(out, results)
    exp.plot(results, out)
    return out


def _ours(path: Path) -> bool:
    return any(path.match(pattern) for pattern in OURS)


def clear(out: Path) -> None:
    """Remove what a run of ours left in ``out`` (refusing if it holds anything else), and ``out`` if empty."""
    if not out.exists():
        return
    foreign = sorted(p.name for p in out.iterdir() if not _ours(p))
    if foreign:
        raise RunDirError(
            f"{out} holds files inductionlab did not write ({', '.join(foreign[:5])}); "
            "it will not delete them. Use another --out."
        )
    for p in out.iterdir():
        if p.is_dir():
            for q in p.iterdir():
                q.unlink()
            p.rmdir()
        else:
            p.unlink()
    out.rmdir()


def _check_run_dir(out: Path, name: str, config: dict, resume: bool, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {out} is a file, not a directory. Give a directory path.")
    saved = saved_config(out)
    if saved is None or force:
        return
    if saved.pop("experiment") != name:
        raise RunDirError(f"{out} holds a run of another experiment. Use another --out, or --force to replace it.")
    if resume:
        diff = differences(saved, config)
        if diff:
            raise RunDirError(
                f"{out}: --resume needs the saved run's config; these values differ:\n  "
                + "\n  ".join(diff)
                + "\nDrop them to resume, or use --force to start over."
            )
        return
    state = "a finished run" if (out / SUMMARY).exists() else "an unfinished run (resume it with --resume)"
    raise RunDirError(f"{out} already holds {state}. Use --resume, --force (overwrite) or another --out.")
