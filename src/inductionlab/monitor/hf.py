"""The monitor inside a HuggingFace ``transformers.Trainer`` (docs/monitor.md#the-trainer-callback).

``transformers`` is imported only when :data:`InductionCallback` is first looked up, so that
``import inductionlab.monitor`` works without it::

    from inductionlab.monitor import InductionCallback, Monitor, MonitorConfig

    monitor = Monitor(model, MonitorConfig(every=50), out_dir="runs/gpt2")
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[InductionCallback(monitor)])
"""

from __future__ import annotations

from functools import cache
from typing import Any

from inductionlab.monitor.core import Monitor


@cache
def callback_class() -> type:
    """The ``transformers.TrainerCallback`` subclass (built once, on first use)."""
    try:
        from transformers import TrainerCallback
    except ImportError:
        raise ImportError("InductionCallback needs transformers: pip install -e '.[hf]'") from None

    class InductionCallback(TrainerCallback):
        """Measures at the start of training and every ``monitor.config.every`` optimiser steps (the Trainer's
        ``global_step``) on the main process; saves the monitor's files at the end of training (when it has an
        ``out_dir``)."""

        def __init__(self, monitor: Monitor):
            self.monitor = monitor

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            if state.is_world_process_zero:
                self.monitor.maybe(state.global_step, model)

        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            if state.is_world_process_zero:
                self.monitor.maybe(state.global_step, model)

        def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            if state.is_world_process_zero and self.monitor.out_dir is not None:
                self.monitor.save()

    InductionCallback.__module__ = __name__
    return InductionCallback


def __getattr__(name: str) -> Any:
    if name == "InductionCallback":
        return callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
