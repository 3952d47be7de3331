"""The commands that read finished work — ``inductionlab report`` and ``inductionlab reproduce`` — and what every
command prints of it: a run's headline numbers and files, a reproduce directory's claims; and where the jobs of
``sweep`` and ``reproduce`` run (the executor options)."""

from __future__ import annotations

import argparse
import errno
import math
import shutil
from pathlib import Path
from typing import Any

from inductionlab.cli_parse import integer, monitor_options
from inductionlab.config import ConfigError

SLURM_KEYS = {  # option → (submitit parameter, the executors it acts with)
    "--slurm-partition": ("slurm_partition", {"slurm"}),
    "--slurm-timeout-min": ("timeout_min", {"slurm", "submitit-local"}),
    "--slurm-cpus": ("cpus_per_task", {"slurm"}),
    "--slurm-mem-gb": ("mem_gb", {"slurm"}),
}
VOLATILE = {"wall_seconds", "config_hash", "experiment", "threads"}


def threads_option(p: argparse.ArgumentParser) -> None:
    """``--threads N`` of ``run``, ``sweep`` and ``reproduce`` (:func:`inductionlab.runner.thread_budget`)."""
    p.add_argument(
        "--threads",
        type=integer,
        metavar="N",
        help="torch threads per run (default: $OMP_NUM_THREADS, else $SLURM_CPUS_PER_TASK, else the cores this "
        "process may use; sweep and reproduce share them among --workers)",
    )


def watch_options(wa: argparse.ArgumentParser, settings: bool) -> None:
    """The options of ``watch``; with ``settings`` also one per monitor setting (:func:`monitor_options`, which
    imports the monitor: only when the command is ``watch``, so that ``--help`` and ``--version`` stay light)."""
    wa.add_argument("dir", help="a Trainer's output_dir, save_pretrained folders, TL state dicts or a kept run")
    wa.add_argument(
        "--every", type=integer, default=1, metavar="N", help="only checkpoints whose step is a multiple of N"
    )
    wa.add_argument("--name", help="a kept run's model (default: its main one; inductionlab watch lists them)")
    wa.add_argument("--run", type=integer, default=0, help="a kept run's row of the run axis (default 0)")
    wa.add_argument(
        "--llc", action="store_true", help="also the local learning coefficient of every checkpoint (devinterp's SGLD)"
    )
    wa.add_argument("--llc-draws", type=integer, metavar="N", help="SGLD steps per chain (with --llc; default 50)")
    wa.add_argument("--llc-chains", type=integer, metavar="N", help="SGLD chains (with --llc; default 2)")
    wa.add_argument("--llc-seed", type=integer, metavar="N", help="SGLD's seed (with --llc; default 0)")
    if settings:
        monitor_options(wa)


def reuse_stale_option(p: argparse.ArgumentParser) -> None:
    """``--reuse-stale`` of ``sweep`` and ``reproduce`` (docs/conventions.md#provenance)."""
    p.add_argument(
        "--reuse-stale",
        action="store_true",
        help="keep a finished run made by other code instead of making it again (the report marks its row "
        "'made by' that code); an unfinished one is still made again",
    )


def executor_options(p: argparse.ArgumentParser) -> None:
    """Where the jobs of ``sweep`` and ``reproduce`` run: here, submitit's local processes, or Slurm."""
    p.add_argument("--executor", choices=("local", "slurm", "submitit-local"), default="local")
    p.add_argument("--slurm-partition", help="the Slurm partition (default: the cluster's)")
    p.add_argument("--slurm-timeout-min", type=integer, help="each job's time limit in minutes (default 60)")
    p.add_argument("--slurm-cpus", type=integer, help="CPUs per job; a job trains on that many threads (default 1)")
    p.add_argument("--slurm-mem-gb", type=integer, help="memory per job in GB (default: the cluster's)")


def reproduce_options(rr: argparse.ArgumentParser) -> None:
    """The options of ``reproduce``: which claims, at which budget, where, and where its jobs run."""
    rr.add_argument(
        "--paper", default="all", help="all (default), wang, chen, ren, or the paper name of registered claims"
    )
    rr.add_argument("--budget", choices=("smoke", "quick", "full"), default="full", help="smoke: the path only")
    rr.add_argument("--out", default="reproduce", help="output directory (re-running it reuses finished runs)")
    rr.add_argument("--workers", type=integer, default=1, help="experiments run at once (one core each)")
    rr.add_argument("--data", metavar="DIR", help="WikiText-2 for the text experiments (else $INDUCTIONLAB_DATA)")
    rr.add_argument("--only", metavar="NAME[,NAME]", help="only these experiments (and their controls)")
    rr.add_argument(
        "--calibrate",
        action="store_true",
        help="the experiments and their draws with their seeds moved up by 1000 (no control), the calibration seeds on which protocols "
        "are chosen before the judged draws (docs/conventions.md#calibration); its page judges no paper",
    )
    rr.add_argument(
        "--ledger",
        metavar="DIR",
        help="fill the committed results ledger DIR (e.g. results): run the full page's missing and stale jobs, "
        "most useful first, add each to DIR as it finishes, render --page (docs/conventions.md#ledger)",
    )
    rr.add_argument(
        "--minutes", type=float, metavar="N", help="with --ledger: start no job once N core-minutes are spent"
    )
    rr.add_argument("--page", metavar="FILE", help="with --ledger: where the page goes (default docs/report.html)")
    rr.add_argument(
        "--audit",
        type=integer,
        metavar="N",
        help="with --ledger: re-make N current entries (drawn at random) and compare what their claims read",
    )
    rr.add_argument("--audit-seed", type=integer, default=0, metavar="S", help="with --audit: the draw's seed")
    rr.add_argument("--cheapest", action="store_true", help="with --audit: the N cheapest entries instead")
    threads_option(rr)
    executor_options(rr)
    reuse_stale_option(rr)


def report_options(rp: argparse.ArgumentParser) -> None:
    """The options of ``report``: a directory, or the ledger (docs/conventions.md#ledger)."""
    rp.add_argument("dir", nargs="?", help="a run, sweep or reproduce directory (not with --ledger)")
    rp.add_argument(
        "--ledger", metavar="DIR", help="render the page from the results ledger DIR (docs/conventions.md#ledger)"
    )
    rp.add_argument(
        "--check",
        action="store_true",
        help="with --ledger: say how many of the page's jobs are current at "
        "HEAD; exit 1 when the committed page says more are",
    )
    rp.add_argument("--page", metavar="FILE", help="with --ledger: the page (default docs/report.html)")
    rp.add_argument("--data", metavar="DIR", help="with --ledger: WikiText-2, to check the text jobs' data")


def executor_parameters(args: argparse.Namespace) -> dict:
    """submitit's parameters from the --slurm-* options (timeout 60 min unless given), for ``sweep`` and
    ``reproduce``; an option given with an executor that does not use it is an error, and so is ``--executor
    slurm`` where Slurm is not installed."""
    if args.executor == "slurm" and shutil.which("sbatch") is None:
        raise ConfigError(
            "--executor slurm: Slurm is not available here (no sbatch on PATH); use --executor local or submitit-local"
        )
    params: dict = {"timeout_min": 60}
    for option, (key, executors) in SLURM_KEYS.items():
        value = getattr(args, option[2:].replace("-", "_"))
        if value is None:
            continue
        if args.executor not in executors:
            raise ConfigError(f"{option}: acts only with --executor {' or '.join(sorted(executors))}")
        if key != "slurm_partition" and value < 1:
            raise ConfigError(f"{option}: must be ≥ 1, got {value} (a job given less ends before it starts)")
        params[key] = value
    return params


MISSING_KEY = object()  # a headline key the summary lacks


def headline(summary: dict[str, Any], keys: tuple[str, ...] | None = None) -> list[str]:
    """``key = value`` lines of the numbers an experiment declares as its headline (default: its top-level
    scalars), then the wall time; a declared number that is missing or NaN reads "not reached at this size"."""
    explicit = keys is not None
    if keys is None:
        keys = tuple(k for k, v in summary.items() if k not in VOLATILE and isinstance(v, (int, float, bool)))[:10]
    lines: list[str] = []
    never = set(summary.get("not_reached", ()))  # times that never came (docs/conventions.md#never)
    for key in keys:
        value: Any = summary
        for part in key.split("."):
            value = value.get(part, MISSING_KEY) if isinstance(value, dict) else MISSING_KEY
        top = key.split(".")[0]
        if value is MISSING_KEY and "." in key and top not in summary:  # a whole part absent: one line for it
            line = f"  {top}.*: not in this run's summary"
            lines += [] if line in lines else [line]
        elif value is MISSING_KEY:
            lines.append(f"  {key}: not in this run's summary")
        elif isinstance(value, list) and value and all(isinstance(v, (bool, int, float)) for v in value):
            shown = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in value)
            lines.append(f"  {key} = {shown}" + (" (per seed)" if len(value) > 1 else ""))
        elif value is None and key in never:
            lines.append(f"  {key} = never (not reached in this run)")
        elif isinstance(value, float) and math.isnan(value) or value is None and explicit:
            lines.append(f"  {key} = not reached at this size")
        elif isinstance(value, float):
            lines.append(f"  {key} = {value:.6g}")
        elif value is not None and not isinstance(value, (dict, list)):
            lines.append(f"  {key} = {value}")
    if isinstance(summary.get("wall_seconds"), (int, float)):
        lines.append(f"  wall_seconds = {summary['wall_seconds']:.1f}")
    return lines


def print_outputs(run_dir: Path, keys: tuple[str, ...] | None) -> None:
    """Print a run's headline numbers (``keys``, :func:`headline`), its summary and its figures."""
    from inductionlab.runs import read_json

    summary = read_json(run_dir / "summary.json", "a run's summary")
    print(f"{summary.get('experiment', '')} in {run_dir}:")
    print("\n".join(headline(summary, keys)))
    print(f"summary: {run_dir / 'summary.json'}")
    for png in sorted(run_dir.glob("*.png")):
        print(f"figure:  {png}")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from inductionlab.reproduce import reproduce
    from inductionlab.runner import thread_budget

    thread_budget(args.threads)  # a bad --threads or $OMP_NUM_THREADS fails before any work
    if args.workers < 1:
        raise ConfigError(f"--workers: must be ≥ 1, got {args.workers}")
    only = tuple(n.strip() for n in (args.only or "").split(",") if n.strip())
    slurm = executor_parameters(args)
    if args.ledger or args.minutes is not None or args.page or args.audit is not None or args.cheapest:
        from inductionlab.cli_ledger import fill_ledger

        return fill_ledger(args, only, slurm)
    reproduce(
        args.paper,
        args.budget,
        args.out,
        args.workers,
        args.data or "",
        only,
        args.executor,
        slurm,
        args.threads,
        args.calibrate,
        args.reuse_stale,
    )
    return _print_claims(Path(args.out))


def _print_claims(out: Path) -> int:
    """Re-judge the claims of a reproduce directory, print the totals and the failures; the exit status."""
    import pandas as pd

    from inductionlab.reproduce import exit_status, render, totals

    table = render(out)
    print(", ".join(f"{n} {s}" for s, n in totals(table).items()))
    for _, r in table[table.status == "failed"].iterrows():
        print(f"failed:  {r.id} [{r.kind}]: {r.statement} — {r.reason} (expected {r.expected}; test {r.test})")
    for _, r in table[table.status.isin(["undefined", "unearned", "did not learn"])].iterrows():
        print(f"{r.status}: {r.id}: {r.reason}")
    for _, r in table[table.control_status == "accepts"].iterrows() if "control_status" in table else ():
        print(f"control: {r.id}: its control {r.control} passes the check too (measured {r.control_measured_text})")
    status = table.control_status[table.control != ""] if "control_status" in table else pd.Series(dtype=str)
    counts = ", ".join(f"{n} {s or 'not judged'}" for s, n in status.value_counts().items())
    print(f"controls: {len(status)} of {len(table)} claims have a negative control ({counts or 'none run'})")
    print(f"claims:  {out / 'claims.parquet'}\nreport:  {out / 'report.html'}")
    return exit_status(table)


def cmd_report(args: argparse.Namespace) -> int:
    """Re-make the figures of a run, the table of a sweep (a plug-in's experiment found through the plug-in its
    config.json or sweep.json recorded) or the report of a reproduce directory."""
    from inductionlab import experiments
    from inductionlab.cli_plugins import recorded_experiment
    from inductionlab.reproduce import is_reproduce
    from inductionlab.runner import RunDirError, saved_config
    from inductionlab.runs import CONFIG, SWEEP_INFO, check_free, load_results
    from inductionlab.sweep_report import is_sweep, write_report

    if args.ledger:
        from inductionlab.cli_ledger import cmd_ledger_report

        return cmd_ledger_report(args)
    for option in ("check", "page", "data"):
        if getattr(args, option):
            raise ConfigError(f"--{option}: acts only with --ledger DIR")
    if not args.dir:
        raise ConfigError("report: give a run, sweep or reproduce directory, or --ledger DIR")
    run_dir = Path(args.dir)
    check_free(run_dir)  # a report writes into the directory: never beside its live writer
    if is_reproduce(run_dir):
        return _print_claims(run_dir)
    if is_sweep(run_dir):
        recorded_experiment(run_dir / SWEEP_INFO)
        for path in write_report(run_dir):
            print(f"wrote:   {path}")
        return 0
    saved = saved_config(run_dir) if run_dir.is_dir() else None
    if saved is None:
        raise RunDirError(f"{run_dir}: no config.json — not a run directory")
    exp = experiments.recorded(saved["experiment"], saved.get("plugins"), run_dir / CONFIG)
    results = load_results(run_dir)
    try:
        exp.plot(results, run_dir)
    except (KeyError, ValueError, IndexError) as err:
        raise RunDirError(
            f"{run_dir}: its tables do not fit a {saved['experiment']} run ({type(err).__name__}: "
            f"{err}); a table is missing or config.json belongs to another run. Re-run it (--force)."
        ) from None
    print_outputs(run_dir, exp.headline)
    return 0


def watch_config(args: argparse.Namespace) -> Any:
    """The :class:`~inductionlab.monitor.MonitorConfig` of ``watch``'s ``--FIELD`` options (the defaults where none
    is given), checked as the class checks it, the refusal naming the option."""
    import dataclasses

    from inductionlab.monitor.settings import MonitorConfig

    given = {
        f.name: getattr(args, f"monitor_{f.name}")
        for f in dataclasses.fields(MonitorConfig)
        if getattr(args, f"monitor_{f.name}", None) is not None
    }
    try:
        return MonitorConfig(**given)
    except ConfigError as err:
        field, _, why = str(err).partition(": ")
        if field in given or field in {f.name for f in dataclasses.fields(MonitorConfig)}:
            raise ConfigError(f"--{field.replace('_', '-')}: {why}") from None
        raise


def watch_llc(args: argparse.Namespace) -> Any:
    """The :class:`~inductionlab.monitor.llc.LLCConfig` of ``--llc`` and its ``--llc-*`` options (None without
    ``--llc``; an ``--llc-*`` option without it is refused), devinterp checked before any checkpoint is read."""
    from inductionlab.monitor.llc import LLCConfig, check_llc

    given = {k: getattr(args, f"llc_{k}") for k in ("draws", "chains", "seed") if getattr(args, f"llc_{k}") is not None}
    if not args.llc:
        if given:
            raise ConfigError(f"--llc-{next(iter(given))}: needs --llc (the LLC is not estimated without it)")
        return None
    try:
        config = LLCConfig(**given)
    except ConfigError as err:
        raise ConfigError(str(err).replace("llc.", "--llc-", 1)) from None
    check_llc()
    return config


def cmd_watch(args: argparse.Namespace) -> int:
    """Measure a series of checkpoints, or a Trainer's under each seed's folder (an hf-induction run of several
    seeds: RUN/hf/seed-0, seed-1, ...; docs/monitor.md#the-watch-command)."""
    from inductionlab.monitor.phase import phase_line
    from inductionlab.monitor.watch import trainer_dirs, watch

    config, llc = watch_config(args), watch_llc(args)
    dirs = trainer_dirs(args.dir) or [Path(args.dir)]  # none: watch names what is missing
    for directory in dirs:
        try:
            monitor, paths = watch(directory, config, every=args.every, name=args.name, run=args.run, llc=llc)
        except OSError as err:  # a read-only series: watch writes beside the checkpoints, it has no --out
            if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC):
                raise
            raise ConfigError(
                f"watch writes its tables and figure into {directory}, which it cannot write ({err.strerror}: "
                f"{err.filename}); make the folder writable, or copy the series to one that is"
            ) from None
        print(("" if len(dirs) == 1 else f"{directory.name}: ") + phase_line(monitor.phase()))
        for path in paths:
            print(f"wrote {path}")
    return 0
