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
import math
import os
import platform
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from inductionlab import experiments, ledger_page
from inductionlab.analysis.claims import FAILURE_KINDS, STATUSES, UNEARNED
from inductionlab.claims_report import judge, write_report
from inductionlab.config import ConfigError, from_dict
from inductionlab.jobs import Executor, Job, execute, manifest_entries
from inductionlab.ledger_page import PAGE
from inductionlab.runner import run_experiment, thread_budget
from inductionlab.runs import SUMMARY, claim_dir, read_json, versions, write_json, write_parquet
from inductionlab.store import audit as checks
from inductionlab.store import key, provenance, schedule
from inductionlab.store.layout import (
    CLAIMS_FILE,
    INFO,
    MANIFEST,
    REMAKE,
    DirSource,
    calibration_job,
    draw_job,
    job_name,
    place,
)
from inductionlab.store.ledger import Ledger, LedgerError, committed, cpu
from inductionlab.store.plan import (  # noqa: F401  # the page's jobs, re-exported for the command line and scripts
    BUDGETS,
    CALIBRATION_SHIFT,
    Budget,
    calibration_draws,
    claims_of,
    control_jobs,
    controls_of,
    expected_minutes,
    experiments_for,
    plan,
)

log = logging.getLogger(__name__)


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
        jobs = place(jobs, out)
        start = time.perf_counter()
        info = _info(jobs, paper, budget, calibrate, skipped)
        write_json(out / INFO, info)
        execute(jobs, out, workers, executor, slurm, True, "reproduce", threads, reuse_stale)
        info.update(wall_seconds=time.perf_counter() - start, versions=versions(), host=host())
        write_json(out / INFO, info)
        return render(out)


def _info(jobs: list[Job], paper: str, budget: str, calibrate: bool, skipped: dict[str, str]) -> dict[str, Any]:
    """reproduce.json's record of the planned jobs: each experiment's run directory, its draws', its controls'."""
    main = [j for j in jobs if not {"control", "draw"} & set(j.overrides)]
    draws = [j for j in jobs if "draw" in j.overrides and "control" not in j.overrides]
    return {
        "paper": paper,
        "budget": budget,
        "calibration": calibrate,
        "experiments": [j.experiment for j in main],
        "dirs": {j.experiment: Path(j.dir).name for j in main},
        "draws": {
            name: [Path(j.dir).name for j in draws if j.experiment == name]
            for name in dict.fromkeys(j.experiment for j in draws)
        },
        "controls": {job_name(j): Path(j.dir).name for j in jobs if "control" in j.overrides},
        "skipped": skipped,
    }


def fill(
    ledger: str | Path | Ledger = "results",
    minutes: float = math.inf,
    out: str | Path = "reproduce",
    workers: int = 1,
    data: str = "",
    only: tuple[str, ...] = (),
    executor: Executor = "local",
    slurm: dict[str, Any] | None = None,
    threads: int | None = None,
    page: str | Path = PAGE,
    calibrate: bool | None = None,
    budget: Budget = "full",
) -> pd.DataFrame:
    """Run the full page's missing and stale jobs (:func:`plan`: the judged ones and the calibration runs of their
    margins; ``calibrate`` True: these alone, False: the judged alone; ``only``: of these experiments) into ``out``, those
    that unblock the most claims per core-minute first (:func:`inductionlab.store.schedule.order`), starting none
    once ``minutes`` core-minutes are spent; add each finished one to the ledger at ``ledger`` as it finishes, then
    render the page from the ledger to ``page``.  Jobs with one key run once.  Refused before any work when a job's
    code is not committed (docs/conventions.md#ledger).  ``budget``: the page's, full (another for a test)."""
    out, book = Path(out), ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    share = threads or max(1, thread_budget(threads)[0] // max(workers, 1))
    jobs, skipped = plan("all", budget, out, data, only) if calibrate is not True else ([], {})
    jobs += plan("all", budget, out, data, only, calibrate=True)[0] if calibrate is not False else []
    todo, same = _todo(book, jobs)
    order = schedule.order(list(todo), _needs(jobs), {n: _minutes(book, j, share) for n, j in todo.items()})
    with claim_dir(out, INFO, "reproduce", ConfigError):
        placed = place([todo[n] for n in order], out)
        write_json(
            out / INFO, _info([j for j in jobs if "calibration" not in j.overrides], "all", "full", False, skipped)
        )
        spend = schedule.Budget(minutes, share)
        if executor != "local":  # a cluster's jobs start as they are submitted: spend their expected minutes
            spend = schedule.Expected(minutes, {j.dir: _minutes(book, j, share) for j in placed})

        def done(job: Job) -> None:
            spend.finished(job.dir)
            try:
                book.add(job.experiment, same[job_name(job)], Path(job.dir), budget)
            except LedgerError as err:  # the code moved under the run: the job stays stale
                log.warning("%s is not added to the ledger: %s", job.dir, err)

        execute(
            placed,
            out,
            workers,
            executor,
            slurm,
            True,
            "ledger",
            threads,
            False,
            lambda j: spend.may_start(j.dir),
            done,
        )
    return ledger_page.render(book.root, page, data)


def _todo(book: Ledger, jobs: list[Job]) -> tuple[dict[str, Job], dict[str, list[str]]]:
    """The jobs not current in the ledger, one per key (by job name), and the names of each one's key; a job whose
    code is not committed stops it here (:func:`inductionlab.store.ledger.committed`)."""
    statuses = book.status([(j.experiment, job_name(j), j.config) for j in jobs])
    first: dict[str, Job] = {}
    names: dict[str, list[str]] = {}
    for job, status in zip(jobs, statuses):
        if status.state != "current":
            job_key = key.of_job(job.experiment, job.config)
            committed(job_key.files, book.package)
            first.setdefault(job_key.id, job)
            names.setdefault(job_key.id, []).append(status.job)
    return {job_name(j): j for j in first.values()}, {job_name(first[k]): v for k, v in names.items()}


def _needs(jobs: list[Job]) -> dict[str, set[str]]:
    """Each claim → the jobs it reads: the main run, the data draws (a claim over seeds), its control, and the
    calibration runs of its margin."""
    planned = {job_name(j) for j in jobs}
    needs = {}
    for name in dict.fromkeys(j.experiment for j in jobs):
        exp = experiments.get(name)
        for claim in exp.claims:
            reads = {name} | ({draw_job(name, i) for i in range(1, exp.draws)} if claim.seeds else set())
            reads |= set(control_jobs(name, claim.control))
            reads |= {calibration_job(name, i) for i in range(calibration_draws(name))}
            needs[claim.id] = reads & planned
    return needs


def _minutes(book: Ledger, job: Job, threads: int) -> float:
    """A job's expected core-minutes: its stale entry's measured ones, else the schedule's estimate × threads."""
    try:
        entry = book.read(job.experiment, job_name(job))
    except LedgerError:
        entry = None
    if entry and entry.get("core_minutes"):
        return float(entry["core_minutes"])
    control = job.overrides.get("control")
    known = controls_of(job.experiment).get(control) if control else None
    preset = known.preset if known else (None if "draw" in job.overrides or not control else "quick")
    return expected_minutes(job.experiment, preset, known.wall if known else "") * threads


def current(ledger: str | Path, out: str | Path, data: str, budget: Budget = "full") -> dict[str, tuple[Job, dict]]:
    """The ledger's current entries of the page's jobs at ``budget``, by job name: (job, entry)."""
    book, (jobs, _) = Ledger(ledger), plan("all", budget, Path(out), data)
    statuses = book.status([(j.experiment, job_name(j), j.config) for j in jobs])
    return {job_name(j): (j, s.entry) for j, s in zip(jobs, statuses) if s.entry and s.state == "current"}


def remake(job: Job, entry: Mapping[str, Any], folder: Path) -> dict:
    """Run ``job`` again into ``folder/JOB`` as ``entry`` was made (its threads and precision,
    :func:`~inductionlab.store.audit.as_made`); returns the re-made summary."""
    cfg = from_dict(type(experiments.get(job.experiment).config), checks.as_made(job.config, entry["summary"]))
    threads = int(entry.get("threads", 1))
    run_dir = run_experiment(job.experiment, cfg, folder / job_name(job), resume=True, threads=threads)
    return read_json(run_dir / SUMMARY, "a run's summary", fix=REMAKE)


def audit(
    ledger: str | Path = "results",
    n: int = 5,
    seed: int = 0,
    cheapest: bool = False,
    out: str | Path = "reproduce",
    data: str = "",
    budget: Budget = "full",
) -> list[tuple[str, list[str], bool]]:
    """Re-make ``n`` current entries of the ledger comparable on this CPU (:func:`~inductionlab.store.audit.comparable`;
    drawn with ``seed``, or the cheapest) into ``out/audit-COMMIT/``
    (:func:`remake`; ``budget``: the page's, full), and compare each measurement its claims read with the committed
    one within its tolerance (:mod:`inductionlab.store.audit`); returns (job, disagreements, bit for bit) per entry.
    Writes no entry: only the audit's record, ``audit.json`` beside them, which the page's header gives."""
    book, here = Ledger(ledger), cpu()["kind"]
    current_by_id = {entry["key"]["id"]: (job, entry) for job, entry in current(ledger, out, data, budget).values()}
    reach: list[Mapping[str, Any]] = [e for _, e in current_by_id.values() if checks.comparable(e, here)]
    chosen = checks.choose(reach, n, seed, cheapest)
    if len(chosen) < n:
        raise ConfigError(
            f"--audit {n}: the ledger holds {len(chosen)} current runs at this commit comparable on {here}"
        )
    folder, results = Path(out) / f"audit-{provenance.commit()}", []
    for entry in chosen:
        job, _ = current_by_id[entry["key"]["id"]]
        remade = remake(job, entry, folder)
        keys, (rtol, atol) = checks.read_keys(job.experiment), checks.tolerance(job.experiment)
        differ = checks.disagreements(entry["summary"], remade, keys, rtol, atol)
        results.append((entry["job"], differ, not checks.disagreements(entry["summary"], remade, keys, 0.0, 0.0)))
    write_json(
        book.root / ledger_page.AUDIT,
        {
            "commit": provenance.commit(),
            "cpu": here,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "entries": len(results),
            "agreed": sum(not d for _, d, _ in results),
            "jobs": [r[0] for r in results],
            "drawn": "the cheapest first" if cheapest else f"at random, seed {seed}",
            "comparable": f"{len(reach)} of {len(current_by_id)} current runs",
        },
    )
    return results


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
    source = DirSource(Path(out), _failures(Path(out)))
    names = [*source.info["experiments"], *source.info.get("skipped", {})]
    return judge(source, names, source.info["paper"], source.info["budget"] == "smoke")


def render(out: str | Path) -> pd.DataFrame:
    """Judge the claims against the saved runs of ``out`` and (re)write claims.parquet and report.html."""
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
    source = DirSource(out, _failures(out))
    info["stale_runs"] = {d: m for d in every if (m := source.stale(d))}
    info["core_minutes"] = core_minutes(out, info)
    source.info = info
    write_report(out / "report.html", source, table)
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
