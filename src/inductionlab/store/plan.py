"""The jobs of a page (docs/conventions.md#claims, #ledger): for each experiment with a claim of the chosen paper,
its run at the budget's preset, its other data draws and the negative controls its claims name — what
``reproduce`` runs into a directory and what the ledger holds."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal

from inductionlab import experiments
from inductionlab.analysis.claims import PAPERS, Claim, Control
from inductionlab.config import ConfigError, config_hash, flatten, to_dict, with_seeds
from inductionlab.jobs import Job
from inductionlab.store.layout import calibration_job, control_job, draw_job
from inductionlab.tasks.text import ENV as DATA_ENV

Budget = Literal["smoke", "quick", "full"]
BUDGETS: dict[str, str | None] = {"smoke": "smoke", "quick": "quick", "full": None}
# ``--calibrate`` adds this to every run's seeds: the calibration seeds, apart from every judged one
# (docs/conventions.md#calibration)
CALIBRATION_SHIFT = 1000
CALIBRATION_VALUES = 4  # the calibration seeds every experiment runs on, however few its judged draws: s needs them


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


def control_jobs(name: str, control: str) -> list[str]:
    """The jobs of experiment ``name``'s control ``control`` ("": none): its run and its data draws."""
    known = {c.name: c for c in experiments.get(name).controls}
    return [control_job(name, control, i) for i in range(known[control].draws)] if control else []


def calibration_draws(name: str) -> int:
    """How many calibration draws experiment ``name`` runs: its judged draws, and at least enough for
    :data:`CALIBRATION_VALUES` seeds over its run axis (an experiment that trains four seeds at once needs one), or
    its ``calibration_draws`` where a claim reads one value per run (a spread over the run axis's seeds)."""
    exp = experiments.get(name)
    return max(exp.draws, math.ceil(CALIBRATION_VALUES / len(exp.config.seeds)), exp.calibration_draws)


def experiments_for(paper: str) -> list[str]:
    """The experiments with at least one claim of ``paper`` ("all": any), in the registry's order."""
    known = dict.fromkeys([*PAPERS, *(c.paper for e in experiments.all_experiments().values() for c in e.claims)])
    if paper != "all" and paper not in known:
        raise ConfigError(f"--paper: unknown paper {paper!r}; allowed: all, {', '.join(known)}")
    return [n for n in experiments.all_experiments() if any(paper in ("all", c.paper) for c in claims_of(n))]


def plan(
    paper: str,
    budget: Budget,
    out: Path,
    data: str = "",
    only: tuple[str, ...] = (),
    calibrate: bool = False,
    without_data: bool = False,
) -> tuple[list[Job], dict[str, str]]:
    """The jobs (one per experiment, its preset for ``budget``, and one per negative control its claims name) and,
    per experiment that cannot run here, why.  ``only``: these experiments alone.  Without ``data`` (nor
    $INDUCTIONLAB_DATA) the text experiments are skipped; a ``data`` that does not exist is an error.
    ``calibrate``: the experiments and their :func:`calibration_draws` on their seeds +
    :data:`CALIBRATION_SHIFT`, the calibration seeds on which a protocol is chosen before the judged draws
    (docs/conventions.md#calibration), in ``<name>.calibration`` and ``<name>.calibration.draw-<i>``; no control
    runs, the controls are judged with the claims.  ``without_data``: a text experiment without its data is planned
    all the same, its data path empty (the ledger then takes its data from the entry: docs/conventions.md#ledger)."""
    shift = CALIBRATION_SHIFT if calibrate else 0
    role = {"calibration": "1"} if calibrate else {}
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
        cfg = _seeded(name, experiments.configure(name, preset=preset, overrides=extra), shift, budget)
        path = (flatten(cfg)[key] or os.environ.get(DATA_ENV, "")) if key else ""
        if key and not (path and Path(path).exists()) and not without_data:
            skipped[name] = f"no text data here: pass --data DIR (WikiText-2) or set {DATA_ENV}"
            continue
        source = experiments.source_of(name)
        main = str(out / (calibration_job(name) if calibrate else name))
        jobs.append(Job(name, to_dict(cfg), {"budget": budget, **role}, config_hash(cfg), main, source=source))
        cost[jobs[-1].dir] = expected_minutes(name, preset)
        draws = calibration_draws(name) if calibrate else experiments.get(name).draws
        if budget != "smoke":  # the other data draws (docs/conventions.md#claims); a smoke budget judges nothing
            for i in range(1, draws):
                variant = with_seeds(cfg, cfg.seeds[0] + i * len(cfg.seeds))
                dir_ = str(out / (calibration_job(name, i) if calibrate else draw_job(name, i)))
                meta = {"budget": budget, **role, "draw": str(i)}
                jobs.append(Job(name, to_dict(variant), meta, config_hash(variant), dir_, source=source))
                cost[dir_] = expected_minutes(name, preset)
        gpu = str(flatten(cfg).get("device", "cpu")).startswith("cuda")
        for control in () if calibrate else controls_of(name, paper, gpu).values():  # a calibration chooses protocols
            for job in _control_runs(name, control, extra, budget, out, cfg.seeds):
                jobs.append(job)
                cost[job.dir] = expected_minutes(name, control.preset, control.wall)
    return sorted(jobs, key=lambda j: -cost[j.dir]), skipped  # the longest first: the workers finish together


def _control_runs(
    name: str, control: Control, extra: dict[str, str], budget: str, out: Path, seeds: tuple[int, ...]
) -> list[Job]:
    """The jobs of experiment ``name``'s ``control``: its run and its data draws, draw i on the seeds of the
    experiment's draw i (``seeds``: the experiment's run's); none under a smoke budget, which judges nothing (the
    control's config is still built, so a bad one fails here)."""
    overrides = {**control.overrides, **extra}
    cfg = _seeded(name, experiments.configure(name, preset=control.preset, overrides=overrides), 0, budget)
    if budget == "smoke":
        return []
    jobs = []
    for i in range(control.draws):
        variant = with_seeds(cfg, seeds[0] + i * len(seeds)) if i else cfg
        meta = {"budget": budget, "control": control.name, **({"draw": str(i)} if i else {})}
        dir_ = str(out / control_job(name, control.name, i))
        jobs.append(Job(name, to_dict(variant), meta, config_hash(variant), dir_, source=experiments.source_of(name)))
    return jobs


def _seeded(name: str, cfg: Any, shift: int, budget: str) -> Any:
    """``cfg`` on the seeds a job of experiment ``name`` runs: the calibration seeds (``shift``: its seeds moved up
    by :data:`CALIBRATION_SHIFT`), else the judged ones — from ``Experiment.judged_seed`` where a protocol moved them
    (docs/conventions.md#calibration), else its own."""
    first = experiments.get(name).judged_seed
    if shift:
        return with_seeds(cfg, cfg.seeds[0] + shift)
    return with_seeds(cfg, first) if first is not None and budget != "smoke" else cfg


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
