"""Matplotlib (Agg) helpers shared by the experiments' figures."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

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


def save(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` atomically (a failure names the file: :class:`inductionlab.runs.WriteError`)."""
    path = Path(path)
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=130, format=path.suffix.lstrip(".") or "png"))
    finally:
        plt.close(fig)
    return path


def mark_windows(ax, windows: list | None, x_end: float) -> None:
    """Hatch the intervention windows [start, stop] (stop None: to ``x_end``) on ``ax``, labelled once."""
    for k, (start, stop) in enumerate(windows or []):
        end = x_end if stop is None else min(stop, x_end)
        ax.axvspan(start, end, fill=False, hatch="//", ec="0.4", lw=0, label="intervention" if k == 0 else None)


def seed_band(ax, x, values, color, label: str | None = None, faint: bool = True, marker: str | None = None) -> None:
    """Mean over seeds as a line, a band of ± one standard deviation, and each seed faint; ``values`` is a
    (seeds, len(x)) array-like (NaN allowed)."""
    import numpy as np

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
