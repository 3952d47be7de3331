"""What ``reproduce --budget full`` from empty would cost on this CPU, predicted from one timed default run per
experiment: a data draw is priced at its main run's core-minutes, a control at its schedule estimate scaled by its
experiment's measured/estimated ratio (docs/conventions.md#controls).  Prints one markdown row per experiment, the
largest first, and the totals.

Run: ``inductionlab run NAME --threads 1 --out DIR/NAME`` for every experiment (two at a time on 2 cores), then
``python benchmarks/page_cost.py DIR [--data WIKITEXT] [--minutes NAME=MIN ...]`` (``--minutes``: an experiment
timed elsewhere).  Numbers in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from inductionlab import experiments, reproduce


def measured_minutes(root: Path) -> dict[str, float]:
    """Core-minutes of each run under ``root`` (its wall time × its threads), by experiment name."""
    out = {}
    for path in sorted(root.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        out[path.parent.name] = summary["wall_seconds"] * summary.get("threads", 1) / 60.0
    return out


def predict(minutes: dict[str, float], data: str = "", only: tuple[str, ...] = ()) -> pd.DataFrame:
    """Core-minutes per experiment of a full page (columns main, draws, controls, sum; and its jobs), from each
    experiment's measured default run ``minutes``; an experiment without one is an error naming it.  ``only``:
    these experiments alone (as ``reproduce --only``)."""
    jobs, _ = reproduce.plan("all", "full", Path("page"), data=data, only=only)
    missing = sorted({j.experiment for j in jobs} - set(minutes))
    if missing:
        raise SystemExit(f"no timed default run of: {', '.join(missing)}")
    rows: dict[str, dict[str, float]] = {}
    for job in jobs:
        row = rows.setdefault(job.experiment, {"main": 0.0, "draws": 0.0, "controls": 0.0, "jobs": 0})
        row["jobs"] += 1
        measured = minutes[job.experiment]
        if "control" in job.overrides:
            control = {c.name: c for c in experiments.get(job.experiment).controls}[job.overrides["control"]]
            estimate = reproduce.expected_minutes(job.experiment, control.preset, control.wall)
            row["controls"] += estimate * measured / reproduce.expected_minutes(job.experiment, None)
        else:
            row["draws" if "draw" in job.overrides else "main"] += measured
    df = pd.DataFrame.from_dict(rows, orient="index")
    df["sum"] = df[["main", "draws", "controls"]].sum(axis=1)
    return df.sort_values("sum", ascending=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="a folder of timed default runs, one per experiment, named as it")
    ap.add_argument("--data", default="", help="the WikiText-2 folder (without it the text experiments are left out)")
    ap.add_argument("--minutes", nargs="*", default=[], help="NAME=MIN: an experiment timed elsewhere")
    args = ap.parse_args()
    minutes = measured_minutes(args.dir)
    for item in args.minutes:
        name, value = item.split("=", 1)
        minutes[name] = float(value)
    df = predict(minutes, args.data)
    print("| experiment | main | draws | controls | sum |\n|---|---|---|---|---|")
    for name, r in df.iterrows():
        print(f"| `{name}` | {r['main']:.1f} | {r['draws']:.1f} | {r['controls']:.1f} | {r['sum']:.1f} |")
    total = df.sum()
    print(
        f"total: {total['sum']:.0f} core-minutes (main {total['main']:.0f}, draws {total['draws']:.0f}, "
        f"controls {total['controls']:.0f}) over {int(total['jobs'])} jobs"
    )


if __name__ == "__main__":
    main()
