"""Run one experiment into a run directory (see :mod:`inductionlab.runs` for the format): check the directory,
write config.json, run, add wall time and versions to the summary, save the tables and draw the figures."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from inductionlab import experiments
from inductionlab.config import config_hash, to_dict
from inductionlab.runs import CONFIG, SUMMARY, RunContext, save_results, versions, write_json


class RunDirError(RuntimeError):
    """The output directory holds another run (or an unfinished one): say what to do."""


def run_experiment(
    name: str,
    cfg: Any,
    out_dir: str | os.PathLike,
    resume: bool = False,
    force: bool = False,
    progress: bool = False,
    threads: int = 2,
) -> Path:
    """Run experiment ``name`` with the resolved config ``cfg`` into ``out_dir``; return the directory.

    Writes config.json first, then the tables, summary.json (with wall_seconds, versions, config_hash)
    and the figures.  ``resume`` continues an interrupted run (same config required; a finished run is
    left as it is); ``force`` overwrites a finished one.
    """
    exp = experiments.get(name)
    out = Path(out_dir)
    _check_run_dir(out, to_dict(cfg), resume, force)
    if resume and not force and (out / SUMMARY).exists():
        return out  # finished already: nothing to resume
    write_json(out / CONFIG, {"experiment": name, **to_dict(cfg)})
    start = time.perf_counter()
    results = exp.run(cfg, RunContext(out, resume, progress, threads))
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


def _check_run_dir(out: Path, config: dict, resume: bool, force: bool) -> None:
    cfg_file = out / CONFIG
    if not cfg_file.exists() or force:
        return
    saved = json.loads(cfg_file.read_text())
    saved.pop("experiment", None)
    if resume:
        if saved != config:
            diff = sorted(k for k in set(saved) | set(config) if saved.get(k) != config.get(k))
            raise RunDirError(
                f"{out}: --resume needs the same config as the saved run; sections differ: {diff}. "
                "Use another --out, or --force to start over."
            )
        return
    state = "a finished run" if (out / SUMMARY).exists() else "an unfinished run (resume it with --resume)"
    raise RunDirError(f"{out} already holds {state}. Use --resume, --force (overwrite) or another --out.")
