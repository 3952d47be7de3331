"""Where the wall time of a reproduce (or any folder of runs) went: one row per run directory, from the ``profile``
each run's summary.json holds (docs/conventions.md#profile), longest first, as a markdown table.

Run: ``python benchmarks/profile_table.py DIR`` (DIR: a reproduce directory; numbers in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

PARTS = ("steps", "data", "eval", "checkpoint", "theory", "plot", "io", "other", "startup")


def table(root: Path) -> pd.DataFrame:
    """One row per finished run under ``root``: its seconds per part and in all (``total``, startup included)."""
    rows = []
    for path in sorted(root.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        parts = summary.get("profile", {})
        row = {"run": path.parent.name, **{p: parts.get(p, 0.0) for p in PARTS}}
        row["total"] = sum(row[p] for p in PARTS)
        rows.append(row)
    return pd.DataFrame(rows).sort_values("total", ascending=False, ignore_index=True)


def markdown(df: pd.DataFrame) -> str:
    """Minutes for the total, then each part as seconds and its share of the total."""
    head = "| run | total (min) | " + " | ".join(PARTS) + " |"
    lines = [head, "|" + "---|" * (len(PARTS) + 2)]
    for r in df.itertuples(index=False):
        row = r._asdict()
        cells = [f"{row[p]:.0f} s ({100 * row[p] / row['total']:.0f} %)" if row[p] >= 0.5 else "—" for p in PARTS]
        lines.append(f"| `{row['run']}` | {row['total'] / 60:.1f} | " + " | ".join(cells) + " |")
    sums = {p: df[p].sum() for p in PARTS}
    total = df["total"].sum()
    lines.append(
        f"| **all {len(df)} runs** | **{total / 60:.1f}** | "
        + " | ".join(f"{sums[p] / 60:.1f} min ({100 * sums[p] / total:.0f} %)" for p in PARTS)
        + " |"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    print(markdown(table(ap.parse_args().dir)))


if __name__ == "__main__":
    main()
