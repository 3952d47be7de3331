"""The monitor inside a HuggingFace ``transformers.Trainer`` (docs/monitor.md#the-trainer-callback).

``transformers`` is imported only when :data:`InductionCallback` is first looked up, so that
``import inductionlab.monitor`` works without it::

    from inductionlab.monitor import InductionCallback, Monitor, MonitorConfig

    monitor = Monitor(model, MonitorConfig(every=50), out_dir="runs/gpt2")
    trainer = Trainer(model=model, args=args, train_dataset=data)  # report_to="tensorboard", "wandb", ...
    trainer.add_callback(InductionCallback(monitor, trainer))  # its numbers reach every report_to backend
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from inductionlab.config import require
from inductionlab.extras import require as require_extra
from inductionlab.monitor.core import Monitor


def send_figure(monitor: Monitor, trainer: Any, step: int) -> None:
    """The monitor's figure, as the image ``monitor/figure``, to ``trainer``'s TensorBoard and W&B runs (none
    without a trainer, or where it reports to neither)."""
    import matplotlib.pyplot as plt

    from inductionlab.monitor.figure import plot_monitor

    reporters = [] if trainer is None else trainer.callback_handler.callbacks
    writers = [w for cb in reporters if (w := getattr(cb, "tb_writer", None)) is not None]
    runs = [r for cb in reporters if type(cb).__name__ == "WandbCallback" and (r := getattr(cb, "_wandb", None))]
    if not (writers or runs):
        return
    m = monitor
    fig = plot_monitor(m.heads, m.steps, m.phase(), m.chance, m.config.threshold, attainable=m.attainable)
    for writer in writers:
        writer.add_figure("monitor/figure", fig, step, close=False)
        writer.flush()
    for run in runs:
        run.log({"monitor/figure": run.Image(fig)}, commit=False)
    plt.close(fig)


def _check(monitor: Any, trainer: Any, on_phase_change: Any) -> None:
    """Refuse, by name, what the callback cannot use."""
    require(isinstance(monitor, Monitor), "monitor", f"must be a Monitor, got {type(monitor).__name__}")
    logs = trainer is None or callable(getattr(trainer, "log", None))
    require(logs, "trainer", f"must be the transformers Trainer (with a log method), got {type(trainer).__name__}")
    require(
        on_phase_change is None or callable(on_phase_change),
        "on_phase_change",
        f"must be a function of (phase, control), got {type(on_phase_change).__name__}",
    )


@cache
def callback_class() -> type:
    """The ``transformers.TrainerCallback`` subclass (built once, on first use)."""
    TrainerCallback: Any = require_extra("transformers", "InductionCallback").TrainerCallback

    class InductionCallback(TrainerCallback):
        """Measures at the start of training and every ``monitor.config.every`` optimiser steps (the Trainer's
        ``global_step``) on the main process; saves the monitor's files at the end of training (when it has an
        ``out_dir``) (docs/monitor.md#the-trainer-callback).

        Each measurement's :meth:`~inductionlab.monitor.Monitor.metrics` go through ``trainer.log`` — into
        ``state.log_history`` and every ``report_to`` backend (TensorBoard, W&B, ...) — when ``trainer`` is given
        (the callback is then added with ``trainer.add_callback``); without it, into ``state.log_history`` only
        (saved in ``trainer_state.json``), since a Trainer calls its reporting callbacks before its users'.
        ``on_phase_change(phase, control)`` is called once, when the monitor first detects the phase change: set
        ``control.should_save`` or ``control.should_training_stop`` there."""

        def __init__(
            self, monitor: Monitor, trainer: Any = None, on_phase_change: Callable[[Any, Any], Any] | None = None
        ):
            _check(monitor, trainer, on_phase_change)
            self.monitor, self.trainer, self.on_phase_change = monitor, trainer, on_phase_change

        def _measure(self, state: Any, control: Any, model: Any) -> None:
            if not state.is_world_process_zero:
                return
            before = self.monitor.detected
            if self.monitor.maybe(state.global_step, model) is None:
                return
            metrics = self.monitor.metrics()
            if self.trainer is not None:
                self.trainer.log(metrics)
            else:
                state.log_history.append({**metrics, "step": state.global_step})
            if before is None and self.monitor.detected is not None:
                send_figure(self.monitor, self.trainer, state.global_step)
                if self.on_phase_change is not None:
                    self.on_phase_change(self.monitor.detected, control)

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            self._measure(state, control, model)

        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            self._measure(state, control, model)

        def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            if not state.is_world_process_zero:
                return
            if self.monitor.out_dir is not None:
                self.monitor.save()
            if len(self.monitor.steps):
                send_figure(self.monitor, self.trainer, state.global_step)

    InductionCallback.__module__ = __name__
    return InductionCallback


def __getattr__(name: str) -> Any:
    if name == "InductionCallback":
        return callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
