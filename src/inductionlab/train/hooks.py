"""Ready-made hooks for :func:`inductionlab.train.loop.run` (the interface: :class:`~inductionlab.train.loop.Hook`).

* :class:`Logger`: a hook that records each evaluation as one row of means over runs, through :meth:`Logger.log`
  (the loop calls it at every evaluation; :class:`~inductionlab.monitor.Monitor` at every measurement);
* :class:`JsonlLogger` appends each evaluation (the mean over runs of every numeric column) to a JSON-lines file;
* :class:`FreezeColumns` keeps chosen parameter columns at their values during a step range (an intervention);
* :class:`TensorBoardLogger` and :class:`WandbLogger` send each evaluation (the mean over runs of every numeric
  column, tagged ``stage/column``) to TensorBoard (the ``tensorboard`` package) or Weights & Biases (``wandb``;
  offline where ``WANDB_MODE=offline``) — the ``log`` extra (:func:`check_loggers`, docs/conventions.md#extras).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from inductionlab.extras import require
from inductionlab.train.loop import Hook, LoopState

TENSORBOARD, WANDB = "TensorBoardLogger (--log.tensorboard)", "WandbLogger (--log.wandb)"


def check_loggers(tensorboard: bool = False, wandb: bool = False) -> None:
    """Refuse, before any work, a TensorBoard or W&B logger whose package is not installed
    (:class:`~inductionlab.extras.MissingExtra`, the ``log`` extra)."""
    if tensorboard:
        require("tensorboard", TENSORBOARD)
        require("torch.utils.tensorboard", TENSORBOARD)
    if wandb:
        require("wandb", WANDB)


def _means(block: dict[str, np.ndarray]) -> tuple[int, dict[str, float]]:
    """(step, {column: mean over runs}) for the numeric columns of one evaluation block."""
    step = int(np.asarray(block["step"])[0])
    out = {}
    for key, values in block.items():
        arr = np.asarray(values)
        if key not in ("step", "run") and arr.dtype.kind in "fiu":
            out[key] = float(arr.mean())
    return step, out


class Logger(Hook):
    """A hook that records each evaluation as one row: :meth:`log` gets the step within the stage, the stage and
    the mean over runs of every numeric column.  Subclass and implement :meth:`log`."""

    def on_evaluate(self, state: LoopState, block: dict[str, np.ndarray]) -> None:
        step, row = _means(block)
        self.log(step, state.stage.name, row, state.stage_index)

    def log(self, step: int, stage: str, row: dict[str, float], stage_index: int = 0) -> None:
        """Record ``row`` (column → mean over runs) of ``step`` within the stage named ``stage``, the
        ``stage_index``-th of its run."""
        raise NotImplementedError


class JsonlLogger(Logger):
    """One line per evaluation: {"stage", "step", column: mean over runs, ...} for the numeric columns.  A resumed
    run appends after the lines written before its checkpoint (lines written after it are written again)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def log(self, step: int, stage: str, row: dict[str, float], stage_index: int = 0) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"stage": stage, "step": step, **row}) + "\n")


class FreezeColumns(Hook):
    """Keep the parameter columns ``columns`` of every run at their values from the start of ``steps`` (a range of
    step indices within the stage ``stage``, or every stage when None): an update made inside the window is undone
    right after it, so the frozen values stay bit for bit.  For steppers whose ``params`` is the live parameter
    matrix: the toy and the autograd family (general transformer, text, high-dimensional toy, Chen model)."""

    def __init__(self, columns: Sequence[int], steps: range = range(0, 2**62), stage: str | None = None):
        self.columns, self.steps, self.stage = list(columns), steps, stage
        self._held: torch.Tensor | None = None

    def _active(self, state: LoopState) -> bool:
        return state.step in self.steps and (self.stage is None or state.stage.name == self.stage)

    def before_step(self, state: LoopState) -> None:
        if self._active(state) and self._held is None:
            self._held = state.params[:, self.columns].clone()

    def after_step(self, state: LoopState) -> None:
        if self._held is not None:
            state.params[:, self.columns] = self._held
        if self._held is not None and state.step + 1 not in self.steps:
            self._held = None

    def state_dict(self) -> dict:
        return {"held": self._held}

    def load_state_dict(self, state: dict) -> None:
        self._held = state["held"]

    def reset(self) -> None:
        self._held = None


class TensorBoardLogger(Logger):
    """Scalars ``stage/column`` (mean over runs) at each evaluation, x axis the step within the stage, written under
    ``log_dir`` (``tensorboard --logdir DIR`` shows them)."""

    def __init__(self, log_dir: str | Path):
        check_loggers(tensorboard=True)
        self.writer = require("torch.utils.tensorboard", TENSORBOARD).SummaryWriter(str(log_dir))

    def log(self, step: int, stage: str, row: dict[str, float], stage_index: int = 0) -> None:
        for column, value in row.items():
            self.writer.add_scalar(f"{stage}/{column}", value, step)
        self.writer.flush()


class WandbLogger(Logger):
    """One Weights & Biases row per evaluation: ``stage/column`` (mean over runs), ``stage`` and ``step``; the run
    is started in ``project`` with ``config`` (offline where ``WANDB_MODE=offline``)."""

    def __init__(self, project: str, config: dict | None = None, name: str | None = None):
        self.run = require("wandb", WANDB).init(project=project, config=config, name=name, reinit="finish_previous")

    def log(self, step: int, stage: str, row: dict[str, float], stage_index: int = 0) -> None:
        self.run.log({**{f"{stage}/{k}": v for k, v in row.items()}, "stage": stage_index, "step_in_stage": step})
