"""The monitor after the fact (docs/monitor.md#the-watch-command): the ``checkpoint-STEP`` folders a HuggingFace
``Trainer`` saved in its output directory, each loaded with ``attn_implementation="eager"`` and measured by one
:class:`~inductionlab.monitor.core.Monitor` in step order, give the same tables and phase change as a monitor that
ran during training (docs/monitor.md#phase-detection), written beside the checkpoints with a figure of every head's
induction score against the step.

``transformers`` is imported only when a directory is watched."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np

from inductionlab import plots
from inductionlab.config import ConfigError
from inductionlab.monitor.core import Monitor, MonitorConfig, PhaseChange
from inductionlab.runs import write_parquet

CHECKPOINT = re.compile(r"checkpoint-(\d+)")
FILES = ("watch_heads.parquet", "watch_steps.parquet", "watch.png")


def checkpoints(directory: str | Path) -> list[tuple[int, Path]]:
    """The ``checkpoint-STEP`` folders of a Trainer output directory as (step, folder), by step; the step is the
    ``global_step`` of the folder's ``trainer_state.json`` when it has one, else the number in its name."""
    found = []
    for folder in Path(directory).iterdir() if Path(directory).is_dir() else ():
        match = CHECKPOINT.fullmatch(folder.name)
        if match and folder.is_dir():
            state = folder / "trainer_state.json"
            step = json.loads(state.read_text())["global_step"] if state.is_file() else int(match[1])
            found.append((int(step), folder))
    return sorted(found)


def watch(directory: str | Path, config: MonitorConfig = MonitorConfig(), every: int = 1) -> tuple[Monitor, list[Path]]:
    """Measure the checkpoints of the Trainer output ``directory`` whose step is a multiple of ``every`` (the last
    one always), in step order; write ``watch_heads.parquet``, ``watch_steps.parquet`` and ``watch.png`` there.
    Returns the monitor (its :meth:`~Monitor.phase` is the phase change) and the paths written.  A directory
    without checkpoints is a :class:`ConfigError`."""
    directory = Path(directory)
    found = checkpoints(directory)
    if not found:
        raise ConfigError(
            f"watch: no checkpoint-* folders in {directory}; give the output_dir of a transformers Trainer that saved "
            "checkpoints (save_strategy='steps')"
        )
    if every < 1:
        raise ConfigError(f"--every: must be ≥ 1, got {every}")
    chosen = [(step, folder) for step, folder in found[:-1] if step % every == 0] + found[-1:]
    import transformers

    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # "Loading weights" for every checkpoint
    try:
        models = (transformers.AutoModelForCausalLM.from_pretrained(f, attn_implementation="eager") for _, f in chosen)
        first = next(models)
        monitor = Monitor(first, _fitted(config, first, [s for s, _ in chosen], every))
        for (step, _), model in zip(chosen, itertools.chain([first], models)):
            monitor.measure(step, model)
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    paths = [directory / name for name in FILES]
    write_parquet(paths[0], monitor.heads)
    write_parquet(paths[1], monitor.steps)
    plot_watch(monitor.heads, monitor.steps, monitor.phase(), paths[2])
    return monitor, paths


def _fitted(config: MonitorConfig, model, steps: list[int], every: int) -> MonitorConfig:
    """``config`` with ``every`` = the checkpoints' spacing ("coincides" allows two measurement intervals) and the
    copy ``period`` shortened to fit a model with fewer positions than ``period · repeats``."""
    spacing = int(np.diff(steps).min()) if len(steps) > 1 else every
    n_ctx = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    period = min(config.period, n_ctx // config.repeats) if n_ctx else config.period
    return dataclasses.replace(config, every=max(spacing, 1), period=period)


def plot_watch(heads, steps, phase: PhaseChange, path: Path) -> Path:
    """Each head's induction score against the step (the best head bold), the phase step and the loss drop marked,
    and the loss on the repeated tokens on a twin axis."""
    fig, (ax,) = plots.subplots(1, width=5.6, height=3.6)
    for (layer, head), curve in heads.groupby(["layer", "head"]):
        best = phase.head == (layer, head)
        ax.plot(
            curve.step,
            curve.induction,
            lw=2.4 if best else 0.9,
            alpha=1.0 if best else 0.6,
            label=f"layer {layer} head {head}" + (" (best)" if best else ""),
            zorder=3 if best else 2,
        )
    if math.isfinite(phase.step):
        ax.axvline(phase.step, color="k", ls="--", lw=1, label=f"phase step {phase.step:.0f}")
    if math.isfinite(phase.loss_drop_step):
        ax.axvline(phase.loss_drop_step, color="grey", ls=":", lw=1, label=f"loss drop {phase.loss_drop_step:.0f}")
    ax.set(xlabel="training step", ylabel="induction score", title="induction heads across checkpoints")
    twin = ax.twinx()
    twin.plot(steps.step, steps.loss_repeated, color="0.5", lw=1, ls="-.", label="loss on repeated tokens (right)")
    twin.set_ylabel("loss on repeated tokens (nats)", color="0.4")
    lines, more = ax.get_legend_handles_labels(), twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="best")
    return plots.save(fig, path)


def phase_line(phase: PhaseChange) -> str:
    """One line for the terminal, e.g. ``phase change: layer 1 head 0 at step 340 (induction score 0.71);
    repeated-token loss drop at step 330: coincides``."""
    if phase.head is None:
        return "phase change: nothing measured"
    layer, head = phase.head
    drop = f"at step {phase.loss_drop_step:.0f}" if math.isfinite(phase.loss_drop_step) else "none"
    verdict = "coincides" if phase.coincides else "does not coincide"
    if not math.isfinite(phase.step):
        return (
            f"phase change: none (best head: layer {layer} head {head}, induction score {phase.score:.2f}); "
            f"repeated-token loss drop {drop}"
        )
    return (
        f"phase change: layer {layer} head {head} at step {phase.step:.0f} (induction score {phase.score:.2f}); "
        f"repeated-token loss drop {drop}: {verdict}"
    )
