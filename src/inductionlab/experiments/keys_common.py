"""Shared by the experiments that set a key of a shared config section themselves, one value per variant: such
a key keeps its default, and a changed value is refused, naming the key that sets it (docs/conventions.md#keys)."""

from __future__ import annotations

from typing import Any

from inductionlab.config import require


def set_here(section: Any, prefix: str, defaults: dict[str, Any], by: str) -> None:
    """Refuse a value of ``prefix.key`` other than ``defaults[key]``: ``by`` sets that key in this experiment."""
    for key, default in defaults.items():
        require(
            getattr(section, key) == default,
            f"{prefix}.{key}",
            f"{by} sets it in this experiment, so it keeps its default {default!r}",
        )
