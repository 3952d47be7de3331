"""The one training loop: everything a training run does besides its step.

A trainer family supplies a :class:`Stepper` — its stages, one update, one evaluation, and its state — and
:func:`run` owns the rest (``docs/architecture.md#the-loop``):

* the evaluation schedule of each stage (:func:`eval_steps`: every ``eval_every`` steps, log-spaced points and
  the last step), evaluations that may run in a background thread (a stepper may return a ``Future``);
* the progress bar; the metric rows, tagged with the stage, gathered into one long table;
* checkpoints every ``checkpoint_every`` steps at a step boundary the stepper accepts, and a final one marked
  done, so that resuming a finished run is a no-op; exact resume from the stepper's saved state;
* Ctrl-C: a checkpoint at the next step boundary, then :class:`Interrupted`, which carries the metrics so far;
* NaN/inf: the parameters are checked every ``finite_check_every`` steps and before every evaluation; a
  non-finite value stops the run with :class:`NonFiniteError`, the last good checkpoint kept;
* hooks (:class:`Hook`): called before and after each step, before and at each evaluation and at each checkpoint.

Order within one step k of a stage: finite check (when due) → checkpoint (when due and the stepper is at a
boundary) → hooks' ``before_evaluate`` and the evaluation (when k is on the schedule) → hooks' ``before_step`` → ``stepper.step(k)`` → hooks'
``after_step``.  A checkpoint taken at step k is resumed at step k, before its evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from inductionlab import timing
from inductionlab._runtime import StopFlag
from inductionlab.runs import RunContext, save_checkpoint
from inductionlab.train.checkpoints import (
    CheckpointError as CheckpointError,  # raised here, caught as loop.CheckpointError
)
from inductionlab.train.checkpoints import hook_states, read_checkpoint, restore_hooks

log = logging.getLogger(__name__)


class NonFiniteError(RuntimeError):
    """Parameters or losses became NaN/inf; the last good checkpoint is kept, and ``metrics`` holds the table of
    the evaluations made before the stop (as :func:`run` returns it)."""

    metrics: pd.DataFrame | None = None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM: a checkpoint was written at a step boundary (when one is configured); resume continues
    exactly.  ``metrics`` holds the table of the evaluations made before the stop (as :func:`run` returns it), so
    that a call from Python without a checkpoint loses nothing it measured::

        try:
            theta, metrics = train_autograd(cfg, theta0, loss, sample, evaluate)
        except Interrupted as stop:
            metrics = stop.metrics
    """

    metrics: pd.DataFrame | None = None


def eval_steps(steps: int, every: int, log_points: int) -> np.ndarray:
    """0, every k-th step, ~log_points log-spaced steps, and the last step (sorted, unique)."""
    grid = [np.arange(0, steps + 1, every), np.array([steps])]
    if log_points and steps > 1:
        grid.append(np.unique(np.round(np.geomspace(1, steps, log_points)).astype(int)))
    return np.unique(np.concatenate(grid))


def metrics_frame(blocks: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    """Concatenate metric blocks (dicts of equal-length arrays) into one long table."""
    if not blocks:
        return pd.DataFrame()
    return pd.DataFrame({k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]})


@dataclass(frozen=True)
class Stage:
    """One stage of a run: ``steps`` updates with its own evaluation and checkpoint schedule."""

    name: str
    steps: int
    eval_every: int
    eval_log_points: int = 0
    checkpoint_every: int = 1_000_000_000
    finite_check_every: int = 100

    def evals(self) -> set[int]:
        return set(eval_steps(self.steps, self.eval_every, self.eval_log_points).tolist())


@dataclass
class LoopState:
    """What hooks see: the stage, the step about to run (or just run), the parameters (S, P) — a view that
    the stepper updates in place — and ``tensors``, the step's tensors the stepper chose to expose (e.g. the
    gradient)."""

    stage_index: int
    stage: Stage
    step: int
    params: torch.Tensor
    tensors: dict[str, Any] = field(default_factory=dict)


class Hook:
    """Called by the loop; subclass and override what you need (every method is a no-op here).

    ``before_step``/``after_step`` run around every update (``after_step`` sees the updated parameters and the
    step's tensors); ``before_evaluate`` runs just before the parameters after ``state.step`` steps are
    evaluated (an intervention makes the evaluation see it, the one at step 0 included); ``on_evaluate`` gets each metrics block (one entry per run) when it is gathered, in step
    order; ``on_checkpoint`` the path just written.  Hooks may change the parameters in place (that is how
    interventions work); they must keep any state they need to resume in :meth:`state_dict`."""

    def before_step(self, state: LoopState) -> None: ...

    def after_step(self, state: LoopState) -> None: ...

    def before_evaluate(self, state: LoopState) -> None: ...

    def on_evaluate(self, state: LoopState, block: dict[str, np.ndarray]) -> None: ...

    def on_checkpoint(self, state: LoopState, path: Path) -> None: ...

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None: ...

    def reset(self) -> None:
        """Forget what an earlier training held: :func:`run` calls it when each training starts (a hook may serve
        several trainers of one run, with other parameter shapes), before a resume loads the saved state."""


class Stepper(Protocol):
    """A trainer family's step and state on top of the loop.

    ``stages``: the stages in order.  ``params``: the (S, P) parameters that the finite check and hooks see.
    ``begin_stage(i, resumed)`` prepares stage i (``resumed``: its state was just loaded from a checkpoint);
    ``end_stage(i)`` releases what the stage held.  ``step(k)`` does the update of step k; ``evaluate(k)``
    returns one metrics block (or a Future of one) for the parameters after k steps.  ``at_boundary()``:
    whether a checkpoint may be taken now.  ``state_dict``/``load_state_dict``: everything exact resume
    needs (parameters, optimiser, generators).  ``hint``: what to try after a NaN/inf stop."""

    hint: str

    @property
    def stages(self) -> Sequence[Stage]: ...

    @property
    def params(self) -> torch.Tensor: ...

    def begin_stage(self, index: int, resumed: bool) -> None: ...

    def end_stage(self, index: int) -> None: ...

    def step(self, step: int, tensors: dict[str, Any]) -> None: ...

    def evaluate(self, step: int) -> dict[str, np.ndarray] | Future: ...

    def at_boundary(self) -> bool: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


def check_finite(params: torch.Tensor, where: str, checkpoint: Path | None, hint: str) -> None:
    """Raise :class:`NonFiniteError` naming the runs of ``params`` (S, P) — parameters, or parameters and loss —
    that hold NaN/inf, and ``where``."""
    bad = ~torch.isfinite(params).all(1)
    if bool(bad.any()):
        runs = bad.nonzero().flatten().tolist()
        if checkpoint is None:
            kept = "no checkpoint was configured"
        elif checkpoint.exists():
            kept = f"the last good checkpoint is kept at {checkpoint}"
        else:
            kept = "no checkpoint had been written yet"
        raise NonFiniteError(f"run(s) {runs} became NaN/inf (parameters or loss) {where}; {kept}. {hint}")


@dataclass
class _Run:
    stepper: Stepper
    ctx: RunContext
    hooks: Sequence[Hook]
    stop: StopFlag
    bar: tqdm
    stage: int = 0
    step: int = 0
    blocks: list = field(default_factory=list)
    pending: list = field(default_factory=list)  # evaluations (blocks or Futures of blocks), in step order
    done: bool = False

    def gather(self) -> None:
        """Append the finished evaluations in step order (waits for those under way) and tell the hooks."""
        for item in self.pending:
            if isinstance(item, Future):
                with timing.section("eval"):
                    block = item.result()
            else:
                block = item
            self.blocks.append(block)
            view = self._view()
            for h in self.hooks:
                h.on_evaluate(view, block)
        self.pending.clear()

    def _view(self, tensors: dict | None = None) -> LoopState:
        return LoopState(
            self.stage,
            self.stepper.stages[min(self.stage, len(self.stepper.stages) - 1)],
            self.step,
            self.stepper.params,
            tensors or {},
        )

    def save(self) -> None:
        path = self.ctx.checkpoint
        if path is None or not bool(torch.isfinite(self.stepper.params).all()):
            return
        self.gather()
        with timing.section("checkpoint"):
            self._write(path)
        for h in self.hooks:
            h.on_checkpoint(self._view(), path)

    def _write(self, path: Path) -> None:
        save_checkpoint(
            path,
            {
                "stage": self.stage,
                "step": self.step,
                "done": self.done,
                "blocks": self.blocks,
                "stepper": self.stepper.state_dict(),
                "hooks": hook_states(self.hooks),
                "fingerprint": self.ctx.fingerprint,
                "config": self.ctx.config,
                "shape": tuple(self.stepper.params.shape),
            },
        )

    def keep(self, step: int) -> None:
        """With ``ctx.keep_checkpoints``, a checkpoint of the parameters at this evaluation, kept at
        ``ctx.kept(step)`` (``step``: counted over all stages), finite ones only."""
        path = self.ctx.kept(step)
        if path is not None and bool(torch.isfinite(self.stepper.params).all()):
            with timing.section("checkpoint"):
                self._write(path)

    def load(self) -> bool:
        path = self.ctx.checkpoint
        if not (self.ctx.resume and path is not None and path.exists()):
            return False
        state = read_checkpoint(path, self.ctx, tuple(self.stepper.params.shape))
        self.stage, self.step, self.done, self.blocks = state["stage"], state["step"], state["done"], state["blocks"]
        self.stepper.load_state_dict(state["stepper"])
        restore_hooks(self.hooks, state["hooks"])
        return True


def run(stepper: Stepper, ctx: RunContext, hooks: Sequence[Hook] = (), desc: str = "train") -> pd.DataFrame:
    """Run every stage of ``stepper`` (resuming from ``ctx.checkpoint`` when ``ctx.resume``); returns the metrics
    table: the evaluation blocks in order.  See the module docstring for the order of
    events within a step."""
    hooks = tuple(hooks) + tuple(ctx.hooks)
    total = sum(s.steps for s in stepper.stages)
    label = _label(desc, ctx)
    names = [f"{label}, stage {s.name}" for s in stepper.stages] if len(stepper.stages) > 1 else [label]
    with (
        StopFlag() as stop,
        tqdm(total=total, disable=not ctx.progress, desc=names[0], unit="step", mininterval=1.0) as bar,
    ):
        for h in hooks:
            h.reset()  # a hook's state belongs to one training
        r = _Run(stepper, ctx, hooks, stop, bar)
        resumed = r.load()
        while not r.done and r.stage < len(stepper.stages):
            bar.set_description(names[min(r.stage, len(names) - 1)])
            stepper.begin_stage(r.stage, resumed)
            try:
                _run_stage(r, resumed)
            except (Interrupted, NonFiniteError) as err:
                r.gather()
                err.metrics = metrics_frame(r.blocks)  # what was measured before the stop is not lost
                raise
            finally:
                r.gather()
                stepper.end_stage(r.stage)
            resumed = False
            r.stage, r.step = r.stage + 1, 0
        if not r.done:
            r.done = True
            r.stage, r.step = len(stepper.stages), 0
            r.save()
    return metrics_frame(r.blocks)


def _label(desc: str, ctx: RunContext) -> str:
    """The progress bar's label, what it trains: the run directory's name, the training within the run (``ctx.name``,
    its checkpoint's, unless the default) and the trainer's ``desc`` (unless the default), e.g. ``lazy-to-rich
    literal``; :func:`run` adds the stage when there are several."""
    parts = (
        Path(ctx.run_dir).name if ctx.run_dir else "",
        ctx.name if ctx.name != RunContext.name else "",
        desc if desc != "train" else "",
    )
    return " ".join(p for p in parts if p) or desc


def _run_stage(r: _Run, resumed: bool) -> None:
    stage, stepper, where = r.stepper.stages[r.stage], r.stepper, r.ctx.checkpoint
    evals = stage.evals()
    next_checkpoint = (r.step // stage.checkpoint_every + 1) * stage.checkpoint_every
    tensors: dict[str, Any] = {}
    first, offset = r.step, sum(s.steps for s in stepper.stages[: r.stage])
    r.bar.update(offset + first - r.bar.n)
    for step in range(first, stage.steps + 1):
        r.step = step
        if step % stage.finite_check_every == 0 or step in evals or step == stage.steps:
            # the parameters, and the last step's per-run loss where the stepper exposes it: finite parameters can
            # still overflow the forward pass, and the evaluation must not run on that
            loss = tensors.get("loss")
            values = (
                stepper.params if loss is None else torch.cat([stepper.params, loss.view(-1, 1).to(stepper.params)], 1)
            )
            check_finite(values, f"in stage {stage.name} by step {step}", where, stepper.hint)
        if (r.stop.raised or step >= next_checkpoint) and step < stage.steps and stepper.at_boundary():
            next_checkpoint = (step // stage.checkpoint_every + 1) * stage.checkpoint_every
            if not (resumed and step == first):
                r.save()
            if r.stop.raised:
                raise Interrupted(
                    f"interrupted in stage {stage.name} at step {step}; checkpoint at {where}. "
                    "Run again with --resume to continue exactly."
                    if where
                    else f"interrupted in stage {stage.name} at step {step} (no checkpoint configured)"
                )
        if step in evals:
            if r.hooks:
                view = r._view(tensors)
                for h in r.hooks:
                    h.before_evaluate(view)
            with timing.section("eval"):
                r.pending.append(stepper.evaluate(step))
            if step or not r.stage:  # a later stage's step 0 is the step its predecessor ended on: kept then
                r.keep(offset + step)
        if step == stage.steps:
            break
        if r.hooks:
            view = r._view(tensors)
            for h in r.hooks:
                h.before_step(view)
        with timing.section("steps"):
            stepper.step(step, tensors)
        for h in r.hooks:
            h.after_step(view)
        if step % 100 == 99:
            r.bar.update(100)
    r.bar.update(offset + stage.steps - r.bar.n)
