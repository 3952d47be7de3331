"""The page's cost as filled: core-minutes of the committed ledger's current entries per experiment and CPU kind (judged
main run, data draws, controls, calibration runs), against what ``benchmarks/page_cost.py`` predicts for the judged
jobs from the same main runs.  Prints one markdown row per experiment with a current main entry, the largest first,
then the totals and the jobs still missing or stale.

Run: ``python benchmarks/ledger_cost.py [results] [--data WIKITEXT]``.  Numbers in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import pandas as pd
from page_cost import predict  # benchmarks/ beside this file

from inductionlab.ledger_page import planned
from inductionlab.store.ledger import Ledger


def _role(job: str) -> str:
    if ".calibration" in job:
        return "calibration"
    return "controls" if "@" in job else ("draws" if ".draw-" in job else "main")


def filled(root: Path, data: str = "") -> tuple[pd.DataFrame, collections.Counter]:
    """Per (experiment, CPU kind): the current entries' core-minutes by role and their count; and the planned jobs'
    states (current / stale / missing) over the page."""
    plan = planned(data, Path("page"))
    statuses = Ledger(root).status(plan)
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for (experiment, job, _), status in zip(plan, statuses, strict=True):
        if status.state != "current" or status.entry is None:
            continue
        kind = str(status.entry.get("cpu", {}).get("kind", "unknown"))
        row = rows.setdefault(
            (experiment, kind), dict.fromkeys(("main", "draws", "controls", "calibration", "jobs"), 0.0)
        )
        row[_role(job)] += float(status.entry.get("core_minutes", 0.0))
        row["jobs"] += 1
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index = pd.MultiIndex.from_tuples(df.index, names=["experiment", "cpu"])
    return df, collections.Counter(s.state for s in statuses)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ledger", nargs="?", type=Path, default=Path("results"), help="the ledger folder (results/)")
    ap.add_argument("--data", default="", help="the WikiText-2 folder (the text experiments' jobs are planned without)")
    args = ap.parse_args()
    df, states = filled(args.ledger, args.data)
    mains = df.groupby(level="experiment")["main"].sum()
    mains = mains[mains > 0]
    predicted = predict(mains.to_dict(), args.data, tuple(mains.index))["sum"]
    print("| experiment | CPU | main | draws | controls | calibration | judged, filled | page_cost.py | jobs |")
    print("|---|---|---|---|---|---|---|---|---|")
    df["judged"] = df[["main", "draws", "controls"]].sum(axis=1)
    for (name, kind), r in df.sort_values("judged", ascending=False).iterrows():
        guess = f"{predicted[name]:.1f}" if name in predicted else "—"
        print(
            f"| `{name}` | {kind} | {r['main']:.1f} | {r['draws']:.1f} | {r['controls']:.1f} | {r['calibration']:.1f} "
            f"| {r['judged']:.1f} | {guess} | {int(r['jobs'])} |"
        )
    total = df.sum(numeric_only=True)
    print(
        f"\ncurrent entries: {int(total['jobs'])} ({total['judged']:.0f} judged core-minutes, {total['calibration']:.0f} "
        f"calibration); page_cost.py predicts {predicted.sum():.0f} judged core-minutes for the experiments with a "
        f"main entry; jobs current {states['current']}, stale {states['stale']}, missing {states['missing']}"
    )


if __name__ == "__main__":
    main()
