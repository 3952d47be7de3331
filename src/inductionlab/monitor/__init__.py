"""Induction-head formation on any model during training (docs/monitor.md): adapters for HuggingFace,
TransformerLens (``HookedTransformer``, ``TransformerBridge``), nnsight, the toolkit's transformer and any
``nn.Module``; the :class:`Monitor` with online phase detection, chance levels and figure; :data:`InductionCallback`
for ``transformers.Trainer`` and :data:`InductionLightningCallback` for PyTorch Lightning (each package imported
on first use)."""

from typing import Any

from inductionlab.monitor.adapters import (
    Adapter,
    AdapterError,
    FunctionAdapter,
    hf_adapter,
    patterns_adapter,
    tl_adapter,
    toolkit_adapter,
)
from inductionlab.monitor.bridges import bridge_adapter, nnsight_adapter
from inductionlab.monitor.core import LoggerError, Monitor, token_losses
from inductionlab.monitor.data import RepeatedWindows, repeated_window_tokens
from inductionlab.monitor.figure import plot_monitor
from inductionlab.monitor.llc import LLCConfig, estimate_llc
from inductionlab.monitor.phase import PhaseChange, phase_change
from inductionlab.monitor.pick import adapter_for
from inductionlab.monitor.settings import MonitorConfig, attainable_scores, chance_scores, head_scores

__all__ = [
    "Adapter",
    "AdapterError",
    "FunctionAdapter",
    "InductionCallback",
    "InductionLightningCallback",
    "LLCConfig",
    "LoggerError",
    "Monitor",
    "MonitorConfig",
    "PhaseChange",
    "RepeatedWindows",
    "adapter_for",
    "bridge_adapter",
    "attainable_scores",
    "chance_scores",
    "estimate_llc",
    "head_scores",
    "hf_adapter",
    "nnsight_adapter",
    "patterns_adapter",
    "phase_change",
    "plot_monitor",
    "repeated_window_tokens",
    "tl_adapter",
    "token_losses",
    "toolkit_adapter",
]


def __getattr__(name: str) -> Any:
    if name == "InductionCallback":
        from inductionlab.monitor.hf import callback_class

        return callback_class()
    if name == "InductionLightningCallback":
        from inductionlab.monitor.lightning import callback_class as lightning_class

        return lightning_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
