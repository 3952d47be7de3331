"""The monitor inside a PyTorch Lightning ``Trainer`` (docs/monitor.md#the-lightning-callback).

``lightning`` (or, failing that, ``pytorch_lightning``) is imported only when :data:`InductionLightningCallback`
is first looked up::

    from inductionlab.monitor import InductionLightningCallback, Monitor, MonitorConfig

    monitor = Monitor(module.model, MonitorConfig(every=50), out_dir="runs/lit")  # the module's transformer
    trainer = lightning.Trainer(max_steps=2000, callbacks=[InductionLightningCallback(monitor)])
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from inductionlab.config import require
from inductionlab.extras import MissingExtra
from inductionlab.extras import require as require_extra
from inductionlab.monitor.core import Monitor


def _lightning() -> Any:
    """``lightning.pytorch``, else ``pytorch_lightning`` (the callback must subclass the Trainer's own package);
    neither: :class:`~inductionlab.extras.MissingExtra` naming the ``lightning`` extra."""
    try:
        return require_extra("lightning.pytorch", "InductionLightningCallback")
    except MissingExtra as missing:
        try:
            return require_extra("pytorch_lightning", "InductionLightningCallback")
        except MissingExtra:
            raise missing from None


@cache
def callback_class() -> type:
    """The ``lightning.pytorch.Callback`` subclass (built once, on first use)."""
    base: Any = _lightning().Callback

    class InductionLightningCallback(base):
        """Measures at the start of training and after every optimiser step whose ``trainer.global_step`` is a
        multiple of ``monitor.config.every``, on the global-zero process, the model the monitor was built with
        (share its parameters with the LightningModule); sends :meth:`~inductionlab.monitor.Monitor.metrics` to
        every logger of the Trainer (``trainer.loggers``) at that step; saves the monitor's files at the end of
        training (when it has an ``out_dir``).  ``on_phase_change(phase, trainer)`` is called once, when the
        monitor first detects the phase change: ``trainer.should_stop = True`` stops training there."""

        def __init__(self, monitor: Monitor, on_phase_change: Callable[[Any, Any], Any] | None = None):
            require(isinstance(monitor, Monitor), "monitor", f"must be a Monitor, got {type(monitor).__name__}")
            require(
                on_phase_change is None or callable(on_phase_change),
                "on_phase_change",
                f"must be a function of (phase, trainer), got {type(on_phase_change).__name__}",
            )
            self.monitor, self.on_phase_change = monitor, on_phase_change

        def _measure(self, trainer: Any) -> None:
            if not trainer.is_global_zero:
                return
            before = self.monitor.detected
            if self.monitor.maybe(trainer.global_step) is None:
                return
            metrics = self.monitor.metrics()
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=trainer.global_step)
            if before is None and self.monitor.detected is not None and self.on_phase_change is not None:
                self.on_phase_change(self.monitor.detected, trainer)

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self._measure(trainer)

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            self._measure(trainer)

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            if trainer.is_global_zero and self.monitor.out_dir is not None:
                self.monitor.save()

    InductionLightningCallback.__module__ = __name__
    return InductionLightningCallback


def __getattr__(name: str) -> Any:
    if name == "InductionLightningCallback":
        return callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
