"""Ready-made hooks for :func:`inductionlab.train.loop.run` (the interface: :class:`~inductionlab.train.loop.Hook`).

* :class:`JsonlLogger` appends each evaluation (the mean over runs of every numeric column) to a JSON-lines file;
* :class:`FreezeColumns` keeps chosen parameter columns at their values during a step range (an intervention).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from inductionlab.train.loop import Hook, LoopState


class JsonlLogger(Hook):
    """One line per evaluation: {"stage", "step", column: mean over runs, ...} for the numeric columns.  A resumed
    run appends after the lines written before its checkpoint (lines written after it are written again)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_evaluate(self, state: LoopState, block: dict[str, np.ndarray]) -> None:
        row = {"stage": state.stage.name, "step": int(np.asarray(block["step"])[0])}
        for key, values in block.items():
            arr = np.asarray(values)
            if key not in ("step", "run") and arr.dtype.kind in "fiu":
                row[key] = float(arr.mean())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


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
