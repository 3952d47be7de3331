"""The ledger's commands (docs/conventions.md#ledger): ``reproduce --ledger DIR [--minutes N] [--page FILE]`` fills
it and renders the page; ``report --ledger DIR [--check]`` renders the page from it, or checks the committed page
against this commit."""

from __future__ import annotations

import argparse
from pathlib import Path

from inductionlab.config import ConfigError


def fill_ledger(args: argparse.Namespace, only: tuple[str, ...], slurm: dict) -> int:
    """``reproduce --ledger DIR [--minutes N] [--page FILE]``: fill the ledger, render the page, print the counts."""
    from inductionlab.ledger_page import PAGE
    from inductionlab.reproduce import exit_status, fill, totals

    if not args.ledger:
        options = (("--minutes", args.minutes), ("--page", args.page), ("--audit", args.audit))
        given = next((o for o, v in options if v is not None), "--cheapest")
        raise ConfigError(f"{given}: acts only with --ledger DIR")
    if args.audit is not None:
        return _audit(args)
    if args.cheapest:
        raise ConfigError("--cheapest: acts only with --audit N")
    if args.minutes is not None and not args.minutes > 0:
        raise ConfigError(f"--minutes: core-minutes to spend, > 0, got {args.minutes}")
    if args.budget != "full" or args.paper != "all" or args.reuse_stale:
        raise ConfigError(
            "--ledger: the ledger holds the full page of every paper; drop --budget, --paper and --reuse-stale"
        )
    page = Path(args.page or PAGE)
    minutes = float("inf") if args.minutes is None else args.minutes
    table = fill(
        args.ledger,
        minutes,
        args.out,
        args.workers,
        args.data or "",
        only,
        args.executor,
        slurm,
        args.threads,
        page,
        calibrate=True if args.calibrate else None,  # --calibrate: the calibration runs alone
    )
    print(", ".join(f"{n} {s}" for s, n in totals(table).items()))
    return _ledger_counts(args.ledger, page, args.data or "") or exit_status(table)


def _ledger_counts(ledger: str, page: Path, data: str) -> int:
    """Print the page's jobs current at HEAD and what the page at ``page`` says; 1 when it says more are current."""
    from inductionlab.ledger_page import check

    now, said = check(ledger, page, data)
    print(f"jobs:    {now['current']} of {now['jobs']} current at HEAD, {now['stale']} stale, {now['missing']} missing")
    if not said:
        print(f"page:    {page} holds no ledger header")
        return 1
    print(
        f"page:    {page} (rendered at commit {said.get('commit')}) says {said.get('current')} of "
        f"{said.get('jobs')} current, {said.get('stale')} stale, {said.get('missing')} missing"
    )
    return int(int(said.get("current", 0)) > now["current"])


def cmd_ledger_report(args: argparse.Namespace) -> int:
    """``report --ledger DIR``: render the page from the ledger (``--check``: only compare it with HEAD)."""
    from inductionlab.ledger_page import PAGE, render

    if args.dir:
        raise ConfigError(f"report --ledger: give the ledger or a directory, not both (got {args.dir})")
    if not Path(args.ledger).is_dir():
        raise ConfigError(f"--ledger {args.ledger}: no such directory (the committed ledger is results/)")
    page = Path(args.page or PAGE)
    if not args.check:
        from inductionlab.reproduce import totals

        table = render(args.ledger, page, args.data or "")
        print(", ".join(f"{n} {s}" for s, n in totals(table).items()))
        print(f"report:  {page}")
    return _ledger_counts(args.ledger, page, args.data or "")


def _audit(args: argparse.Namespace) -> int:
    """``reproduce --ledger DIR --audit N``: re-make N current entries; 1 when one disagrees, naming it and the key."""
    from inductionlab.reproduce import audit

    if args.audit < 1:
        raise ConfigError(f"--audit: the number of entries to re-make, ≥ 1, got {args.audit}")
    if args.minutes is not None or args.page:
        raise ConfigError("--audit: re-makes entries and writes none; drop --minutes and --page")
    results = audit(args.ledger, args.audit, args.audit_seed, args.cheapest, args.out, args.data or "")
    for job, differ, bitwise in results:
        how = "bit for bit" if bitwise else "within its cross-CPU tolerance (docs/conventions.md#portable-numbers)"
        print(f"{'agrees' if not differ else 'DISAGREES'}: {job}, {how}" + "".join(f"\n  {d}" for d in differ))
    agreed = sum(not d for _, d, _ in results)
    print(f"audit:   {agreed} of {len(results)} entries agree")
    return int(agreed < len(results))
