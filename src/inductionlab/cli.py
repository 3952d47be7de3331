"""Command line: ``inductionlab list | run | sweep | report``.

Config values are set by dotted keys after the command, e.g.
``inductionlab run lazy-to-rich --preset quick --task.alpha_star 2 --train.lr 0.05``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from inductionlab import experiments
from inductionlab.config import ConfigError, flatten, with_seeds
from inductionlab.runner import RunDirError, run_experiment
from inductionlab.runs import load_results
from inductionlab.train.loop import NonFiniteError


def _dotted(pairs: list[str]) -> dict[str, str]:
    """``["--task.L", "20", "--seed=3"]`` → {"task.L": "20", "seed": "3"}."""
    out: dict[str, str] = {}
    i = 0
    while i < len(pairs):
        arg = pairs[i]
        if not arg.startswith("--") or len(arg) == 2:
            raise ConfigError(f"unexpected argument {arg!r}: config values are given as --KEY VALUE (e.g. --task.L 20)")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(pairs):
                raise ConfigError(f"--{key}: missing value")
            value, i = pairs[i + 1], i + 1
        out[key] = value
        i += 1
    return out


def resolve(name: str, preset: str | None, values: dict[str, Any]) -> Any:
    """CONFIG → preset → command-line values (each validated)."""
    return experiments.configure(name, preset, values)


def cmd_list(args: argparse.Namespace) -> int:
    if args.keys:
        exp = experiments.get(args.keys)
        print(f"{exp.NAME}: presets {', '.join(exp.PRESETS)}")
        for key, value in flatten(exp.CONFIG).items():
            print(f"  --{key} {value}")
        return 0
    width = max(map(len, experiments.REGISTRY))
    for name, exp in experiments.REGISTRY.items():
        print(f"{name:<{width}}  {exp.DESCRIPTION}")
    print("\nShow an experiment's keys and presets: inductionlab list --keys NAME")
    return 0


def cmd_run(args: argparse.Namespace, extra: list[str]) -> int:
    cfg = resolve(args.name, args.preset, _dotted(extra))
    if args.seed is not None:
        cfg = with_seeds(cfg, args.seed)
    out = Path(args.out or Path("runs") / args.name)
    print(f"running {args.name} into {out} ...", file=sys.stderr)
    run_dir = run_experiment(args.name, cfg, out, resume=args.resume, force=args.force, progress=not args.no_progress)
    _print_outputs(run_dir)
    return 0


def _print_outputs(run_dir: Path) -> None:
    print(f"summary: {run_dir / 'summary.json'}")
    for png in sorted(run_dir.glob("*.png")):
        print(f"figure:  {png}")


def cmd_sweep(args: argparse.Namespace, extra: list[str]) -> int:
    from inductionlab.sweep import parse_grid, run_sweep

    cfg = resolve(args.name, args.preset, _dotted(extra))
    if args.seed is not None:
        cfg = with_seeds(cfg, args.seed)
    if args.n_seeds < 1:
        raise ConfigError(f"--n-seeds: must be ≥ 1, got {args.n_seeds}")
    out = Path(args.out or Path("sweeps") / args.name)
    slurm = {"timeout_min": args.slurm_timeout_min}
    if args.slurm_partition:
        slurm["slurm_partition"] = args.slurm_partition
    table = run_sweep(
        args.name,
        cfg,
        parse_grid(args.grid or []),
        out,
        seeds=args.n_seeds,
        workers=args.workers,
        executor=args.executor,
        slurm=slurm,
        progress=not args.no_progress,
    )
    print(f"{len(table)} finished runs; table: {out / 'sweep.parquet'}; manifest: {out / 'manifest.jsonl'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    run_dir = Path(args.dir)
    config = run_dir / "config.json"
    if not config.exists():
        raise RunDirError(f"{run_dir}: no config.json — not a run directory")
    import json

    name = json.loads(config.read_text()).get("experiment")
    results = load_results(run_dir)
    experiments.get(name).plot(results, run_dir)
    _print_outputs(run_dir)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="inductionlab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="list experiments (or one experiment's keys)")
    ls.add_argument("--keys", metavar="NAME", help="print every config key of NAME with its default")
    for cmd in ("run", "sweep"):
        sp = sub.add_parser(cmd, help=f"{cmd} an experiment; extra --KEY VALUE pairs set config values")
        sp.add_argument("name")
        sp.add_argument("--out", help="output directory (default runs/NAME or sweeps/NAME)")
        sp.add_argument("--preset", help="a named set of values (see `inductionlab list --keys NAME`)")
        sp.add_argument("--no-progress", action="store_true", help="no progress bars")
        sp.add_argument("--seed", type=int, help="first seed (the run axis keeps its count: seeds SEED, SEED + 1, ...)")
    run = sub.choices["run"]
    run.add_argument("--resume", action="store_true", help="continue an interrupted run in --out exactly")
    run.add_argument("--force", action="store_true", help="overwrite a finished run in --out")
    sw = sub.choices["sweep"]
    sw.add_argument("--grid", action="append", metavar="KEY=V1,V2", help="a grid axis (repeatable)")
    sw.add_argument(
        "--n-seeds",
        type=int,
        default=1,
        metavar="K",
        help="K seeds from the first: on the run axis in one job, or one job each where an experiment takes one",
    )
    sw.add_argument("--workers", type=int, default=1)
    sw.add_argument("--executor", choices=("local", "slurm", "submitit-local"), default="local")
    sw.add_argument("--slurm-partition")
    sw.add_argument("--slurm-timeout-min", type=int, default=60)
    rp = sub.add_parser("report", help="re-make the figures of a run directory from its saved tables")
    rp.add_argument("dir")
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    try:
        if args.command == "list":
            return cmd_list(args)
        if args.command == "report":
            return cmd_report(args)
        return {"run": cmd_run, "sweep": cmd_sweep}[args.command](args, extra)
    except (ConfigError, RunDirError, FileNotFoundError) as err:
        print(f"inductionlab: error: {err}", file=sys.stderr)
        return 2
    except NonFiniteError as err:
        print(f"inductionlab: stopped: {err}", file=sys.stderr)
        return 3
    except KeyboardInterrupt as err:
        print(f"inductionlab: {err or 'interrupted'}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
