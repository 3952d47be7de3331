"""What the command line reports about a sweep: before it starts, its job count and an estimate of its wall time
(:func:`estimate`); afterwards, for ``inductionlab report SWEEP_DIR``, ``sweep_table.md`` and ``sweep_table.csv``
(mean and standard deviation over seeds of each summary number, one row per grid point) and one figure per grid key
(``sweep_<key>.png``: each headline number against that key, mean ± one standard deviation over seeds, the
other grid keys as colours)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from inductionlab import experiments, plots
from inductionlab.runner import RunDirError
from inductionlab.runs import SWEEP_INFO
from inductionlab.sweep import MANIFEST, load_sweep

SKIP = {"dir", "hash", "seed", "wall_seconds", "config_hash"}
MANY_JOBS = 50  # the command line asks for --yes before it starts more jobs than this


def estimate(name: str, jobs: int, workers: int, preset: str | None = None) -> str:
    """``12 jobs on 2 workers: about 9 min (...)``: jobs ÷ workers × the experiment's ``WALL`` (its default
    preset's time on 2 cores), the basis stated in brackets."""
    wall = experiments.get(name).wall
    head = f"{jobs} job{'s' * (jobs != 1)} on {workers} worker{'s' * (workers != 1)}"
    found = re.search(r"([\d.]+)\s*(s|min|h)\b", wall)
    if found is None:
        return f"{head} (no wall-time estimate: {name} declares no WALL)"
    seconds = math.ceil(jobs / workers) * float(found[1]) * {"s": 1, "min": 60, "h": 3600}[found[2]]
    total = (
        f"{seconds:.0f} s"
        if seconds < 90
        else f"{seconds / 60:.1f} min"
        if seconds < 5400
        else f"{seconds / 3600:.1f} h"
    )
    smaller = f"; --preset {preset} may take less" if preset else ""
    return f"{head}: about {total} ({wall} a job, {name}'s WALL: its default preset on 2 cores{smaller})"


def sweep_info(out: Path) -> dict:
    """{"experiment", "grid": [keys]} of a sweep directory (from sweep.json); one line naming the file if it is
    damaged."""
    path = Path(out) / SWEEP_INFO
    if not path.exists():
        raise FileNotFoundError(f"{out}: no {SWEEP_INFO} — not a sweep directory")
    try:
        info = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RunDirError(f"{path} is not valid JSON ({err}); re-run the sweep into {out} to rewrite it") from None
    known = (
        isinstance(info, dict)
        and isinstance(info.get("experiment"), str)
        and info["experiment"] in experiments.all_experiments()
    )
    grid = info.get("grid") if known else None
    if not (isinstance(grid, list) and all(isinstance(k, str) for k in grid)):
        raise RunDirError(
            f'{path}: expected {{"experiment": a known experiment, "grid": [keys]}}; re-run the sweep into {out} '
            "to rewrite it"
        )
    return info


def is_sweep(out: Path) -> bool:
    return (Path(out) / SWEEP_INFO).exists() and (Path(out) / MANIFEST).exists()


def metrics_of(table: pd.DataFrame, experiment: str, grid: list[str]) -> list[str]:
    """The numbers to report: the experiment's HEADLINE keys present in the table, else its numeric columns."""
    numeric = [
        c
        for c in table.columns
        if c not in SKIP
        and c not in grid
        and pd.api.types.is_numeric_dtype(table[c])
        and not pd.api.types.is_bool_dtype(table[c])
    ]
    headline = [k for k in experiments.get(experiment).headline if k in numeric]
    return headline or numeric[:8]


def write_report(out: Path) -> list[Path]:
    """Write the table and the figures of sweep directory ``out``; returns their paths."""
    out = Path(out)
    info, table = sweep_info(out), load_sweep(out)
    missing = [k for k in info["grid"] if k not in table.columns]
    if missing:
        raise RunDirError(f"{out / SWEEP_INFO}: grid keys {missing} are not columns of sweep.parquet; re-run the sweep")
    grid, metrics = info["grid"], metrics_of(table, info["experiment"], info["grid"])
    summary = (
        table.groupby(grid, dropna=False)[metrics].agg(["mean", "std"])
        if grid
        else table[metrics].agg(["mean", "std"]).T.stack().to_frame().T
    )
    summary.columns = [f"{m} {stat}" for m, stat in summary.columns]
    summary.insert(0, "seeds", table.groupby(grid).seed.count() if grid else len(table))
    summary = summary.reset_index() if grid else summary
    summary.to_csv(out / "sweep_table.csv", index=False)
    (out / "sweep_table.md").write_text(_markdown(summary, info["experiment"]))
    paths = [out / "sweep_table.md", out / "sweep_table.csv"]
    for key in grid:
        paths.append(_figure(table, key, [k for k in grid if k != key], metrics, out, info["experiment"]))
    return paths


def _markdown(summary: pd.DataFrame, experiment: str) -> str:
    cols = list(summary.columns)
    lines = [
        f"# Sweep of {experiment}",
        "",
        "Mean and standard deviation over seeds.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for _, row in summary.iterrows():
        lines.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _figure(table: pd.DataFrame, key: str, others: list[str], metrics: list[str], out: Path, experiment: str) -> Path:
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig, axes = plots.subplots(ncols, nrows, width=4.0, height=3.2)
    numeric = pd.api.types.is_numeric_dtype(table[key])
    levels = sorted(table[key].unique())
    x = np.asarray(levels, dtype=float) if numeric else np.arange(len(levels))
    groups = table.groupby(others) if others else [((), table)]
    colours = plots.plt.cm.viridis(np.linspace(0, 0.85, max(len(groups), 1)))
    for ax, metric in zip(axes, metrics):
        ax.set(xlabel=key, ylabel=metric, title=f"{metric} against {key}")
        if table[metric].isna().all():
            ax.text(0.5, 0.5, "not reached in any run", ha="center", va="center", transform=ax.transAxes)
            continue
        for colour, (label, g) in zip(colours, groups):
            by_seed = g.pivot_table(index="seed", columns=key, values=metric, aggfunc="mean").reindex(columns=levels)
            name = ", ".join(f"{k}={v}" for k, v in zip(others, label if isinstance(label, tuple) else (label,)))
            plots.seed_band(ax, x, by_seed.to_numpy(), colour, name or None, marker="o")
        if not numeric:
            ax.set_xticks(x, [str(v) for v in levels])
        if others:
            ax.legend(fontsize=7)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle(f"{experiment}: mean ± 1 s.d. over seeds (seeds faint)")
    return plots.save(fig, out / f"sweep_{key.replace('.', '_')}.png")
