"""Jobs and how they run (docs/architecture.md#slurm): a :class:`Job` (an experiment's resolved config into a run
directory), the JSONL manifest that records each job's events (a finished job is never run twice) and
:func:`execute`, which runs the jobs not yet done on a local process pool, submitit's local processes or Slurm.
Shared by ``sweep`` and ``reproduce``."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing import get_context
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Literal

from tqdm.auto import tqdm

from inductionlab import experiments
from inductionlab._runtime import Worker, tune_process
from inductionlab.config import from_dict
from inductionlab.runner import run_experiment, thread_budget
from inductionlab.runs import SUMMARY
from inductionlab.store import provenance

log = logging.getLogger(__name__)
Executor = Literal["local", "slurm", "submitit-local"]
MANIFEST = "manifest.jsonl"


@dataclass(frozen=True)
class Job:
    experiment: str
    config: dict[str, Any]  # resolved, nested (config.json without "experiment")
    overrides: dict[str, str]
    hash: str
    dir: str
    threads: int = 1  # cores per job: 1 when several workers share the machine
    source: str = ""  # where a worker finds an outside experiment (experiments.source_of)


def run_job(job: Job) -> dict[str, Any]:
    """Run one job into its directory (resuming an interrupted one); picklable for any executor."""
    tune_process()
    exp = experiments.ensure_registered(job.experiment, job.source)
    cfg = from_dict(type(exp.config), job.config)
    start = time.perf_counter()
    run_experiment(job.experiment, cfg, job.dir, resume=True, threads=job.threads)
    return {"hash": job.hash, "dir": Path(job.dir).name, "wall_seconds": time.perf_counter() - start}


def manifest_entries(manifest: Path) -> list[dict]:
    """The manifest's entries; a damaged line (a sweep killed while writing it) is skipped with a warning — the job
    it described is then run again, never counted twice."""
    entries = []
    for number, line in enumerate(manifest.read_text().splitlines(), 1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            log.warning("%s line %d is damaged (a sweep stopped while writing it); skipped", manifest, number)
            continue
        if isinstance(entry, dict) and "hash" in entry:
            entries.append(entry)
    return entries


def done_hashes(out: Path) -> set[str]:
    entries = manifest_entries(out / MANIFEST) if (out / MANIFEST).exists() else []
    finished = [e for e in entries if e.get("status") == "done"]
    return {e["hash"] for e in finished if (out / e.get("dir", e["hash"]) / SUMMARY).exists()}


def _append(out: Path, entry: dict) -> None:
    with open(out / MANIFEST, "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()


def execute(
    jobs: list[Job],
    out: Path,
    workers: int = 1,
    executor: Executor = "local",
    slurm: dict[str, Any] | None = None,
    progress: bool = True,
    desc: str = "sweep",
    threads: int | None = None,
    reuse_stale: bool = False,
    gate: Callable[[Job], bool] | None = None,
    on_done: Callable[[Job], None] | None = None,
) -> list[tuple[str, str]]:
    """Run the jobs not yet marked done in ``out``'s manifest; return (dir, error) of those that failed.  Shared by
    sweeps and ``reproduce``.  ``gate``: asked before each job starts (in order), False stops starting more (the
    ledger's ``--minutes``); ``on_done``: called in this process as each job finishes (its ledger entry).  A job trains on ``threads`` torch threads; by default a local one on its share of
    :func:`inductionlab.runner.thread_budget` among the ``workers``, a submitit one on its ``cpus_per_task``.  A run
    made by other code is made again (:func:`inductionlab.provenance.set_aside_stale`)."""
    cpus = (slurm or {}).get("cpus_per_task", 1)
    share = threads or (max(1, thread_budget()[0] // max(workers, 1)) if executor == "local" else int(cpus))
    jobs = [replace(j, threads=share) for j in jobs]
    provenance.set_aside_stale([Path(j.dir) for j in jobs], reuse_stale)
    done = done_hashes(out)
    todo = [j for j in jobs if j.hash not in done]
    for job in todo:
        _append(out, {"hash": job.hash, "overrides": job.overrides, "dir": Path(job.dir).name, "status": "submitted"})
    hooks = _Hooks(gate, on_done)
    if executor == "local":
        _run_local(todo, out, workers, progress, desc, hooks)
    else:
        _run_submitit(todo, out, executor, slurm or {}, progress, hooks)
    return _failed(out, {j.hash for j in todo})


@dataclass(frozen=True)
class _Hooks:
    gate: Callable[[Job], bool] | None = None
    on_done: Callable[[Job], None] | None = None

    def may_start(self, job: Job) -> bool:
        return self.gate is None or self.gate(job)

    def done(self, out: Path, job: Job, entry: dict[str, Any]) -> None:
        _append(out, entry)
        if self.on_done is not None and entry.get("status") == "done":
            self.on_done(job)


def _failed(out: Path, hashes: set[str]) -> list[tuple[str, str]]:
    """(dir, error) of the jobs among ``hashes`` whose last manifest entry is a failure."""
    last: dict[str, dict] = {}
    for entry in manifest_entries(out / MANIFEST):
        if entry.get("hash") in hashes:
            last[entry["hash"]] = {**last.get(entry["hash"], {}), **entry}
    return [(e.get("dir", h), e.get("error", "")) for h, e in last.items() if e.get("status") == "failed"]


def _run_local(jobs: list[Job], out: Path, workers: int, progress: bool, desc: str, hooks: _Hooks) -> None:
    with tqdm(total=len(jobs), desc=desc, disable=not progress) as bar:
        if workers > 1:
            _run_pool(jobs, out, workers, bar, hooks)
            return
        for job in jobs:
            if not hooks.may_start(job):
                break
            try:
                entry = {**run_job(job), "status": "done"}
            except Exception as err:  # noqa: BLE001 - recorded; the other jobs go on, as with a process pool
                entry = _failure(job, f"{type(err).__name__}: {err}")
            hooks.done(out, job, entry)
            bar.update()


def _run_pool(jobs: list[Job], out: Path, workers: int, bar: tqdm, hooks: _Hooks) -> None:
    """Run ``jobs`` on ``workers`` processes, each sent one job at a time through its own pipe, so that a worker
    that dies (killed, out of memory) fails the job it was running and no other; a new process takes its place."""
    ctx, queue = get_context("spawn"), list(reversed(jobs))
    idle: list[Worker] = []
    busy: dict[Worker, Job] = {}
    try:
        while queue or busy:
            while queue and len(busy) < workers:
                if not hooks.may_start(queue[-1]):
                    queue.clear()
                    break
                worker = idle.pop() if idle else Worker(ctx, run_job)
                try:
                    worker.conn.send(queue[-1])
                except OSError:  # it died while idle: the job waits for a new worker
                    worker.stop()
                    continue
                busy[worker] = queue.pop()
            handles = {w.conn: w for w in busy} | {w.process.sentinel: w for w in busy}
            for worker in dict.fromkeys(handles[h] for h in wait(list(handles))):
                job = busy.pop(worker)
                status, reply = worker.outcome()
                hooks.done(out, job, {**reply, "status": "done"} if status == "done" else _failure(job, reply))
                bar.update()
                if worker.process.is_alive():
                    idle.append(worker)
    finally:
        for worker in [*idle, *busy]:
            worker.stop()


def _failure(job: Job, error: str) -> dict[str, str]:
    """The manifest entry of a job that failed."""
    return {"hash": job.hash, "dir": Path(job.dir).name, "status": "failed", "error": error}


def _run_submitit(
    jobs: list[Job], out: Path, executor: Executor, slurm: dict[str, Any], progress: bool, hooks: _Hooks
) -> None:
    """Submit one submitit job per sweep job and record each result as it comes.  ``slurm``: parameters of
    submitit's ``update_parameters`` (``timeout_min``, ``slurm_partition``, ``cpus_per_task``, ``mem_gb``, …); a
    job trains on its ``threads``.  If waiting stops (Ctrl-C, an error), the jobs not finished are cancelled
    (``scancel``), so that none runs on unwatched and a re-run does not find its run directory held."""
    import submitit

    folder = out / "submitit"
    ex = (
        submitit.LocalExecutor(folder=folder)
        if executor == "submitit-local"
        else submitit.AutoExecutor(folder=folder, cluster="slurm")
    )
    ex.update_parameters(
        timeout_min=int(slurm.get("timeout_min", 60)), **{k: v for k, v in slurm.items() if k != "timeout_min"}
    )
    submitted = []
    try:
        for job in jobs:
            if not hooks.may_start(job):  # on a cluster the gate reads each job's expected cost at submission
                break
            submitted.append((job, ex.submit(run_job, job)))
        for job, handle in tqdm(submitted, desc="sweep", disable=not progress):
            try:
                entry = {**handle.result(), "status": "done"}
            except Exception as err:  # noqa: BLE001
                entry = _failure(job, f"{type(err).__name__}: {err}")
            hooks.done(out, job, entry)
    except BaseException:
        for _, handle in submitted:
            if not handle.done():
                handle.cancel(check=False)
        raise
