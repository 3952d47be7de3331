"""Run one experiment into a run directory (see :mod:`inductionlab.runs` for the format): check the directory,
write config.json, run, add wall time and versions to the summary, save the tables and draw the figures."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from inductionlab import environ, experiments, timing
from inductionlab.config import ConfigError, config_hash, differences, to_dict
from inductionlab.record import never_reached
from inductionlab.runs import (
    CONFIG,
    LOCK,
    SUMMARY,
    WALL,
    Results,
    RunContext,
    RunFileError,
    claim_dir,
    config_values,
    read_json,
    save_tables,
    versions,
    write_json,
)
from inductionlab.store import provenance

log = logging.getLogger(__name__)


class NaNResultsError(RuntimeError):
    """A measure of the finished run has no finite value: a config value made the numbers meaningless."""


class RunDirError(RuntimeError):
    """The output directory holds another run (or an unfinished one, or files that are not ours): say what to do."""


OURS = (
    *("config.json", "summary.json", WALL, "vocab.json", "tokenizer.json"),  # the last two: a text run's tokenizer
    "hf",  # a transformers Trainer's checkpoint-* folders (hf-induction)
    *("*.parquet", "*.png", "*.md", "*.csv", "*.pt", "checkpoints", ".*.tmp", LOCK),
)


def saved_config(out: Path) -> dict[str, Any] | None:
    """The config.json of run directory ``out`` as a dict (None if there is none); a clear error naming the file
    (:func:`inductionlab.runs.read_json`) if it is damaged or not a config this toolkit wrote."""
    path = Path(out) / CONFIG
    if not path.exists():
        return None
    data = read_json(
        path,
        "an inductionlab run's config",
        fix="it was not written by inductionlab, or was damaged. Use another --out.",
    )
    if "experiment" not in data:
        raise RunDirError(f"{path} is not an inductionlab config (no 'experiment' key). Use another --out.")
    return data


THREAD_SOURCES = ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK")


def thread_budget(threads: int | None = None) -> tuple[int, str]:
    """How many torch threads a run uses, and why: ``threads`` (``--threads``) when given, else
    ``$OMP_NUM_THREADS``, else ``$SLURM_CPUS_PER_TASK``, else the cores this process may run on (its CPU
    affinity: a container's or a scheduler's limit, not the machine's count).  A value that is not an integer
    ≥ 1 fails, naming where it came from."""
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise ConfigError(f"--threads: must be an integer, got {threads!r}")
        return environ.count(str(threads), "--threads"), "--threads"
    for var in THREAD_SOURCES:
        value = os.environ.get(var, "").strip()
        if value:  # OMP_NUM_THREADS may list one count per nesting level: the first is the run's
            return environ.count(value.split(",")[0], var), var
    return _cores(), AFFINITY


AFFINITY = "CPU affinity"
GAINS_FROM = 2**18  # a step's largest op (elements) from which 2 threads beat 1 (docs/conventions.md#threads)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_for(exp: Any, cfg: Any, threads: int | None = None) -> tuple[int, str]:
    """A run's torch threads and why: :func:`thread_budget`'s count where one was asked for (``--threads``,
    ``$OMP_NUM_THREADS``, ``$SLURM_CPUS_PER_TASK``); by default the cores this process may use, but 1 where the
    experiment's ``op_size`` at ``cfg`` is below :data:`GAINS_FROM` or undeclared (docs/conventions.md#threads)."""
    n, source = thread_budget(threads)
    if source != AFFINITY or n == 1:
        return n, source
    size = None
    if exp.op_size is not None:
        size = exp.op_size(cfg)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ConfigError(
                f"experiment {exp.name!r}: op_size gave {size!r}; it must give an op's elements, an int ≥ 0"
            )
    if size is not None and size >= GAINS_FROM:
        return n, source
    what = "declares no op size" if size is None else f"has a largest op of {size} elements, below {GAINS_FROM}"
    return 1, f"policy: the experiment {what}, too small to gain from threads (--threads N overrides)"


def _say_if_busy(name: str, threads: int) -> None:
    """One log line when a run takes more threads than the cores free now, where fewer would help."""
    free = free_cores()
    if free is not None and threads > max(1, free):
        log.warning(
            "%s: %d torch threads, but only %d of %d cores are free now; a busy core slows every thread (--threads %d)",
            *(name, threads, free, _cores(), max(1, free)),
        )


def free_cores(loadavg: str | None = None, cores: int | None = None) -> int | None:
    """The cores of this process's CPU set not running another task now, from /proc/loadavg's runnable count
    (``loadavg``: its text; the reading process is one of them); None where there is no such file."""
    if loadavg is None:
        path = Path("/proc/loadavg")
        if not path.exists():
            return None
        loadavg = path.read_text()
    try:
        running = int(loadavg.split()[3].split("/")[0])
    except (IndexError, ValueError):
        return None
    return max(0, (cores or _cores()) - max(0, running - 1))


def run_experiment(
    name: str,
    cfg: Any,
    out_dir: str | os.PathLike,
    resume: bool = False,
    force: bool = False,
    progress: bool = False,
    threads: int | None = None,
    hooks: tuple = (),
    keep_checkpoints: bool = False,
) -> Path:
    """Run experiment ``name`` with the resolved config ``cfg`` into ``out_dir``; return the directory.

    One writer per directory: the run holds the directory's lock (:func:`inductionlab.runs.lock_dir`) from its
    first check to its last write, so a second run, ``--resume`` or ``--force`` aimed at it fails at once, naming
    the PID.  Writes config.json first, then the tables and the figures, and summary.json (with wall_seconds,
    versions, config_hash, code) last: a run is finished when its summary exists, so a failure before that leaves it
    for ``--resume`` to complete (its wall time then adds up over the segments: :func:`_segment`).  A plug-in's
    experiment records its plug-in in config.json (:func:`inductionlab.experiments.plugin_record`).  ``resume``
    continues an interrupted run (the same config and code required, docs/conventions.md#provenance; a finished run is left as it is); ``force`` first
    removes what an earlier run left there (only files this toolkit writes).  A run that fails before it writes its first checkpoint (at any step, figures included) leaves
    nothing behind, so the corrected command just works.  ``hooks`` reach every training loop of the run
    (:class:`inductionlab.train.loop.Hook`).  ``threads``: the run's torch threads (:func:`threads_for`, which
    also reads the environment and the experiment's op size when it is None), recorded in summary.json with where the
    number came from; a count above the cores free now is said in one log line.
    ``keep_checkpoints``: every trainer also keeps a checkpoint at each evaluation (docs/models.md#checkpoints-over-time).
    """
    exp = experiments.get(name)
    exp.check_needs(cfg)  # its optional packages, before the directory is touched (docs/conventions.md#extras)
    n_threads, threads_from = threads_for(exp, cfg, threads)
    _say_if_busy(name, n_threads)
    out = Path(out_dir)
    with claim_dir(out, CONFIG, "a run", RunDirError):
        _check_run_dir(out, name, to_dict(cfg), resume, force)
        if resume and not force and (out / SUMMARY).exists():
            return out  # finished already: nothing to resume
        if force:
            clear(out)
        _remove_temporaries(out)
        fresh = not (out / CONFIG).exists()
        code = {"code": provenance.record(name)}  # which code made it (docs/conventions.md#provenance)
        write_json(out / CONFIG, {"experiment": name, **to_dict(cfg), **experiments.plugin_record(name), **code})
        settings = {"resume": resume, "progress": progress, "threads": n_threads, "keep_checkpoints": keep_checkpoints}
        ctx = context(cfg, out, hooks=tuple(hooks), **settings)
        before = torch.get_num_threads()
        try:
            torch.set_num_threads(n_threads)
            with _segment(out, fresh) as earlier:
                used = {"threads": n_threads, "threads_from": threads_from}
                _run_and_save(exp, name, cfg, out, ctx, used, earlier)
        except BaseException:
            if fresh and not any((out / "checkpoints").glob("*.pt")) and not any(out.glob("*.parquet")):
                clear(out)  # nothing trained and nothing to resume: leave no unfinished run behind
            raise
        finally:
            torch.set_num_threads(before)
    return out


def context(cfg: Any, run_dir: Path | None = None, **settings: Any) -> RunContext:
    """The :class:`RunContext` of a run of ``cfg`` into ``run_dir``: the config's ``device`` (if it has one) reaches
    every trainer of the run, its hash guards the checkpoints; ``settings``: resume, progress, threads, hooks."""
    return RunContext(
        run_dir,
        device=getattr(cfg, "device", "cpu"),
        fingerprint=config_hash(cfg),
        config=to_dict(cfg),
        **settings,
    )


def _run_and_save(
    exp: Any, name: str, cfg: Any, out: Path, ctx: RunContext, threads: dict[str, Any], earlier: list[float]
) -> None:
    """Run, then write the tables, check them, draw the figures and write the summary, last; ``earlier``: the
    seconds of the run's earlier segments (an interrupted run resumed), which its wall time adds up with this one's
    (``wall_seconds``; ``wall_seconds_segments`` lists them, in a resumed run's summary only)."""
    start = time.perf_counter()
    with timing.record() as parts:
        results = exp.run(cfg, ctx)
        wall = time.perf_counter() - start
        with timing.section("io"):
            save_tables(out, results)
        check_results(results, exp.times)
        with timing.section("plot"):
            exp.plot(results, out)
    results.summary = {
        "experiment": name,
        **results.summary,
        "wall_seconds": sum([*earlier, wall]),
        **({"wall_seconds_segments": [*earlier, wall]} if earlier else {}),  # resumed: the first run's, each resume's
        **threads,
        "profile": {k: round(v, 3) for k, v in parts.items()},  # seconds (docs/conventions.md#profile)
        "config_hash": config_hash(cfg),
        "code": provenance.record(name),
        "versions": versions(),
        "not_reached": never_reached(results.summary),  # null there means never reached, not unmeasured
    }
    write_json(out / SUMMARY, results.summary)  # last: the mark of a finished run


@contextlib.contextmanager
def _segment(out: Path, fresh: bool) -> Iterator[list[float]]:
    """Time one segment of a run (its first run, or one ``--resume``) in wall.json, so that summary.json's
    ``wall_seconds`` counts every segment; yields the earlier segments' seconds.  A segment that ends with an error
    or Ctrl-C records its own seconds; one killed (SIGKILL) counts up to its last checkpoint, the last time it
    surely ran.  The finished run's summary holds them all, so wall.json is then removed."""
    earlier = [] if fresh else _earlier_segments(out)
    started = time.time()
    write_json(out / WALL, {"segments": earlier, "running_since": started})
    try:
        yield earlier
    except BaseException:
        with contextlib.suppress(OSError):  # a full disk: the error that stopped the run is the one to report
            write_json(out / WALL, {"segments": [*earlier, time.time() - started], "running_since": None})
        raise
    (out / WALL).unlink(missing_ok=True)


def _earlier_segments(out: Path) -> list[float]:
    """The seconds of the segments wall.json records (none: a run stopped before it wrote one); a segment still
    ``running_since`` a time was killed, and is closed at its last checkpoint's time (0 s without one)."""
    if not (out / WALL).exists():
        return []
    try:
        saved = read_json(out / WALL, "a run's wall-time record")
        segments = [float(s) for s in saved["segments"]]
        since = None if saved["running_since"] is None else float(saved["running_since"])
    except (RunFileError, ValueError, TypeError, KeyError) as err:
        log.warning("%s is damaged (%s): the wall time counts from this segment on", out / WALL, err)
        return []
    if since is not None:
        written = [p.stat().st_mtime for p in (out / "checkpoints").glob("*.pt")]
        segments.append(max([since, *written]) - since)
    return segments


MEASURES = re.compile(r"loss|score|kl|dist|error|acc", re.I)  # columns and keys that measure the run


def check_results(results: Results, times: tuple[str, ...] = ()) -> None:
    """Stop (:class:`NaNResultsError`, exit 3) when a measure of the run is NaN throughout: a table column of losses,
    scores, distances or errors with no finite value, or such a summary value that is NaN.  A config value then made the
    numbers meaningless (an empty average, a NaN in the data); the tables stay for a look and the run unfinished.
    The time of an event (:func:`is_time`, or a name the experiment declares in ``times``) that was never reached is
    +inf, NaN or None by design (docs/conventions.md#never), not a broken measure, and passes."""
    empty = [
        f"{name}.{col}"
        for name, df in results.tables.items()
        for col in df.select_dtypes("number").columns
        if _is_measure(str(col), times) and len(df) and df[col].isna().all()
    ]
    nan = [k for k, v in _leaves(results.summary) if _is_measure(k, times) and isinstance(v, float) and math.isnan(v)]
    if empty or nan:
        raise NaNResultsError(
            "the run's results are NaN ("
            + ", ".join((empty + nan)[:6])
            + "): a config value leaves nothing to measure or puts NaN in the data; change it and re-run with --force"
        )


def _is_measure(key: str, times: tuple[str, ...] = ()) -> bool:
    """A summary key or column naming a measured value (``final.val_loss``, ``probe_distance_final``), not the time
    of an event (:func:`is_time`, or a name of ``times``, which the experiment declares)."""
    name = key.rsplit(".", 1)[-1]
    return bool(MEASURES.search(name)) and not is_time(name) and name not in times


def is_time(name: str) -> bool:
    """A key or column that holds the time of an event, by the naming rule of docs/conventions.md#never: it starts
    with ``T_``/``t_`` (``T_III``, ``t_loss_drop``) or ends in ``_step``, ``_time`` or ``_epoch``
    (``loss_drop_step``)."""
    lower = name.lower()
    return lower.startswith("t_") or lower.endswith(("_step", "_time", "_epoch"))


def _leaves(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(obj, dict):
        return [leaf for k, v in obj.items() for leaf in _leaves(v, f"{prefix}{k}.")]
    return [(prefix.rstrip("."), obj)]


def _remove_temporaries(out: Path) -> None:
    """Remove the temporary files of atomic writes that a killed run left (``.NAME.XXXXXXXX.tmp`` for a file NAME
    of ours), in a run directory only; under the directory's lock no live writer owns one."""
    if not (out / CONFIG).exists():
        return
    for tmp in [*out.glob(".*.tmp"), *(out / "checkpoints").glob(".*.tmp"), *(out / "checkpoints").glob("*/.*.tmp")]:
        if re.fullmatch(r"\.(.+)\.\w{8}\.tmp", tmp.name) and _ours(tmp.with_name(tmp.name[1:-13])):
            tmp.unlink(missing_ok=True)


def _ours(path: Path) -> bool:
    return any(path.match(pattern) for pattern in OURS)


def clear(out: Path) -> None:
    """Remove what a run of ours left in ``out`` (refusing if it holds anything else), and ``out`` if empty; the
    lock file of a directory being written stays (:func:`inductionlab.runs.lock_dir` removes it)."""
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
            shutil.rmtree(p)
        elif p.name != LOCK:
            p.unlink()
    if not any(out.iterdir()):
        out.rmdir()


def _check_run_dir(out: Path, name: str, config: dict, resume: bool, force: bool) -> None:
    saved = saved_config(out)
    if saved is None or force:
        return
    if saved["experiment"] != name:
        raise RunDirError(f"{out} holds a run of another experiment. Use another --out, or --force to replace it.")
    if resume:
        diff = differences(config_values(saved), config)
        if diff:
            raise RunDirError(
                f"{out}: --resume needs the saved run's config; these values differ:\n  "
                + "\n  ".join(diff)
                + "\nDrop them to resume, or use --force to start over."
            )
        made = provenance.made_by(out)
        if made is not None:
            raise RunDirError(
                f"{out}: --resume continues a run only with the code that made it; it was made by "
                f"{provenance.describe(made)}, and this is {provenance.describe(provenance.record(name))} "
                f"({provenance.what_changed(made, name)}). "
                "Use --force to make it again with this code, or another --out."
            )
        return
    state = "a finished run" if (out / SUMMARY).exists() else "an unfinished run (resume it with --resume)"
    raise RunDirError(f"{out} already holds {state}. Use --resume, --force (overwrite) or another --out.")
