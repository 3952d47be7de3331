"""The monitor's figure (docs/monitor.md#the-figure): every head's induction score over the measured steps as a
heatmap, and the best head's score against its chance level and the threshold, with the loss on the repeated and
first copies and the phase change marked."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from inductionlab import plots
from inductionlab.monitor.phase import PhaseChange


def _edges(steps: np.ndarray) -> np.ndarray:
    """Cell edges half-way between measured steps (their spacing may vary), for a heatmap over steps."""
    if len(steps) == 1:
        return np.array([steps[0] - 0.5, steps[0] + 0.5])
    mid = (steps[1:] + steps[:-1]) / 2
    return np.concatenate([[2 * steps[0] - mid[0]], mid, [2 * steps[-1] - mid[-1]]])


def _heatmap(ax: Any, heads: pd.DataFrame, phase: PhaseChange, attainable: float) -> None:
    """Rows: heads (layer.head), columns: measured steps; colour: induction score, from 0 to the attainable score
    (the ideal head's on these tokens; a higher measured score raises it)."""
    grid = heads.pivot_table(index=["layer", "head"], columns="step", values="induction", dropna=False)
    steps = grid.columns.to_numpy(float)
    top = max(attainable, float(np.nanmax(grid.to_numpy(), initial=0.0)))
    mesh = ax.pcolormesh(
        _edges(steps), np.arange(len(grid) + 1), grid.to_numpy(float), cmap="viridis", vmin=0, vmax=top
    )
    bar = ax.figure.colorbar(mesh, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label(f"induction score (attainable {attainable:.2f})", labelpad=2)
    labels = [f"L{layer}H{head}" for layer, head in grid.index]
    every = max(1, len(labels) // 16)  # at most ~16 labels on the head axis
    ax.set_yticks(np.arange(len(labels))[::every] + 0.5, labels[::every], fontsize=7)
    ax.invert_yaxis()
    if math.isfinite(phase.step):
        ax.axvline(phase.step, color="w", ls="--", lw=1)
    ax.set(xlabel="training step", ylabel="head (layer, head)", title="induction score of every head")


def _best(
    ax: Any, heads: pd.DataFrame, steps: pd.DataFrame, phase: PhaseChange, chance: dict, threshold: float, top: float
):
    """The best head's induction score, its chance level, the attainable score ``top`` and the threshold; the losses
    on a twin axis."""
    lines = []
    if phase.head is not None:
        layer, head = phase.head
        curve = heads[(heads["layer"] == layer) & (heads["head"] == head)].sort_values("step")
        lines += ax.plot(curve.step, curve.induction, color="C3", lw=2, label=f"induction, L{layer}H{head} (best)")
    level = chance["induction"] + threshold * (top - chance["induction"])  # the relative threshold on this scale
    lines.append(
        ax.axhline(level, color="C3", ls="--", lw=0.8, label=f"threshold {level:.3f} (relative {threshold:g})")
    )
    lines.append(ax.axhline(chance["induction"], color="0.3", ls=":", lw=1, label=f"chance {chance['induction']:.3f}"))
    lines.append(ax.axhline(top, color="0.3", ls="-", lw=0.8, alpha=0.6, label=f"attainable {top:.3f}"))
    if math.isfinite(phase.step):
        lines.append(ax.axvline(phase.step, color="k", ls="--", lw=1, label=f"phase change, step {phase.step:.0f}"))
        lines.append(ax.axvspan(phase.rise_start, phase.rise_end, color="0.5", alpha=0.15, lw=0, label="fitted rise"))
    ax.set(xlabel="training step", ylabel="induction score", ylim=(0, max(1.1 * top, ax.get_ylim()[1])))
    twin = ax.twinx()
    ordered = steps.sort_values("step")
    lines += twin.plot(ordered.step, ordered.loss_repeated, color="C0", lw=1.2, label="loss, repeated copy (right)")
    lines += twin.plot(
        ordered.step, ordered.loss_first, color="C0", lw=1, ls="-.", alpha=0.7, label="loss, first copy (right)"
    )
    if math.isfinite(phase.loss_drop_step):
        lines.append(
            twin.axvline(
                phase.loss_drop_step, color="C0", ls=":", lw=1, label=f"loss drop, step {phase.loss_drop_step:.0f}"
            )
        )
    twin.set_ylabel("loss (nats)", color="C0")
    twin.spines["right"].set_visible(True)
    return lines


def _llc(ax: Any, steps: pd.DataFrame, phase: PhaseChange) -> list:
    """The local learning coefficient over the steps (± its spread over chains), the phase change marked: the
    third signal beside the head's score and the loss (docs/monitor.md#the-llc)."""
    ordered = steps.sort_values("step")
    (line,) = ax.plot(ordered.step, ordered.llc, color="C2", lw=1.6, marker=".", label="LLC (SGLD estimate)")
    ax.fill_between(ordered.step, ordered.llc - ordered.llc_std, ordered.llc + ordered.llc_std, color="C2", alpha=0.2)
    if math.isfinite(phase.step):
        ax.axvline(phase.step, color="k", ls="--", lw=1)
    ax.set(xlabel="training step", ylabel="local learning coefficient", title="LLC (Lau et al.; SGLD)")
    return [line]


def plot_monitor(
    heads: pd.DataFrame,
    steps: pd.DataFrame,
    phase: PhaseChange,
    chance: dict[str, float],
    threshold: float,
    path: str | Path | None = None,
    title: str = "",
    attainable: dict[str, float] | None = None,
) -> Any:
    """The monitor's two panels from its tables (``heads``, ``steps``), phase change, chance levels and threshold;
    written to ``path`` (its path returned), or the matplotlib Figure when ``path`` is None.  The legend sits
    under the panels, where it covers no curve.  ``attainable``: the ideal heads' scores (the colour scale and a line
    run to its induction score; 1 when not given)."""
    top = (attainable or {}).get("induction", 1.0)
    with_llc = "llc" in steps.columns and bool(steps["llc"].notna().any())
    fig, axes = plots.subplots(3 if with_llc else 2, width=4.8, height=3.6)
    _heatmap(axes[0], heads, phase, top)
    lines = _best(axes[1], heads, steps, phase, chance, threshold, top)
    axes[1].set_title("best head, chance level and loss")
    if with_llc:
        lines += _llc(axes[2], steps, phase)
    fig.legend(handles=lines, loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    if title:
        fig.suptitle(title)
    return plots.save(fig, Path(path)) if path is not None else fig
