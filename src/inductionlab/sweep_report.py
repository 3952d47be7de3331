"""What the command line reports about a sweep: before it starts, its job count and an estimate of its wall time
(:func:`estimate`); afterwards, for ``inductionlab report SWEEP_DIR``, ``sweep_table.md`` and ``sweep_table.csv``
(mean and standard deviation over seeds of each summary number, one row per grid point) and one figure per grid key
(``sweep_<key>.png``: each headline number against that key, mean ± one standard deviation over seeds, the
other grid keys as colours, axes with units).  A grid key or a number that takes one value across the sweep gets no
figure or panel of its own: the table's caption and the figures' subtitle name it with its value.  Where the
experiment declares a power law for a grid key and a number (``Experiment.laws``, :mod:`inductionlab.theory.laws`,
e.g. the plateau of Wang et al. Thm 5.5 against L), its panel is log-log and overlays the law, scaled by a fitted constant, and a least-squares fit with its exponent ± standard
error; ``sweep_table.md`` lists each law's exponent beside the fitted one, and ``sweep_laws.csv`` holds them."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from inductionlab import experiments, plots
from inductionlab.analysis.scaling import law_constant, power_law_fit
from inductionlab.config import to_dict
from inductionlab.jobs import MANIFEST
from inductionlab.runner import RunDirError
from inductionlab.runs import SWEEP_INFO, atomic_write, read_json, write_text
from inductionlab.sweep import flat_config, load_sweep
from inductionlab.theory.laws import Law, laws_for

SKIP = {
    "dir",
    "hash",
    "seed",
    "wall_seconds",
    "profile",
    "config_hash",
    "threads",
    "threads_from",
    "code",
}  # bookkeeping
MANY_JOBS = 50  # the command line asks for --yes before it starts more jobs than this


def estimate(name: str, jobs: int, workers: int, preset: str | None = None) -> str:
    """``12 jobs on 2 workers: about 9 min (...)``: jobs ÷ workers × the experiment's ``wall`` field (its default
    preset's time on 2 cores), the basis stated in brackets."""
    wall = experiments.get(name).wall
    head = f"{jobs} job{'s' * (jobs != 1)} on {workers} worker{'s' * (workers != 1)}"
    found = re.search(r"([\d.]+)\s*(s|min|h)\b", wall)
    if found is None:
        return (
            f"{head} (no wall-time estimate: {name}'s wall field {f'gives no time: {wall!r}' if wall else 'is empty'})"
        )
    seconds = math.ceil(jobs / workers) * float(found[1]) * {"s": 1, "min": 60, "h": 3600}[found[2]]
    total = (
        f"{seconds:.0f} s"
        if seconds < 90
        else f"{seconds / 60:.1f} min"
        if seconds < 5400
        else f"{seconds / 3600:.1f} h"
    )
    smaller = f"; --preset {preset} may take less" if preset else ""
    return f"{head}: about {total} ({wall} a job, {name}'s wall: its default preset on 2 cores{smaller})"


def sweep_info(out: Path) -> dict:
    """{"experiment", "grid": [keys]} of a sweep directory (from sweep.json); one line naming the file if it is
    damaged."""
    path = Path(out) / SWEEP_INFO
    if not path.exists():
        raise FileNotFoundError(f"{out}: no {SWEEP_INFO} — not a sweep directory")
    info = read_json(path, "a sweep's record", fix=f"re-run the sweep into {out} to rewrite it")
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
    """The numbers to report: the experiment's headline keys present in the table, else its numeric summary columns
    (not its config values)."""
    config = flat_config(to_dict(experiments.get(experiment).config))
    numeric = [
        c
        for c in table.columns
        if c.split(".")[0] not in SKIP
        and c not in grid
        and c not in config
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
    summary.columns = [f"{m} {stat}" for m, stat in summary.columns]  # every number, a constant one too
    summary.insert(0, "seeds", table.groupby(grid).seed.count() if grid else len(table))
    summary = summary.reset_index() if grid else summary
    atomic_write(out / "sweep_table.csv", lambda tmp: summary.to_csv(tmp, index=False))
    fixed = constants(table, grid + metrics)
    varied, shown = [k for k in grid if k not in fixed], [m for m in metrics if m not in fixed]
    fits = law_fits(table, info["experiment"], varied, shown)
    write_text(out / "sweep_table.md", _markdown(summary, info["experiment"], fixed) + _laws_markdown(fits))
    paths = [out / "sweep_table.md", out / "sweep_table.csv"]
    if len(fits):
        atomic_write(out / "sweep_laws.csv", lambda tmp: fits.to_csv(tmp, index=False))
        paths.append(out / "sweep_laws.csv")
    for key in varied if shown else []:
        others = [k for k in varied if k != key]
        paths.append(_figure(table, key, others, shown, out, info["experiment"], fixed))
    return paths


def constants(table: pd.DataFrame, columns: list[str]) -> dict[str, object]:
    """The columns that take one value in every row of ``table`` (NaN: a number no run reached), with that value."""
    return {c: table[c].iloc[0] for c in columns if len(table) and table[c].nunique(dropna=False) == 1}


def _constant_note(fixed: dict[str, object]) -> str:
    """``constant across the sweep: task.L = 8, T_50 not reached``, or "" when nothing is constant."""
    items = [f"{k} not reached" if _missing(v) else f"{k} = {_cell('', v)}" for k, v in fixed.items()]
    return f"constant across the sweep: {', '.join(items)}" if items else ""


def _missing(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _markdown(summary: pd.DataFrame, experiment: str, fixed: dict[str, object]) -> str:
    cols = list(summary.columns)
    note = _constant_note(fixed)
    lines = [
        f"# Sweep of {experiment}",
        "",
        "Mean and standard deviation over seeds; a mean that reads *not reached*: no seed got there at this size.",
        *([f"{note[0].upper()}{note[1:]}; the figures have no panel for these."] if note else []),
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for _, row in summary.iterrows():
        lines.append("| " + " | ".join(_cell(col, v) for col, v in row.items()) + " |")
    return "\n".join(lines) + "\n"


def _laws_markdown(fits: pd.DataFrame) -> str:
    if not len(fits):
        return ""
    lines = ["", "## Scaling laws", "", "The theory's exponent beside the log-log least-squares fit over the runs.", ""]
    lines += ["| grid key | number | law | fitted exponent | runs | source |", "|---|---|---|---|---|---|"]
    for r in fits.itertuples():
        fitted = f"{r.fitted:.3g} ± {r.stderr:.2g}" if math.isfinite(r.stderr) else f"{r.fitted:.3g} (no s.e.)"
        fitted = fitted if math.isfinite(r.fitted) else "needs two values"
        lines.append(f"| {r.key} | {r.metric} | ∝ {r.law} | {fitted} | {r.runs} | {r.source} |")
    return "\n".join(lines) + "\n"


def _cell(column: str, value) -> str:
    """A table cell: a mean no seed reached reads "not reached", a spread of one seed "–"."""
    if _missing(value):
        return "not reached" if column.endswith(" mean") else "–"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


UNITS = (  # (pattern on a key's last dotted part, unit) for the axis labels; the first match wins
    (r"T_\w+", "t = lr × step, gradient-flow time"),
    (r"t_\w+", "training steps"),
    (r"L", "tokens"),
    (r"\w*steps", "steps"),
    (r"lr", "learning rate"),
    (r"batch_size", "sequences"),
)


def axis_label(name: str, experiment: str) -> str:
    """``name (unit)``: the unit from :data:`UNITS`, or the experiment's declared ``loss_unit`` for a loss; the bare
    name when nothing says."""
    last = name.rsplit(".", 1)[-1]
    unit = next((u for pattern, u in UNITS if re.fullmatch(pattern, last)), "")
    if not unit and "loss" in last:
        unit = experiments.get(experiment).loss_unit
    return f"{name} ({unit})" if unit else name


def _figure(
    table: pd.DataFrame, key: str, others: list[str], metrics: list[str], out: Path, experiment: str, fixed: dict
) -> Path:
    """Each metric against ``key``, one colour per combination of the ``others``; where the experiment declares a law
    for (key, metric) (``Experiment.laws``, :mod:`inductionlab.theory.laws`), log-log axes with the law (dashed) and the fitted power law (dotted).  ``fixed``:
    the grid keys and numbers constant across the sweep, named in the subtitle (:func:`constants`)."""
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig, axes = plots.subplots(ncols, nrows, width=4.4, height=3.4)
    numeric = pd.api.types.is_numeric_dtype(table[key])
    levels = sorted(table[key].unique())
    x = np.asarray(levels, dtype=float) if numeric else np.arange(len(levels))
    groups = list(table.groupby(others)) if others else [((), table)]
    colours = plots.plt.cm.viridis(np.linspace(0, 0.85, max(len(groups), 1)))
    laws = laws_for(experiments.get(experiment).laws, key) if numeric else {}
    for ax, metric in zip(axes, metrics):
        ax.set(
            xlabel=axis_label(key, experiment), ylabel=axis_label(metric, experiment), title=f"{metric} against {key}"
        )
        for colour, (label, g) in zip(colours, groups):
            by_seed = g.pivot_table(index="seed", columns=key, values=metric, aggfunc="mean").reindex(columns=levels)
            name = ", ".join(f"{k}={v}" for k, v in zip(others, label if isinstance(label, tuple) else (label,)))
            plots.seed_band(ax, x, by_seed.to_numpy(), colour, name or None, marker="o")
        if metric in laws:
            _overlay(ax, table, key, metric, laws[metric], others, colours)
        missing = int(table[metric].isna().sum())
        if missing:
            ax.text(0.98, 0.02, f"not reached in {missing} of {len(table)} runs", **NOTE, transform=ax.transAxes)
        if not numeric or (len(levels) <= 8 and metric not in laws):  # a tick at each value of the grid
            ax.set_xticks(x, [f"{v:g}" if numeric else str(v) for v in levels])
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    drawn = any(m in laws for m in metrics)
    overlay = "; dashed: the theory's law (constant fitted), dotted: log-log least-squares fit" if drawn else ""
    lines = [f"{experiment}: mean ± 1 s.d. over seeds (seeds faint){overlay}", _constant_note(fixed)]
    fig.suptitle("\n".join(textwrap.fill(t, width=50 * ncols) for t in lines if t))  # about the figure's width
    return plots.save(fig, out / f"sweep_{key.replace('.', '_')}.png")


NOTE = {"ha": "right", "va": "bottom", "fontsize": 7, "color": "#666666"}


def _law_fit(table: pd.DataFrame, key: str, metric: str, law: Law, others: list[str]):
    """u(x) of every run, its group (a combination of the ``others``) and the log-log least-squares fit of
    ``metric`` against u(x): one exponent for all groups (:func:`inductionlab.analysis.scaling.power_law_fit`)."""
    u = law.u(table[key].to_numpy(dtype=float))
    group = table.groupby(others).ngroup().to_numpy() if others else np.zeros(len(table), dtype=int)
    return u, group, power_law_fit(u, table[metric].to_numpy(dtype=float), group)


def law_fits(table: pd.DataFrame, experiment: str, varied: list[str], metrics: list[str]) -> pd.DataFrame:
    """One row per law the experiment declares (``Experiment.laws``) for a varied numeric grid key and a shown
    metric: the law's exponent beside the exponent fitted on the runs (± its standard error), the other varied keys
    as groups, as the figures draw them."""
    rows = []
    for key in [k for k in varied if pd.api.types.is_numeric_dtype(table[k])]:
        for metric, law in laws_for(experiments.get(experiment).laws, key).items():
            if metric in metrics:
                fit = _law_fit(table, key, metric, law, [k for k in varied if k != key])[2]
                rows.append(
                    {
                        "key": key,
                        "metric": metric,
                        "law": law.formula().split(" ∝ ")[1],
                        "exponent": law.exponent,
                        "fitted": fit.exponent,
                        "stderr": fit.stderr,
                        "runs": fit.n,
                        "source": law.source,
                    }
                )
    return pd.DataFrame(rows, columns=["key", "metric", "law", "exponent", "fitted", "stderr", "runs", "source"])


def _overlay(ax, table: pd.DataFrame, key: str, metric: str, law: Law, others: list[str], colours) -> None:
    """The law C_g · u(x)^exponent (dashed, C_g fitted per colour g with the exponent fixed) and the least-squares
    power law exp(a_g) · u(x)^b (dotted, one b for all colours), on log-log axes; b ± its standard error in the
    legend (:func:`inductionlab.analysis.scaling.power_law_fit`)."""
    x, y = table[key].to_numpy(dtype=float), table[metric].to_numpy(dtype=float)
    u, group, fit = _law_fit(table, key, metric, law, others)
    if not np.isfinite(fit.exponent):
        where = {**NOTE, "ha": "left", "va": "top"}
        ax.text(
            0.02, 0.98, f"law of {law.source}:\nneeds {metric} at two values of {key}", **where, transform=ax.transAxes
        )
        return
    ax.set_yscale("log")
    plots.plain_log_ticks(ax, "y")
    if (x > 0).all():
        levels = np.unique(x)
        ax.set_xscale("log")
        ax.set_xticks(levels, [f"{v:g}" for v in levels])
        ax.set_xticks([], minor=True)
    dense = np.geomspace(np.nanmin(x[np.isfinite(u)]), np.nanmax(x[np.isfinite(u)]), 60)
    power = f"({law.variable})" if "(" in law.variable or "+" in law.variable else law.variable
    se = f"± {fit.stderr:.2g} (s.e.)" if np.isfinite(fit.stderr) else "(no s.e.: too few runs)"
    labels = {
        "law": f"law ∝ {power}$^{{{law.exponent:g}}}$ ({law.source})",
        "fit": f"fit: exponent {fit.exponent:.2f} {se}, {fit.n} runs",
    }
    for g, colour in enumerate(colours):
        if g not in fit.intercepts:
            continue
        c = law_constant(u[group == g], y[group == g], law.exponent)
        law_curve = np.exp(c) * law.u(dense) ** law.exponent
        ax.plot(dense, law_curve, "--", color=colour, lw=1.2, alpha=0.7, label=labels.pop("law", None))
        fitted = np.exp(fit.intercepts[g]) * law.u(dense) ** fit.exponent
        ax.plot(dense, fitted, ":", color=colour, lw=1.4, label=labels.pop("fit", None))
