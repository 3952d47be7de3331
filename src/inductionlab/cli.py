"""Command line: ``inductionlab list | run | sweep | reproduce | report | watch``.

Config values are set by dotted keys, before or after the experiment's name, e.g.
``inductionlab run lazy-to-rich --preset quick --task.alpha_star 2 --train.lr 0.05``.
``inductionlab list --keys NAME`` shows every key with its type, default, allowed values and what it does;
``inductionlab list --presets NAME`` what each preset changes.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inductionlab._version import __version__
from inductionlab.cli_errors import exit_code, said
from inductionlab.cli_parse import integer, near, no_near_miss, option_strings, stand_in
from inductionlab.cli_plugins import recorded_experiment, take_plugins
from inductionlab.cli_report import (
    cmd_report,
    cmd_reproduce,
    cmd_watch,
    executor_options,
    executor_parameters,
    print_outputs,
    report_options,
    reproduce_options,
    reuse_stale_option,
    threads_option,
    watch_options,
)
from inductionlab.config import ConfigError

if TYPE_CHECKING:
    from inductionlab.train.loop import Hook


def resolve(name: str, preset: str | None, values: dict[str, Any]) -> Any:
    """CONFIG → preset → command-line values (each validated)."""
    from inductionlab import experiments

    return experiments.configure(name, preset, values)


def cmd_list(args: argparse.Namespace) -> int:
    from inductionlab import experiments
    from inductionlab.keys import describe, preset_changes

    for option in ("keys", "presets"):
        if getattr(args, option) == "":  # the option without a name: which names it takes
            print(f"--{option} takes an experiment's name: {', '.join(experiments.all_experiments())}")
            return 0
    if args.keys:
        exp = experiments.get(args.keys)
        print(f"{exp.name}: presets {', '.join(exp.presets)}   (values are typed as shown: lists as 1,2)")
        print("\n".join(f"  {line}" for line in _declared(exp)))
        for d in describe(exp.config):
            allowed = f"  [{d['allowed']}]" if d["allowed"] else ""
            note = f"  # {d['help']}" if d["help"] else ""
            print(f"  --{d['key']} {d['default']}   ({d['type']}){allowed}{note}")
        print(f"What each preset changes: inductionlab list --presets {exp.name}")
        return 0
    if args.presets:
        exp = experiments.get(args.presets)
        print(f"{exp.name}: each preset's keys, default → preset value (keys given on the command line go on top)")
        for preset, values in exp.presets.items():
            print(f"  --preset {preset}" + ("" if values else "   (the defaults)"))
            for key, default, value in preset_changes(exp.config, values):
                print(f"    {key}: {default} → {value}" + ("   (the default)" if value == default else ""))
        return 0
    known = experiments.all_experiments()
    width = max(map(len, known))
    for name, exp in known.items():
        laws = f" (laws in {', '.join(dict.fromkeys(law.key for law in exp.laws))})" if exp.laws else ""
        print(f"{name:<{width}}  {exp.figure:<26} {exp.wall:>8}  {', '.join(exp.devices):<9}  {exp.description}{laws}")
    print("\nColumns: experiment, what it reproduces, default wall time on 2 cores, devices, description.")
    print("Keys of one experiment: inductionlab list --keys NAME; what its presets change: --presets NAME")
    return 0


def _declared(exp: Any) -> list[str]:
    """What ``exp`` declares (docs/own_experiment.md#what-it-declares), one line each, for ``list --keys``."""
    lines = [f"devices: {', '.join(exp.devices)}" + ("" if "cuda" in exp.devices else f" ({exp.cpu_only})")]
    lines += [f"losses in {exp.loss_unit}"] if exp.loss_unit else []
    lines += [f"reads its data from --{exp.data} (reproduce --data sets it)"] if exp.data else []
    lines += [f"law in --{law.key}: {law.formula()} ({law.source})" for law in exp.laws]
    return lines


def _config_for_run(args: argparse.Namespace, values: dict[str, str]) -> tuple[str, Any, Path]:
    """The experiment name, its resolved config and the output directory of ``run``.  Precedence: the
    experiment's default < ``--preset`` < ``--config`` file < command-line keys; ``--resume`` starts from the
    saved run's config instead of the default.  A plug-in's experiment is found through the plug-in that the
    ``--config`` file or the resumed run recorded."""
    from inductionlab import experiments
    from inductionlab.config import differences, from_dict, read_config_file, to_dict, with_seeds
    from inductionlab.runner import saved_config
    from inductionlab.runs import CONFIG, check_free, config_values

    file = read_config_file(Path(args.config)) if args.config else None
    name = args.name or (file or {}).get("experiment")
    if name is None and args.out and args.resume:
        name = (saved_config(Path(args.out)) or {}).get("experiment")
    if name is None:
        raise ConfigError("run: name an experiment (inductionlab list shows them), or give --config RUN/config.json")
    if file is not None and file.get("experiment", name) != name:
        raise ConfigError(f"--config {args.config}: the file is for {file['experiment']!r}, not {name!r}")
    if args.out == "":
        raise ConfigError("--out: empty path; give a directory")
    out = Path(args.out or Path("runs") / name)
    check_free(out)  # a live writer is named first, whatever else the command asks
    if file is not None or args.resume:
        recorded_experiment(Path(args.config) if file is not None else out / CONFIG, name)
    saved = saved_config(out) if args.resume and not args.force and file is None else None
    base = None
    if saved is not None:
        if saved.get("experiment") != name:
            raise ConfigError(f"the saved config is for {saved.get('experiment')!r}, not {name!r}")
        base = from_dict(type(experiments.get(name).config), config_values(saved))
    cfg = experiments.configure(name, args.preset, values, base, file)
    if args.seed is not None:
        cfg = with_seeds(cfg, args.seed)
    if base is not None:
        diff = differences(to_dict(base), to_dict(cfg))
        if diff:
            raise ConfigError(
                "--resume continues the saved run, but these values differ from it:\n  "
                + "\n  ".join(diff)
                + "\nDrop them to resume, or use --force to start over with them."
            )
    return name, cfg, out


def cmd_run(args: argparse.Namespace, values: dict[str, str]) -> int:
    from inductionlab import experiments
    from inductionlab.runner import run_experiment, thread_budget

    thread_budget(args.threads)  # a bad --threads or $OMP_NUM_THREADS fails before any work
    name, cfg, out = _config_for_run(args, values)
    experiments.get(name).check_needs(cfg)  # its optional packages, before any work (docs/conventions.md#extras)
    hooks: list[Hook] = []
    if args.log_tensorboard or args.log_wandb:
        from inductionlab.config import to_dict
        from inductionlab.train.hooks import TensorBoardLogger, WandbLogger, check_loggers

        check_loggers(bool(args.log_tensorboard), bool(args.log_wandb))  # both packages, before either starts
        if args.log_tensorboard:
            hooks.append(TensorBoardLogger(args.log_tensorboard))
        if args.log_wandb:
            hooks.append(WandbLogger(args.log_wandb, config={"experiment": name, **to_dict(cfg)}, name=Path(out).name))
    print(f"running {name} into {out} ...", file=sys.stderr)
    run_dir = run_experiment(
        name,
        cfg,
        out,
        resume=args.resume,
        force=args.force,
        progress=not args.no_progress,
        threads=args.threads,
        hooks=tuple(hooks),
        keep_checkpoints=args.keep_checkpoints,
    )
    print_outputs(run_dir, experiments.get(name).headline)
    return 0


def cmd_sweep(args: argparse.Namespace, values: dict[str, str]) -> int:
    from inductionlab.config import with_seeds
    from inductionlab.runner import thread_budget
    from inductionlab.runs import SWEEP_INFO
    from inductionlab.sweep import count_jobs, parse_grid, run_sweep
    from inductionlab.sweep_report import MANY_JOBS, estimate

    thread_budget(args.threads)  # a bad --threads or $OMP_NUM_THREADS fails before any work
    if args.n_seeds < 1:
        raise ConfigError(f"--n-seeds: must be ≥ 1, got {args.n_seeds}")
    if args.workers < 1:
        raise ConfigError(f"--workers: must be ≥ 1, got {args.workers}")
    if args.name is None:
        raise ConfigError("sweep: name an experiment (inductionlab list shows them)")
    slurm = executor_parameters(args)
    out = Path(args.out or Path("sweeps") / args.name)
    recorded_experiment(out / SWEEP_INFO, args.name)  # re-running a sweep: the plug-in it recorded
    cfg = resolve(args.name, args.preset, values)
    if args.seed is not None:
        cfg = with_seeds(cfg, args.seed)
    grid = parse_grid(args.grid or [])
    count = count_jobs(cfg, grid, args.n_seeds)  # arithmetic: a huge request is refused before any config is built
    if count > MANY_JOBS and not args.yes:
        raise ConfigError(f"--yes: {estimate(args.name, count, args.workers, args.preset)}; add --yes to start them")
    table = run_sweep(
        args.name,
        cfg,
        grid,
        out,
        seeds=args.n_seeds,
        workers=args.workers,
        executor=args.executor,
        slurm=slurm,
        progress=not args.no_progress,
        threads=args.threads,
        reuse_stale=args.reuse_stale,
        on_plan=lambda todo: print(
            "sweep:", estimate(args.name, len(todo), args.workers, args.preset), file=sys.stderr
        ),
    )
    print(f"{len(table)} finished runs; table: {out / 'sweep.parquet'}; manifest: {out / 'manifest.jsonl'}")
    return 0


def plain(text: str) -> str:
    """``text`` (reStructuredText, such as a docstring) as a terminal shows it: ````code```` and
    ``:role:`target``` lose their markup."""
    return re.sub(r"(?::\w+:)?`{1,2}([^`]+)`{1,2}", r"\1", text)


def _sweep_options(sw: argparse.ArgumentParser) -> None:
    """The options of ``sweep`` besides those it shares with ``run``: the grid, seeds, workers, the executor."""
    sw.add_argument("--grid", action="append", metavar="KEY=V1,V2", help="a grid axis (repeatable)")
    sw.add_argument(
        "--n-seeds",
        type=integer,
        default=1,
        metavar="K",
        help="K seeds from the first: on the run axis in one job, or one job each where an experiment takes one",
    )
    sw.add_argument("--workers", type=integer, default=1)
    threads_option(sw)
    executor_options(sw)
    sw.add_argument("--yes", action="store_true", help="start a sweep of more than 50 jobs")
    reuse_stale_option(sw)


def build_parser(watch: bool = True) -> argparse.ArgumentParser:
    """The command line; ``watch``: with ``watch``'s monitor settings (:func:`inductionlab.cli_report.watch_options`)."""
    p = argparse.ArgumentParser(
        prog="inductionlab",
        description=plain(__doc__ or ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("--version", action="version", version=f"inductionlab {__version__}")
    p.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE|FILE.py",
        help="import a module or file that registers experiments (anywhere on the command line; repeatable, one "
        "each; also $INDUCTIONLAB_PLUGINS, separated by os.pathsep); runs and sweeps record it, so that report and "
        "--resume find it again; see docs/own_experiment.md",
    )
    sub = p.add_subparsers(dest="command", required=True)
    add = functools.partial(sub.add_parser, allow_abbrev=False)  # --out never takes --out.x, nor --pre --preset
    ls = add("list", help="list experiments (or one experiment's keys or presets)")
    which = ls.add_mutually_exclusive_group()
    which.add_argument(
        "--keys", metavar="NAME", nargs="?", const="", help="every config key of NAME: type, default, what it does"
    )
    which.add_argument(
        "--presets", metavar="NAME", nargs="?", const="", help="each preset of NAME: the keys it sets, default → value"
    )
    for cmd in ("run", "sweep"):
        sp = add(cmd, help=f"{cmd} an experiment; --KEY VALUE pairs (anywhere) set config values")
        sp.add_argument("name", nargs="?", help="the experiment (inductionlab list)")
        sp.add_argument("--out", help="output directory (default runs/NAME or sweeps/NAME)")
        sp.add_argument("--preset", help="a named set of values: smoke, quick, ... (inductionlab list --presets NAME)")
        sp.add_argument("--no-progress", action="store_true", help="no progress bars")
        sp.add_argument(
            "--seed", type=integer, help="first seed (the run axis keeps its count: seeds SEED, SEED + 1, ...)"
        )
    run = sub.choices["run"]
    run.add_argument("--config", metavar="RUN/config.json", help="start from a saved run's config (values on top)")
    run.add_argument("--resume", action="store_true", help="continue the interrupted run in --out (its saved config)")
    run.add_argument("--force", action="store_true", help="replace the run in --out")
    run.add_argument(
        "--keep-checkpoints", action="store_true", help="also keep checkpoints/MODEL/step-STEP.pt per evaluation"
    )
    threads_option(run)
    run.add_argument(
        "--log.tensorboard", dest="log_tensorboard", metavar="DIR", help="also log evaluations to TensorBoard"
    )
    run.add_argument(
        "--log.wandb", dest="log_wandb", metavar="PROJECT", help="also log evaluations to Weights & Biases"
    )
    _sweep_options(sub.choices["sweep"])
    reproduce_options(add("reproduce", help="run what the papers' claims need, judge them, write report.html"))
    report_options(
        add("report", help="re-make a run's figures, a sweep's table, or a reproduce report; or render the ledger")
    )
    watch_options(add("watch", help="induction heads across a series of checkpoints (docs/monitor.md)"), watch)
    return p


def parse_command(argv: list[str]) -> tuple[argparse.Namespace, dict[str, str]]:
    """The command's options, and the config values of ``run`` and ``sweep``: every ``--KEY VALUE`` or
    ``--KEY=VALUE``, before or after the experiment's name, whose ``--KEY`` the command's parser does not declare
    (the parser is the one list of options: what ``parse_known_args`` leaves over is config).  A value may start
    with ``-`` (``--task.alpha -1``, ``--task.label -hello``): the pair is taken off before the command's own options
    are parsed, so it never reads as an option or as the experiment's name (``run --task.L 20 lazy-to-rich``); a value
    that is itself one of the command's options (``--task.name --out``) reads as that option."""
    parser = build_parser(watch="watch" in argv)
    declared = option_strings(parser)
    # the first pass only finds the undeclared --KEYs: a value such as -1, -hello, or -h after an undeclared --KEY,
    # stands in as 0, lest it read as an option or as help
    first, extras = parser.parse_known_args([stand_in(argv, i, declared) for i in range(len(argv))])
    if first.command not in ("run", "sweep"):
        return parser.parse_args(argv), {}
    # an unknown --KEY=V holding a space is taken for a positional (argparse): then it stands as the name
    config = {a.partition("=")[0] for a in [*extras, first.name or ""] if a.startswith("--") and len(a) > 2}
    no_near_miss(config, declared, first.name)
    own: list[str] = []
    values: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if arg == "--":
            raise ConfigError(f"unexpected argument {arg!r}: config values are given as --KEY VALUE (e.g. --task.L 20)")
        if key not in config:
            own.append(arg)
        else:
            if not eq:
                if i + 1 >= len(argv):
                    raise ConfigError(f"{key}: missing value (config values are given as --KEY VALUE)")
                if argv[i + 1].partition("=")[0] in declared - {"-h"}:  # -h after a --KEY is its value
                    raise ConfigError(
                        f"{key}: missing value: the next argument, {argv[i + 1]}, is an option (config values are "
                        f"given as --KEY VALUE){near(key, declared)}"
                    )
                value, i = argv[i + 1], i + 1
            values[key[2:]] = value
        i += 1
    return parser.parse_args(own), values


def _dispatch(argv: list[str]) -> int:
    args, values = parse_command(take_plugins(argv))
    if args.command in ("run", "sweep", "reproduce", "watch"):
        from inductionlab import environ

        environ.check()  # a bad switch fails before any work (docs/conventions.md#environment)
    if args.command == "list":
        return cmd_list(args)
    if args.command == "report":
        return cmd_report(args)
    if args.command == "reproduce":
        return cmd_reproduce(args)
    if args.command == "watch":
        return cmd_watch(args)
    return {"run": cmd_run, "sweep": cmd_sweep}[args.command](args, values)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(message)s")  # other libraries' notes stay quiet
    logging.getLogger("inductionlab").setLevel(logging.INFO)
    try:
        code = _dispatch(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # a reader that went away (`| head`) shows here, not at exit
        return code
    except BrokenPipeError:  # stdout's reader went away: stop quietly, as `yes | head` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt as err:
        print(f"inductionlab: {str(err) or 'interrupted'}", file=sys.stderr)
        return 130
    except Exception as err:
        err_code = exit_code(err)
        if err_code is None:
            raise
        print(f"inductionlab: {'stopped' if err_code == 3 else 'error'}: {said(err)}", file=sys.stderr)
        return err_code


if __name__ == "__main__":
    sys.exit(main())
