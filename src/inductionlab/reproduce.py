"""``inductionlab reproduce``: run the experiments that the chosen papers' claims need, judge every claim, and
write ``claims.parquet`` and a self-contained ``report.html`` (docs/conventions.md#claims).

Layout of a reproduce directory::

    reproduce.json     {"paper", "budget", "experiments", "wall_seconds", "versions", "host"}
    manifest.jsonl     the sweep manifest: one line per job event (a finished run is never run twice)
    <experiment>/      one run directory per experiment (see :mod:`inductionlab.runs`)
    claims.parquet     one row per claim: measured, expected, test, status, reason, run directory
    report.html        one page: a summary bar, one section per paper, each claim beside its run's figures

Budgets: ``smoke`` runs each experiment's smoke preset (the path is checked, no claim is judged, no negative
control runs), ``quick`` its quick preset, ``full`` its default; under both, each negative control that a claim
names runs at its own preset in ``<experiment>@<control>/`` (docs/conventions.md#controls).  Re-running with the same paper and budget reuses the finished runs and
resumes an interrupted one; a run directory this reproduce left with another config is replaced, and one it did
not write is never touched (the experiment runs beside it).  The jobs start longest first (:func:`expected_minutes`),
so that the workers finish together.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from inductionlab import experiments, provenance
from inductionlab.analysis.claims import FAILURE_KINDS, PAPERS, STATUSES, UNEARNED, Claim, Control
from inductionlab.analysis.verdicts import earn, judge, judge_control
from inductionlab.config import ConfigError, config_hash, flatten, to_dict, with_seeds
from inductionlab.runner import clear, saved_config, thread_budget
from inductionlab.runs import (
    CONFIG,
    REPRODUCE_INFO,
    SUMMARY,
    claim_dir,
    config_values,
    lock_dir,
    read_json,
    versions,
    write_json,
    write_parquet,
)
from inductionlab.sweep import MANIFEST, Executor, Job, execute, manifest_entries
from inductionlab.tasks.text import ENV as DATA_ENV

log = logging.getLogger(__name__)
Budget = Literal["smoke", "quick", "full"]
BUDGETS: dict[str, str | None] = {"smoke": "smoke", "quick": "quick", "full": None}
INFO = REPRODUCE_INFO
CLAIMS_FILE = "claims.parquet"
REMAKE = "re-run `inductionlab reproduce` into this directory to remake it"  # what to do with a damaged run file
# ``--calibrate`` adds this to every run's seeds: the calibration seeds, apart from every judged one
# (docs/conventions.md#calibration)
CALIBRATION_SHIFT = 1000


def claims_of(name: str) -> tuple[Claim, ...]:
    return experiments.get(name).claims


def controls_of(name: str, paper: str = "all", gpu: bool = True) -> dict[str, Control]:
    """The negative controls that ``paper``'s claims of experiment ``name`` name, by control name.  ``gpu``
    False (the main run has no GPU): only those a claim judged without one names, since a claim that needs the
    paper's scale is not judged there and no verdict reads its control (docs/conventions.md#controls)."""
    known = {c.name: c for c in experiments.get(name).controls}
    return {
        c.control: known[c.control]
        for c in claims_of(name)
        if c.control and paper in ("all", c.paper) and (gpu or not c.needs)
    }


def control_dir(name: str, control: str) -> str:
    """The directory name of experiment ``name``'s control run ``control`` in a reproduce directory."""
    return f"{name}@{control}"


def draw_dir(name: str, draw: int) -> str:
    """The directory name of experiment ``name``'s data draw ``draw`` ≥ 1 in a reproduce directory (draw 0 is
    ``name`` itself)."""
    return f"{name}.draw-{draw}"


def experiments_for(paper: str) -> list[str]:
    """The experiments with at least one claim of ``paper`` ("all": any), in the registry's order."""
    known = dict.fromkeys([*PAPERS, *(c.paper for e in experiments.all_experiments().values() for c in e.claims)])
    if paper != "all" and paper not in known:
        raise ConfigError(f"--paper: unknown paper {paper!r}; allowed: all, {', '.join(known)}")
    return [n for n in experiments.all_experiments() if any(paper in ("all", c.paper) for c in claims_of(n))]


def plan(
    paper: str, budget: Budget, out: Path, data: str = "", only: tuple[str, ...] = (), calibrate: bool = False
) -> tuple[list[Job], dict[str, str]]:
    """The jobs (one per experiment, its preset for ``budget``, and one per negative control its claims name) and,
    per experiment that cannot run here, why.  ``only``: these experiments alone.  Without ``data`` (nor
    $INDUCTIONLAB_DATA) the text experiments are skipped; a ``data`` that does not exist is an error.
    ``calibrate``: the experiments and their draws on their seeds + :data:`CALIBRATION_SHIFT`, the calibration
    seeds on which a protocol is chosen before the judged draws (docs/conventions.md#calibration); no control runs,
    the controls are judged with the claims."""
    shift = CALIBRATION_SHIFT if calibrate else 0
    if budget not in BUDGETS:
        raise ConfigError(f"--budget: unknown budget {budget!r}; allowed: {', '.join(BUDGETS)}")
    if data and not Path(data).exists():
        raise ConfigError(f"--data {data}: no such directory or file; give the WikiText-2 folder, or leave --data out")
    names = experiments_for(paper)
    for name in only:
        experiments.get(name)  # a clear error for an unknown name
        if name not in names:
            raise ConfigError(f"--only: {name} has no claim of --paper {paper}; with claims: {', '.join(names)}")
    jobs, skipped, cost = [], {}, {}
    for name in [n for n in names if not only or n in only]:
        key = experiments.get(name).data  # the config key of the data path it reads ("" when it makes its own)
        extra = {key: data} if key and data else {}
        preset = BUDGETS[budget] if BUDGETS[budget] in experiments.get(name).presets else None  # else its default
        cfg = _shifted(experiments.configure(name, preset=preset, overrides=extra), shift)
        path = (flatten(cfg)[key] or os.environ.get(DATA_ENV, "")) if key else ""
        if key and not (path and Path(path).exists()):
            skipped[name] = f"no text data here: pass --data DIR (WikiText-2) or set {DATA_ENV}"
            continue
        source = experiments.source_of(name)
        jobs.append(Job(name, to_dict(cfg), {"budget": budget}, config_hash(cfg), str(out / name), source=source))
        cost[jobs[-1].dir] = expected_minutes(name, preset)
        if budget != "smoke":  # the other data draws (docs/conventions.md#claims); a smoke budget judges nothing
            for i in range(1, experiments.get(name).draws):
                variant = with_seeds(cfg, cfg.seeds[0] + i * len(cfg.seeds))
                dir_ = str(out / draw_dir(name, i))
                meta = {"budget": budget, "draw": str(i)}
                jobs.append(Job(name, to_dict(variant), meta, config_hash(variant), dir_, source=source))
                cost[dir_] = expected_minutes(name, preset)
        gpu = str(flatten(cfg).get("device", "cpu")).startswith("cuda")
        for control in () if calibrate else controls_of(name, paper, gpu).values():  # a calibration chooses protocols
            cfg = _shifted(
                experiments.configure(name, preset=control.preset, overrides={**control.overrides, **extra}), shift
            )
            if budget != "smoke":  # a smoke budget judges nothing, so it runs no control (its config is checked)
                meta = {"budget": budget, "control": control.name}
                dir_ = str(out / control_dir(name, control.name))
                jobs.append(Job(name, to_dict(cfg), meta, config_hash(cfg), dir_, source=source))
                cost[dir_] = expected_minutes(name, control.preset, control.wall)
    return sorted(jobs, key=lambda j: -cost[j.dir]), skipped  # the longest first: the workers finish together


def _shifted(cfg: Any, shift: int) -> Any:
    """``cfg`` with its seeds moved up by ``shift`` (0: as it is)."""
    return with_seeds(cfg, cfg.seeds[0] + shift) if shift else cfg


def expected_minutes(name: str, preset: str | None, wall: str = "") -> float:
    """A job's expected wall time for the schedule: ``wall`` when given (a control's), else at the experiment's
    default preset its stated one (``Experiment.wall``, e.g. "~16 min", the upper end of "5–10 min"), else 1 minute
    (the smaller presets)."""
    wall = wall or (experiments.get(name).wall if preset is None else "")
    found = re.findall(r"([0-9.]+)\s*(min|s)\b", wall)
    if not found:
        return 1.0
    value, unit = found[-1]
    return float(value) / (60.0 if unit == "s" else 1.0)


def _place(jobs: list[Job], out: Path) -> list[Job]:
    """Each job's run directory: ``out/<experiment>``.  A run there of another config that this reproduce
    directory wrote (its manifest names the directory: an older budget or code default) is replaced; one it did
    not write — a user's own run — is left alone, and the job runs in ``out/<experiment>--<hash>`` instead."""
    ours = {e.get("dir") for e in manifest_entries(out / MANIFEST)} if (out / MANIFEST).exists() else set()
    placed = []
    for job in jobs:
        run_dir = Path(job.dir)
        saved = saved_config(run_dir)
        if saved is not None and config_values(saved) != job.config:
            if run_dir.name in ours:
                log.info("%s holds an earlier run of this reproduce with another config; replacing it", run_dir)
                with lock_dir(run_dir):
                    clear(run_dir)
            else:
                job = replace(job, dir=str(run_dir.with_name(f"{run_dir.name}--{job.hash[:8]}")))
                log.warning(
                    "%s holds a run this reproduce did not write (another config): left alone; running %s in %s",
                    run_dir,
                    job.experiment,
                    job.dir,
                )
        placed.append(job)
    return placed


def reproduce(
    paper: str = "all",
    budget: Budget = "full",
    out: str | Path = "reproduce",
    workers: int = 1,
    data: str = "",
    only: tuple[str, ...] = (),
    executor: Executor = "local",
    slurm: dict[str, Any] | None = None,
    threads: int | None = None,
    calibrate: bool = False,
    reuse_stale: bool = False,
) -> pd.DataFrame:
    """Run (or resume) what the claims of ``paper`` need at ``budget`` into ``out``, judge them, and write
    ``claims.parquet`` and ``report.html``; returns the claims table.  Holds ``out``'s lock throughout.
    ``executor`` and ``slurm`` (submitit's parameters) as for a sweep: on a cluster every job is its own;
    ``threads`` per job as for a sweep (:func:`inductionlab.sweep.execute`).  ``calibrate``: on the calibration
    seeds (:func:`plan`); the page then says that it chooses protocols and judges no paper.  A run made by other
    code is made again, unless ``reuse_stale`` keeps a finished one (its rows are marked: docs/conventions.md#provenance)."""
    out = Path(out)
    thread_budget(threads)  # a bad --threads or $OMP_NUM_THREADS fails before any work
    jobs, skipped = plan(paper, budget, out, data, only, calibrate)
    with claim_dir(out, INFO, "reproduce", ConfigError):
        jobs = _place(jobs, out)
        start = time.perf_counter()
        info: dict[str, Any] = {
            "paper": paper,
            "budget": budget,
            "calibration": calibrate,
            "experiments": [j.experiment for j in jobs if not {"control", "draw"} & set(j.overrides)],
            "dirs": {j.experiment: Path(j.dir).name for j in jobs if not {"control", "draw"} & set(j.overrides)},
            "draws": {
                name: [Path(j.dir).name for j in jobs if j.experiment == name and "draw" in j.overrides]
                for name in dict.fromkeys(j.experiment for j in jobs if "draw" in j.overrides)
            },
            "controls": {
                control_dir(j.experiment, j.overrides["control"]): Path(j.dir).name
                for j in jobs
                if "control" in j.overrides
            },
            "skipped": skipped,
        }
        write_json(out / INFO, info)
        execute(jobs, out, workers, executor, slurm, True, "reproduce", threads, reuse_stale)
        info.update(wall_seconds=time.perf_counter() - start, versions=versions(), host=host())
        write_json(out / INFO, info)
        return render(out)


def host() -> str:
    """The CPU model and the number of cores (for the report)."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines() if ln.startswith("model name")]
        model = names[0] if names else model
    return f"{model}, {os.cpu_count()} cores"


def _failures(out: Path) -> dict[str, str]:
    """The last error of each failed run in ``out``'s manifest, by directory name."""
    errors: dict[str, str] = {}
    if (out / MANIFEST).exists():
        for entry in manifest_entries(out / MANIFEST):
            if entry.get("status") == "failed":
                errors[entry.get("dir", "")] = entry.get("error", "")
            elif entry.get("status") == "done":
                errors.pop(entry.get("dir", ""), None)
    return errors


def judge_all(out: Path) -> pd.DataFrame:
    """One row per claim of the experiments in ``out``'s reproduce.json, judged against their saved runs, with
    its negative control's verdict beside it."""
    info = read_json(Path(out) / INFO, "a reproduce run's record", fix=REMAKE)
    failures, rows = _failures(Path(out)), []
    names = [*info["experiments"], *info.get("skipped", {})]
    smoke = info["budget"] == "smoke"
    for name in [n for n in experiments.all_experiments() if n in names]:
        run_dir = Path(out) / info.get("dirs", {}).get(name, name)
        summary, config = _saved(run_dir)
        draw_dirs = [Path(out) / d for d in info.get("draws", {}).get(name, [])]
        draws = [_saved(d)[0] for d in draw_dirs]
        reason = info.get("skipped", {}).get(name) or (
            f"the run failed: {failures[run_dir.name]}" if run_dir.name in failures else "the run has not finished"
        )
        gpu = str(config.get("device", "cpu")).startswith("cuda")
        controls = controls_of(name, info["paper"])
        for claim in claims_of(name):
            if info["paper"] in ("all", claim.paper):
                row = judge(claim, summary, smoke=smoke, gpu=gpu, reason=reason, draws=draws)
                tag = control_dir(name, claim.control)
                control_summary = _saved(Path(out) / info.get("controls", {}).get(tag, tag))[0]
                row = earn(row | judge_control(claim, control_summary if claim.control else None, smoke=smoke), claim)
                row["control_breaks"] = controls[claim.control].breaks if claim.control else ""
                dirs = [
                    run_dir,
                    *draw_dirs,
                    *([Path(out) / info.get("controls", {}).get(tag, tag)] * bool(claim.control)),
                ]
                row["made_by"] = stale_of(dirs)
                rows.append({**row, "experiment": name, "run_dir": run_dir.name, "figures": _figures(run_dir)})
    return pd.DataFrame(rows)


def stale_of(dirs: list[Path]) -> str:
    """Which of the runs ``dirs`` were made by other code than this process's, and by which ("" if none): kept by
    ``--reuse-stale`` (docs/conventions.md#provenance)."""
    made = {d.name: provenance.made_by(d) for d in dirs}
    return "; ".join(f"{name} made by {provenance.describe(code)}" for name, code in made.items() if code)


def _saved(run_dir: Path) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """A run directory's summary (None where it has none) and config ({} where it has none)."""
    summary = read_json(run_dir / SUMMARY, "a run's summary", {}, REMAKE) or None
    return summary, read_json(run_dir / CONFIG, "a run's config", {}, REMAKE)


def _figures(run_dir: Path) -> str:
    """The run's figures, comma-separated file names (the report embeds them)."""
    return ",".join(sorted(p.name for p in run_dir.glob("*.png"))) if run_dir.is_dir() else ""


def render(out: str | Path) -> pd.DataFrame:
    """Judge the claims against the saved runs of ``out`` and (re)write claims.parquet and report.html."""
    from inductionlab.claims_report import write_report

    out = Path(out)
    if not (out / INFO).exists():
        raise FileNotFoundError(f"{out}: no {INFO} — not a reproduce directory (run `inductionlab reproduce`)")
    table = judge_all(out)
    write_parquet(out / CLAIMS_FILE, table)
    info = read_json(out / INFO, "a reproduce run's record", fix=REMAKE)
    info.setdefault("versions", versions())  # an interrupted reproduce: this process's versions and host
    info.setdefault("host", host())
    info["runs_wall_seconds"] = sum(_run_wall(out / info.get("dirs", {}).get(n, n)) for n in info["experiments"])
    info["controls_wall_seconds"] = sum(_run_wall(out / d) for d in info.get("controls", {}).values())
    draws = [d for dirs in info.get("draws", {}).values() for d in dirs]
    info["draws_wall_seconds"] = sum(_run_wall(out / d) for d in draws)
    every = [*info.get("dirs", {}).values(), *draws, *info.get("controls", {}).values()]
    info["profile"] = profile_of(out, every)
    info["code"] = provenance.record()
    info["stale_runs"] = {d: provenance.describe(c) for d in every if (c := provenance.made_by(out / d))}
    info["core_minutes"] = core_minutes(out, info)
    write_report(out, table, info)
    return table


def core_minutes(out: Path, info: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per experiment: the core-minutes (wall time × threads) of its main run, its other data draws and its
    negative controls, from their summaries (0 where a run has none)."""

    def cost(d: str) -> float:
        s = read_json(out / d / SUMMARY, "a run's summary", {}, REMAKE)
        return float(s.get("wall_seconds", 0.0)) * int(s.get("threads", 1)) / 60

    controls = info.get("controls", {})
    return {
        name: {
            "main": cost(info.get("dirs", {}).get(name, name)),
            "draws": sum(cost(d) for d in info.get("draws", {}).get(name, [])),
            "controls": sum(cost(d) for tag, d in controls.items() if tag.split("@", 1)[0] == name),
        }
        for name in info["experiments"]
    }


def _run_wall(run_dir: Path) -> float:
    """The run's own wall time (its summary's), 0 where it has none."""
    return float(read_json(run_dir / SUMMARY, "a run's summary", {}, REMAKE).get("wall_seconds", 0.0))


def profile_of(out: Path, dirs: list[str]) -> dict[str, float]:
    """Seconds per part (docs/conventions.md#profile) summed over the finished runs ``dirs`` of ``out``, largest
    first."""
    total: dict[str, float] = {}
    for name in dirs:
        for part, seconds in read_json(out / name / SUMMARY, "a run's summary", {}, REMAKE).get("profile", {}).items():
            total[part] = total.get(part, 0.0) + seconds
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def is_reproduce(out: str | Path) -> bool:
    return (Path(out) / INFO).exists()


def exit_status(table: pd.DataFrame) -> int:
    """0 when every judged claim passed, 1 when one failed, is undefined (a missing value is never a pass) or is
    unearned (a pass no control has shown able to fail)."""
    return int(bool(table.status.isin(["failed", "undefined", UNEARNED]).any())) if len(table) else 0


def totals(table: pd.DataFrame) -> dict[str, Any]:
    """Counts per status of the papers' claims (every status, zeros included), the failures split by kind
    (docs/conventions.md#findings), and the observations counted apart (#claims)."""
    observed = table.group == "observation" if len(table) and "group" in table else pd.Series(False, index=table.index)
    papers = table[~observed]
    counts = papers.status.value_counts() if len(papers) else pd.Series(dtype=int)
    out = {s: int(counts.get(s, 0)) for s in STATUSES}
    kinds = papers[papers.status == "failed"].kind.value_counts() if len(papers) else pd.Series(dtype=int)
    return out | {f"failed ({k})": int(kinds.get(k, 0)) for k in FAILURE_KINDS} | {"observations": int(observed.sum())}
