"""How a run's summary is recorded (docs/conventions.md#never): its +inf leaves — the times of events that never
happened within the run — listed under ``not_reached``, and every value made JSON's (a non-finite float as null, a
numpy or torch scalar as its number).  What this does to a summary is what the claims read, so every job's closure
holds this module (:data:`inductionlab.store.closure.ALWAYS`, docs/conventions.md#provenance)."""

from __future__ import annotations

import math
from typing import Any


def jsonable(obj: Any) -> Any:
    """``obj`` as JSON holds it: a non-finite float as None, a mapping's keys as strings, a sequence as a list, a
    scalar with ``item()`` (numpy, torch) as its number."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        return jsonable(obj.item())
    return obj


def never_reached(summary: Any, prefix: str = "") -> list[str]:
    """The dotted keys of the +inf leaves of a summary: times of events that never happened within the run
    (docs/conventions.md#never).  JSON writes them as null; this list keeps them apart from values not measured."""
    if isinstance(summary, dict):
        return [key for k, v in summary.items() for key in never_reached(v, f"{prefix}{k}.")]
    is_inf = isinstance(summary, float) and math.isinf(summary) and summary > 0
    return [prefix.rstrip(".")] if is_inf else []
