"""Where the page's jobs live (docs/conventions.md#ledger): a job's name, the layout of a reproduce directory, and
:class:`Source`, what the page is judged from — a reproduce directory (:class:`DirSource`) or the committed ledger
(:class:`inductionlab.store.ledger.LedgerSource`).

A job is named by its experiment and its role: ``probe`` (the main run, data draw 0), ``probe.draw-1`` (another
data draw), ``probe@no-positions`` (a negative control), ``probe@no-positions.draw-1`` (the control's data draw 1).
Layout of a reproduce directory::

    reproduce.json     {"paper", "budget", "experiments", "dirs", "draws", "controls", "skipped", "wall_seconds", ...}
    manifest.jsonl     the sweep manifest: one line per job event (a finished run is never run twice)
    <job>/             one run directory per job (see :mod:`inductionlab.runs`), or <job>--<hash> beside a user's own
    claims.parquet     one row per claim
    report.html        the page
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from inductionlab.runner import clear, saved_config
from inductionlab.runs import CONFIG, REPRODUCE_INFO, SUMMARY, config_values, lock_dir, read_json
from inductionlab.store import provenance

if TYPE_CHECKING:
    from inductionlab.jobs import Job

log = logging.getLogger(__name__)
INFO = REPRODUCE_INFO
MANIFEST = "manifest.jsonl"
CLAIMS_FILE = "claims.parquet"
REMAKE = "re-run `inductionlab reproduce` into this directory to remake it"  # what to do with a damaged run file


def control_job(name: str, control: str, draw: int = 0) -> str:
    """The job (and directory) name of experiment ``name``'s control run ``control`` (its data draw ``draw`` ≥ 1:
    on the seeds of the experiment's draw ``draw``)."""
    return f"{name}@{control}" + (f".draw-{draw}" if draw else "")


def draw_job(name: str, draw: int) -> str:
    """The job name of experiment ``name``'s data draw ``draw`` ≥ 1 (draw 0 is ``name`` itself)."""
    return f"{name}.draw-{draw}"


def calibration_job(name: str, draw: int = 0) -> str:
    """The job name of experiment ``name``'s calibration draw ``draw`` (docs/conventions.md#calibration)."""
    return f"{name}.calibration" + (f".draw-{draw}" if draw else "")


def job_name(job: Job) -> str:
    """The name of a planned job (:func:`inductionlab.store.plan.plan`) from its role."""
    if "calibration" in job.overrides:
        return calibration_job(job.experiment, int(job.overrides.get("draw", 0)))
    if "control" in job.overrides:
        return control_job(job.experiment, job.overrides["control"], int(job.overrides.get("draw", 0)))
    if "draw" in job.overrides:
        return draw_job(job.experiment, int(job.overrides["draw"]))
    return job.experiment


class Source(Protocol):
    """What a page is judged from: per job its summary (None: none finished), config, why it has none, and whether
    other code made it; per experiment its main run's figures (name, PNG bytes)."""

    info: dict[str, Any]

    def summary(self, job: str) -> dict[str, Any] | None: ...

    def config(self, job: str) -> dict[str, Any]: ...

    def failure(self, job: str) -> str: ...

    def stale(self, job: str) -> str: ...

    def figures(self, experiment: str) -> list[tuple[str, bytes]]: ...


class DirSource:
    """A reproduce directory as a :class:`Source`; ``failures``: the last error of each failed run, by directory
    name (from its manifest)."""

    def __init__(self, out: Path, failures: dict[str, str]) -> None:
        self.out, self.failures = Path(out), failures
        self.info = read_json(self.out / INFO, "a reproduce run's record", fix=REMAKE)

    def dir(self, job: str) -> Path:
        """The run directory of the job named ``job`` (as the judged page names it: a calibration page's runs stand
        in its jobs' places)."""
        names = {**self.info.get("dirs", {}), **self.info.get("controls", {})}
        for name, dirs in self.info.get("draws", {}).items():
            names.update({draw_job(name, i): d for i, d in enumerate(dirs, 1)})
        return self.out / names.get(job, job)

    def summary(self, job: str) -> dict[str, Any] | None:
        return read_json(self.dir(job) / SUMMARY, "a run's summary", {}, REMAKE) or None

    def config(self, job: str) -> dict[str, Any]:
        return read_json(self.dir(job) / CONFIG, "a run's config", {}, REMAKE)

    def failure(self, job: str) -> str:
        name = self.dir(job).name
        return f"the run failed: {self.failures[name]}" if name in self.failures else "the run has not finished"

    def stale(self, job: str) -> str:
        code = provenance.made_by(self.dir(job))
        return f"{job} made by {provenance.describe(code)}" if code else ""

    def figures(self, experiment: str) -> list[tuple[str, bytes]]:
        run_dir = self.dir(experiment)
        return [(p.name, p.read_bytes()) for p in sorted(run_dir.glob("*.png"))] if run_dir.is_dir() else []


def place(jobs: list[Job], out: Path) -> list[Job]:
    """Each job's run directory: ``out/<job>``.  A run there of another config that this reproduce directory wrote
    (its manifest names the directory: an older budget or code default) is replaced; one it did not write — a
    user's own run — is left alone, and the job runs in ``out/<job>--<hash>`` instead."""
    from inductionlab.jobs import manifest_entries

    ours = {str(e.get("dir", "")) for e in manifest_entries(out / MANIFEST)} if (out / MANIFEST).exists() else set()
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
