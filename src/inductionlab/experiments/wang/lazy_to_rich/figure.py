"""The figure of ``lazy-to-rich`` and ``lazy-to-rich-boolean`` (Wang et al. Fig. 2, dynamics paper Fig. 1; workshop
Fig. 3): the Stage-II losses and parameters, SGD beside the gradient flows and the literal protocol, the phases
shaded (docs/conventions.md#wang-5-5)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from inductionlab import plots
from inductionlab.runs import Results
from inductionlab.train.toy import layer2_metrics

SYMBOLS = {"loss": r"$\mathcal{L}$", "loss_G4": r"$\mathcal{L}_{G_4}$", "loss_IH2": r"$\mathcal{L}_{IH_2}$", "p": "$p$"}
SYMBOLS |= {"w_V1": "$w_{V1}$", "w_V2": "$w_{V2}$", "w_KQ": "$w_{KQ}$", "p_tilde": r"$\tilde p = p^{(1,1)}$"}


# the line styles, for the figure's legend
LINE_STYLES = {"-": "SGD", "--": "gradient flow, closed form", ":": "gradient flow, exact softmax"}
LINE_STYLES["-."] = "literal protocol (Stage II on the learned layer 1)"


def _curves(ax, table: pd.DataFrame, col: str, color: str) -> None:
    """One curve per run; with several runs the mean over seeds ± one standard deviation, each seed faint."""
    wide = table.pivot_table(index="t", columns="run", values=col)
    if wide.shape[1] == 1:
        ax.plot(wide.index, wide.iloc[:, 0], lw=1.4, color=color)
    else:
        plots.seed_band(ax, wide.index.to_numpy(), wide.to_numpy().T, color)


def _literal_curves(ax, literal: pd.DataFrame | None, cols: tuple[str, ...]) -> None:
    """The literal protocol's Stage II (``literal = true``), mean over runs, dash-dotted beside the default."""
    if literal is None or not len(literal):
        return
    mean = layer2_metrics(literal).groupby("t")[list(cols)].mean()
    for col in cols:
        ax.plot(mean.index, mean[col], "-.", color=plots.CURVE_COLORS[col], lw=0.9, alpha=0.7)


def _log_y(ax, sgd: pd.DataFrame, bottom: float) -> None:
    """A log y axis from ``bottom`` × the least SGD value (GF's closed form reaches 1e-18); symlog where an SGD value
    is ≤ 0 (an intervention may hold a parameter there)."""
    values = sgd.to_numpy(float)
    values = values[np.isfinite(values)]
    positive = values[values > 0]
    if positive.size < values.size:
        ax.set_yscale("symlog", linthresh=float(positive.min()) if positive.size else 1e-3)
    elif positive.size:
        ax.set_yscale("log")
        ax.set_ylim(bottom=float(positive.min()) * bottom)


def _style_handles(ax, results: Results) -> list:
    """The figure legend's entries: the phases (and intervention windows) shaded on ``ax``, the line styles drawn."""
    methods = set(results.tables["gf"].method) if "gf" in results.tables else set()
    drawn = {"-": True, "--": "closed" in methods, ":": "exact" in methods, "-.": "literal" in results.tables}
    lines = [Line2D([], [], color="0.3", ls=ls, lw=1.2, label=label) for ls, label in LINE_STYLES.items() if drawn[ls]]
    return ax.get_legend_handles_labels()[0] + lines


def plot(results: Results, out_dir: Path) -> list[Path]:
    """Three panels on the Stage-II t axis — total loss; L_G4 and L_IH2; p, w_V1, w_V2, w_KQ — on log y axes, where
    w_KQ's exponential growth off σ_init (Thm 5.5 Phase II) is a straight line; GF overlaid (dashed: closed form,
    dotted: exact softmax), the literal protocol dash-dotted (``literal = true``), the four phases shaded; one legend
    for phases and line styles below the panels, one for the colours in each panel; plus Stage I."""
    metrics, s = results.tables["metrics"], results.summary
    st2 = layer2_metrics(metrics)
    gf = results.tables.get("gf")
    fig, axes = plots.subplots(3)
    t_end = float(st2.t.max())
    spans = plots.phase_spans(s, t_end)
    panels = [("loss",), ("loss_G4", "loss_IH2"), ("p", "w_V1", "w_V2", "w_KQ")]
    titles = ["total loss", "partial losses", "layer-2 parameters"]
    ylabels = ["loss (log scale)", "partial loss (log scale)", "parameter value (log scale)"]
    for ax, cols, title, ylabel in zip(axes, panels, titles, ylabels):
        plots.shade_phases(ax, spans, labels=ax is axes[0])
        plots.mark_windows(ax, s.get("intervention_windows_t"), t_end)
        for col in cols:
            _curves(ax, st2, col, plots.CURVE_COLORS[col])
            for method, style in (("closed", "--"), ("exact", ":")):
                g = gf[gf.method == method] if gf is not None else None
                if g is not None and len(g):
                    ax.plot(g.t, g[col], style, color=plots.CURVE_COLORS[col], lw=1.0)
        _literal_curves(ax, results.tables.get("literal"), cols)
        ax.set(title=title, xlabel="t = lr × step (Stage II)", ylabel=ylabel)
        _log_y(ax, st2[list(cols)], bottom=0.1 if ax is not axes[2] else 0.5)
        if len(cols) > 1:  # the colours; the y label names the one curve of the first panel
            ax.legend(handles=[Patch(color=plots.CURVE_COLORS[c], label=SYMBOLS[c]) for c in cols], fontsize=7)
    plots.figure_legend(fig, _style_handles(axes[0], results), ncols=4)
    times = ", ".join(
        f"{k} = {v:.0f}" if math.isfinite(v := plots.num(s.get(k))) else f"{k} not reached"
        for k in ("T_I", "T_II", "T_50", "T_III")
    )
    fig.suptitle(f"Lazy to rich, SGD over {s.get('n_runs', 1)} seed(s): phase times {times}")
    paths = [plots.save(fig, Path(out_dir) / "lazy_to_rich.png")]
    st1 = metrics[metrics.stage == "I"]
    if len(st1):
        fig, (ax,) = plots.subplots(1)
        _curves(ax, st1, "p_tilde", plots.CURVE_COLORS["p_tilde"])
        ax.set(
            title="Stage I: the layer-1 slope\n" + r"($y_s \to x_{s-1}$ needs $\tilde p \gg 1$)",
            xlabel="t = lr × step (Stage I)",
            ylabel=SYMBOLS["p_tilde"],
        )
        paths.append(plots.save(fig, Path(out_dir) / "stage1.png"))
    return paths
