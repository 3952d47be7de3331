"""Sweeps: a grid of dotted-key overrides × seeds, a JSONL manifest keyed by config hash, resume, and
executors (a local process pool by default; SLURM through submitit).

Layout of a sweep directory::

    manifest.jsonl     one line per job event: {"hash", "overrides", "dir", "status", "wall_seconds"}
    <hash>/            one run directory per configuration (see :mod:`inductionlab.runs`)
    sweep.parquet      one row per finished job: the overrides, its summary's scalars, the other config values

Re-running the same sweep skips the jobs whose hash is marked done and whose summary exists.  The seeds of a
grid point train together on the run axis in one job; an experiment without a run axis (its config takes one
seed) gets one job per seed.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from inductionlab import experiments
from inductionlab.config import ConfigError, config_hash, override, to_dict, with_seeds
from inductionlab.jobs import Executor, Job, done_hashes, execute
from inductionlab.runner import RunDirError, thread_budget
from inductionlab.runs import SUMMARY, SWEEP_INFO, RunFileError, claim_dir, read_json, write_json, write_parquet

log = logging.getLogger(__name__)


def parse_grid(specs: Iterable[str]) -> dict[str, list[str]]:
    """``["task.L=20,40", "model.sigma_init=0.1,0.01"]`` → {key: [values]}; a key given twice gets the values of
    both (``task.L=8,9`` and ``task.L=10`` → ``[8, 9, 10]``), each once."""
    grid: dict[str, list[str]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        if not sep or not key.strip() or not values:
            raise ConfigError(f"--grid {spec!r}: expected KEY=V1,V2,... (e.g. task.L=20,40)")
        items = [v.strip() for v in values.split(",") if v.strip()]
        if not items:
            raise ConfigError(f"--grid {spec!r}: no values after '='; expected KEY=V1,V2,... (e.g. task.L=20,40)")
        merged = grid.setdefault(key.strip(), [])
        merged += [v for v in dict.fromkeys(items) if v not in merged]
    return grid


def count_jobs(base_cfg: Any, grid: dict[str, list[str]], seeds: int) -> int:
    """How many jobs :func:`plan` makes at most (equal configs are one job), by arithmetic alone, so that a huge
    request is refused before any config is built.  A grid over ``seeds`` with ``seeds`` > 1 is refused: both
    choose the seeds (docs/conventions.md#seeds)."""
    if "seeds" in grid and seeds > 1:
        raise ConfigError(f"--n-seeds {seeds} with --grid seeds=...: both choose the seeds; give one of the two")
    per_point = seeds if seeds > 1 else 1 if "seeds" in grid else len(base_cfg.seeds)
    return math.prod(len(values) for values in grid.values()) * per_point


def plan(name: str, base_cfg: Any, grid: dict[str, list[str]], seeds: int, out: Path) -> list[Job]:
    """Expand the grid (cartesian product) and the seeds into jobs, one per (grid point, seed), so that every
    row of the sweep table is one seed's run; every config is validated first, and grid values that give the
    same config (``task.L=8,8.0,08``) are one job: the first.  ``seeds`` > 1: that many seeds from the config's
    first; 1: the config's own seeds.  (To train several seeds on the run axis in one process, give them to
    ``run``: ``--seeds 0,1,2``.)"""
    source = experiments.source_of(name)  # (a clear error for an unknown name)
    count_jobs(base_cfg, grid, seeds)  # refuses a grid over seeds with seeds > 1
    jobs: dict[str, Job] = {}
    keys = list(grid)
    for combo in itertools.product(*(grid[k] for k in keys)) if keys else [()]:
        overrides = dict(zip(keys, combo))
        cfg = override(base_cfg, overrides, name)
        experiments.get(name).check_needs(cfg)  # its optional packages, before any job (docs/conventions.md#extras)
        first = cfg.seeds[0]
        for seed in range(first, first + seeds) if seeds > 1 else cfg.seeds:
            variant = with_seeds(cfg, seed, 1)
            h = config_hash(variant)
            folder = _folder_name({**overrides, "seed": seed}, h)
            job = Job(name, to_dict(variant), {**overrides, "seed": str(seed)}, h, str(out / folder), source=source)
            jobs.setdefault(h, job)
    return list(jobs.values())


def _folder_name(values: dict[str, Any], config_hash: str) -> str:
    """``task.L=20__seed=0__a1b2c3``: the grid values and the seed, then a short hash (unique per config)."""
    parts = [f"{k}={v}" for k, v in values.items()]
    text = re.sub(r"[^A-Za-z0-9._=,+-]", "_", "__".join(parts))[:120]
    return f"{text}__{config_hash[:6]}"


def run_sweep(
    name: str,
    base_cfg: Any,
    grid: dict[str, list[str]],
    out: Path,
    seeds: int = 1,
    workers: int = 1,
    executor: Executor = "local",
    slurm: dict[str, Any] | None = None,
    progress: bool = True,
    threads: int | None = None,
    on_plan: Callable[[list[Job]], None] | None = None,
    reuse_stale: bool = False,
) -> pd.DataFrame:
    """Run (or resume) a sweep; returns the sweep table (also written to sweep.parquet).  ``on_plan`` sees the
    jobs still to run before any starts (the command line prints their number and a wall-time estimate); a run made
    by other code is made again unless ``reuse_stale`` (:func:`execute`)."""
    timeout = (slurm or {}).get("timeout_min", 60)  # submitit would start jobs that die at once (0, negative)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 1:
        raise ConfigError(f"--slurm-timeout-min: each job's time limit must be ≥ 1 minute, got {timeout!r}")
    thread_budget(threads)  # a bad --threads or $OMP_NUM_THREADS fails before work
    jobs = plan(name, base_cfg, grid, seeds, out)  # validates every config before anything is written
    # one sweep process writes the manifest; each job locks its own run directory
    with claim_dir(out, SWEEP_INFO, "a sweep", ConfigError, lambda path: _other_sweep(path, name)):
        if on_plan is not None:
            on_plan([j for j in jobs if j.hash not in done_hashes(out)])
        write_json(out / SWEEP_INFO, {"experiment": name, "grid": list(grid), **experiments.plugin_record(name)})
        try:
            failed = execute(jobs, out, workers, executor, slurm, progress, threads=threads, reuse_stale=reuse_stale)
        except KeyboardInterrupt:  # Ctrl-C: say how to go on
            raise KeyboardInterrupt(
                "interrupted; re-run the same command to continue: finished jobs are kept"
            ) from None
        table = collect(out, jobs)
    if failed:
        raise SweepError(
            f"{len(failed)} of {len(jobs)} jobs failed (the others finished; table: "
            f"{out / 'sweep.parquet'}):\n" + "\n".join(f"  {d}: {e}" for d, e in failed)
        )
    return table


def _other_sweep(out: Path, name: str) -> str:
    """The sweep of another experiment than ``name`` in ``out``, which a sweep of ``name`` must not mix with."""
    with contextlib.suppress(RunFileError, TypeError, KeyError):  # no sweep.json, or a damaged one
        other = read_json(out / SWEEP_INFO, "a sweep's record")["experiment"]
        return f"a sweep of {other} ({SWEEP_INFO})" if other != name else ""
    return ""


class SweepError(RuntimeError):
    """Some jobs of a sweep failed (the others finished); the message lists them with their errors."""


def collect(out: Path, jobs: list[Job]) -> pd.DataFrame:
    """One row per finished job — one (grid point, seed) — with typed columns: ``dir``, the grid keys (values as
    the config holds them: numbers stay numbers), ``seed``, the scalar and one-level nested summary numbers
    (None becomes NaN), then every other config value under its dotted key (:func:`flat_config`: ``train.lr``,
    ``task.alpha_star``, …; a summary number of the same name keeps the column).  Written to ``sweep.parquet``."""
    rows = []
    for job in jobs:
        path = Path(job.dir) / SUMMARY
        if not path.exists():
            continue
        summary = read_json(path, "a run's summary", fix="re-run the sweep into this directory to remake it")
        row: dict[str, Any] = {"dir": Path(job.dir).name, "hash": job.hash}
        for key in job.overrides:
            if key != "seed":
                row[key] = _config_value(job.config, key)
        row["seed"] = job.config["seeds"][0]
        for key, value in summary.items():
            if _scalar(value):
                row[key] = value
            elif isinstance(value, dict) and key != "versions":
                row.update({f"{key}.{k}": v for k, v in value.items() if _scalar(v)})
        for key, value in flat_config(job.config).items():
            row.setdefault(key, value)
        rows.append(row)
    table = _typed(pd.DataFrame(rows))
    write_parquet(out / "sweep.parquet", table)
    return table


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (int, float, str, bool))


def flat_config(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every value of a nested config dict under its dotted key (``{"train": {"lr": 0.1}}`` → ``{"train.lr": 0.1}``),
    lists of numbers or strings as ``1,2`` (as typed on the command line), other lists as JSON; without ``seeds``
    (a sweep row's ``seed`` column holds it)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flat_config(value, f"{name}."))
        elif isinstance(value, list) and name != "seeds":
            flat[name] = ",".join(map(str, value)) if all(map(_scalar, value)) else json.dumps(value, default=str)
        elif name != "seeds":
            flat[name] = value
    return flat


def _config_value(config: dict[str, Any], key: str) -> Any:
    """The value of dotted ``key`` in a nested config dict; lists as ``1,2`` (as typed on the command line)."""
    value: Any = config
    for part in key.split("."):
        value = value[part]
    return ",".join(map(str, value)) if isinstance(value, list) else value


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    """Columns of numbers and None (or None alone) become float (None → NaN); others keep their type."""
    for col in table.columns:
        if table[col].dtype == object:
            values = table[col].dropna()
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                table[col] = pd.to_numeric(table[col], errors="coerce").astype(float)
    return table


def load_sweep(out: str | Path) -> pd.DataFrame:
    """The table of a sweep directory (``sweep.parquet``): one row per (grid point, seed)."""
    path = Path(out) / "sweep.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{out}: no sweep.parquet — not a sweep directory (run `inductionlab sweep` into it)")
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as err:  # a damaged file (pyarrow's ArrowInvalid is a ValueError)
        raise RunDirError(f"{path} cannot be read ({str(err)[:200]!r}); re-run the sweep to rewrite it") from None
