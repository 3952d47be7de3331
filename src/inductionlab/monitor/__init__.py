"""Induction-head formation on any model during training (docs/monitor.md): adapters for HuggingFace,
TransformerLens (``HookedTransformer``, ``TransformerBridge``), nnsight, the toolkit's transformer and any
``nn.Module``; the :class:`Monitor` with online phase detection, chance levels and figure; :data:`InductionCallback`
for ``transformers.Trainer`` and :data:`InductionLightningCallback` for PyTorch Lightning (each package imported
on first use).

The names are those of the imports under ``if TYPE_CHECKING:`` below; :func:`__getattr__` imports each one's module
when the name is first used, so that importing one module of the monitor (``monitor.settings``, which a toolkit
experiment's run imports) executes no other.
"""

# ruff: noqa: F401 - the imports under TYPE_CHECKING are the package's names, each imported when first used

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the package's names, one list: what type checkers see and what __getattr__ imports
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
CALLBACKS = {"InductionCallback": "hf", "InductionLightningCallback": "lightning"}  # classes made on first use


@functools.cache
def _modules() -> dict[str, str]:
    """Name → its module, read from the imports under ``if TYPE_CHECKING:`` above."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    imports = [node for node in block.body if isinstance(node, ast.ImportFrom)]
    return {alias.name: str(node.module) for node in imports for alias in node.names}


def __getattr__(name: str) -> Any:
    if name in CALLBACKS:
        return importlib.import_module(f"{__name__}.{CALLBACKS[name]}").callback_class()
    if name not in _modules():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_modules()[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
