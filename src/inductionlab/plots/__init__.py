"""Matplotlib (Agg) helpers shared by the experiments' figures.

Every figure is written by :func:`save`, which first moves each legend that covers a curve of its axes: to the
free place matplotlib's ``loc="best"`` finds, else outside the axes, on the right (:func:`uncover_legends`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from inductionlab.runs import atomic_write  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

PHASE_COLORS = ("#fdd9b5", "#e6e6e6", "#c7e9c0", "#d6e2f5")
PHASE_LABELS = ("I: partial learning", "II: plateau", "III: emergence", "IV: convergence")
CURVE_COLORS = {
    "loss": "black",
    "loss_G4": "#d95f02",
    "loss_IH2": "#1b9e77",
    "p": "#7570b3",
    "w_V1": "#d95f02",
    "w_V2": "#1b9e77",
    "w_KQ": "#e7298a",
    "p_tilde": "#666666",
}


STYLE: dict[RcKeyType, object] = {
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # math text in STIX sans: it has every symbol the labels use (\mathcal L, \ell), where DejaVu's math set
    # would substitute them from STIX and log "Substituting symbol L from STIXNonUnicode" for each
    "mathtext.fontset": "stixsans",
}


def subplots(ncols: int, nrows: int = 1, width: float = 4.2, height: float = 3.4):
    """A figure of ``nrows`` × ``ncols`` panels (a flat array of axes) in the house :data:`STYLE`."""
    plt.rcParams.update(STYLE)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, layout="constrained")
    return fig, axes.ravel()


def num(value) -> float:
    """A summary number read back from JSON (null → NaN)."""
    return math.nan if value is None else float(value)


def phase_spans(times: dict, t_end: float) -> list[tuple[float, float]]:
    """[0, T_I], [T_I, T_II], [T_II, T_III], [T_III, end]; a boundary not reached is clipped to the end,
    and T_II earlier than T_I (the early IH-loss dip, docs/conventions.md#wang-5-5) is moved up to T_I."""

    def clip(v):
        return t_end if v is None or (isinstance(v, float) and not math.isfinite(v)) else min(float(v), t_end)

    t_i = clip(times.get("T_I"))
    t_ii = max(clip(times.get("T_II")), t_i)
    t_iii = max(clip(times.get("T_III")), t_ii)
    return [(0.0, t_i), (t_i, t_ii), (t_ii, t_iii), (t_iii, t_end)]


def shade_phases(ax, spans: list[tuple[float, float]], labels: bool = False) -> None:
    for (lo, hi), color, label in zip(spans, PHASE_COLORS, PHASE_LABELS):
        if hi > lo:
            ax.axvspan(lo, hi, color=color, alpha=0.7, lw=0, label=label if labels else None, zorder=0)


DPI = 130  # every figure is written at this resolution


def save(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` atomically (a failure names the file: :class:`inductionlab.runs.WriteError`), its
    legends moved off the curves (:func:`uncover_legends`).  A PNG is checked on the layout of its own drawing and
    written again only when a legend moved, so that a figure whose legends cover nothing is drawn once."""
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"

    def write() -> None:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi="figure", format=fmt))

    try:
        fig.set_dpi(DPI)
        if fmt != "png":
            uncover_legends(fig)
            write()
            return path
        write()  # drawn on the Agg canvas: the legends' places are known
        for move in ("best", "outside"):
            covering = _covering(fig)
            if not covering:
                break
            _place(covering, move)
            write()
    finally:
        plt.close(fig)
    return path


def figure_legend(fig, handles: list, ncols: int = 5) -> None:
    """One legend for the whole figure, below its panels (outside every axes: it covers nothing)."""
    if handles:
        fig.legend(
            handles=handles, loc="outside lower center", ncols=min(ncols, len(handles)), fontsize=7, frameon=False
        )


def covers(ax, legend, renderer) -> bool:
    """Whether ``legend``, as last drawn, lies over a curve of ``ax``: a segment of a visible line (or a marker of a
    line without segments) or a scatter point inside the part of the legend's box that is over the axes."""
    from matplotlib.collections import PathCollection
    from matplotlib.transforms import Bbox

    box = Bbox.intersection(legend.get_window_extent(renderer), ax.bbox)
    if box is None or box.width <= 0 or box.height <= 0:
        return False  # outside the axes

    def inside(points) -> bool:
        return len(points) > 0 and box.count_contains(np.asarray(points)) > 0  # non-finite points are not counted

    for line in ax.get_lines():
        if not line.get_visible() or not len(line.get_xydata()):
            continue
        path = line.get_transform().transform_path(line.get_path())
        if line.get_linestyle() in ("None", "", " ") and inside(path.vertices):
            return True
        if line.get_linestyle() not in ("None", "", " ") and path.intersects_bbox(box, filled=False):
            return True
    return any(
        inside(c.get_offset_transform().transform(c.get_offsets()))
        for c in ax.collections
        if isinstance(c, PathCollection) and c.get_visible()
    )


def _covering(fig) -> list:
    """(axes, legend) pairs whose legend covers a curve (:func:`covers`) in the figure's last drawing."""
    renderer = fig.canvas.get_renderer()
    return [(ax, leg) for ax in fig.axes if (leg := ax.get_legend()) is not None and covers(ax, leg, renderer)]


def _place(legends: list, move: str) -> None:
    for ax, leg in legends:
        if move == "best":
            leg.set_loc("best")
        else:
            leg.set_loc("upper left")
            leg.set_bbox_to_anchor((1.02, 1.0), transform=ax.transAxes)


def uncover_legends(fig) -> None:
    """Move each axes' legend that covers a curve (:func:`covers`): first to ``loc="best"`` (the least covered of
    matplotlib's nine places), and if that still covers one, outside the axes, to the right of its top corner."""
    for move in ("best", "outside"):
        fig.draw_without_rendering()  # lays the figure out and places the legends
        covering = _covering(fig)
        if not covering:
            return
        _place(covering, move)


def mark_windows(ax, windows: list | None, x_end: float) -> None:
    """Hatch the intervention windows [start, stop] (stop None: to ``x_end``) on ``ax``, labelled once."""
    for k, (start, stop) in enumerate(windows or []):
        end = x_end if stop is None else min(stop, x_end)
        ax.axvspan(start, end, fill=False, hatch="//", ec="0.4", lw=0, label="intervention" if k == 0 else None)


def seed_band(ax, x, values, color, label: str | None = None, faint: bool = True, marker: str | None = None) -> None:
    """Mean over seeds as a line, a band of ± one standard deviation, and each seed faint; ``values`` is a
    (seeds, len(x)) array-like (NaN allowed)."""
    values = np.asarray(values, dtype=float).reshape(-1, len(x))
    mean = np.nanmean(values, 0)
    ax.plot(x, mean, color=color, lw=1.6, label=label, marker=marker, ms=3)
    if values.shape[0] > 1:
        std = np.nanstd(values, 0)
        ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.18, lw=0)
        if faint:
            for row in values:
                ax.plot(x, row, color=color, lw=0.6, alpha=0.35)


def plain_log_ticks(ax, axis: str = "both") -> None:
    """Log axes labelled with plain numbers (20, 30, …) instead of crowded 2×10¹ 3×10¹ labels."""
    from matplotlib.ticker import LogFormatter

    for name in ("x", "y") if axis == "both" else (axis,):
        a = getattr(ax, f"{name}axis")
        if a.get_scale() == "log":  # plain numbers; minor ticks labelled only where the axis spans under a decade
            a.set_major_formatter(LogFormatter(labelOnlyBase=False))
            a.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))
