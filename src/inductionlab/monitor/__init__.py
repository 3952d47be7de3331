"""Induction-head formation on any model during training (docs/monitor.md): adapters for HuggingFace,
TransformerLens, the toolkit's transformer and any ``nn.Module``; the :class:`Monitor` with online phase
detection; :data:`InductionCallback` for ``transformers.Trainer`` (``transformers`` imported on first use)."""

from typing import Any

from inductionlab.monitor.adapters import (
    Adapter,
    AdapterError,
    FunctionAdapter,
    adapter_for,
    hf_adapter,
    patterns_adapter,
    tl_adapter,
    toolkit_adapter,
)
from inductionlab.monitor.core import Monitor, MonitorConfig, PhaseChange, head_scores, phase_change, token_losses

__all__ = [
    "Adapter",
    "AdapterError",
    "FunctionAdapter",
    "InductionCallback",
    "Monitor",
    "MonitorConfig",
    "PhaseChange",
    "adapter_for",
    "head_scores",
    "hf_adapter",
    "patterns_adapter",
    "phase_change",
    "tl_adapter",
    "token_losses",
    "toolkit_adapter",
]


def __getattr__(name: str) -> Any:
    if name == "InductionCallback":
        from inductionlab.monitor.hf import callback_class

        return callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
