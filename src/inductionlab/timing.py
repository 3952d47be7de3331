"""Where a run's wall time goes (docs/conventions.md#profile): named sections timed in this process.

The loop times ``steps`` (the updates), ``eval`` (evaluations, waiting for background ones included) and
``checkpoint``; the trainers time ``data`` (drawing batches; inside a step, so not counted in ``steps``); the flow
solver ``theory``; the runner ``plot`` (figures) and ``io`` (tables written) and ``startup`` (the process's CPU time
before its first run: the interpreter and the imports).  Sections nest: each keeps only its own time (a ``data`` section inside
``steps`` is taken out of ``steps``), so the parts add up to the run's wall time, and ``other`` is the rest of it
(the experiment's own analysis).  A section in a background thread (a data-prefetch thread) is not timed.

    with timing.record() as parts:     # what the runner does around one run
        ...
    parts  # {"steps": 12.1, "data": 0.8, "eval": 1.3, ...} in seconds
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_local = threading.local()
_started = False


def _stack() -> list[list[float]]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


@contextmanager
def section(name: str) -> Iterator[None]:
    """Time the block under ``name`` while a :func:`record` is open in this thread (a no-op otherwise)."""
    parts = getattr(_local, "parts", None)
    if parts is None:
        yield
        return
    stack = _stack()
    frame = [time.perf_counter(), 0.0]  # start, time of the sections nested inside
    stack.append(frame)
    try:
        yield
    finally:
        stack.pop()
        spent = time.perf_counter() - frame[0]
        parts[name] = parts.get(name, 0.0) + spent - frame[1]
        if stack:
            stack[-1][1] += spent


def timed(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: each call of the function is a :func:`section` ``name``."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            with section(name):
                return fn(*args, **kwargs)

        return inner

    return wrap


@contextmanager
def record() -> Iterator[dict[str, float]]:
    """Collect the sections timed in this thread into the yielded dict; at the end it also holds ``startup`` (the
    first record of the process only: its CPU time so far, the imports) and ``other`` (the rest of the wall time)."""
    global _started
    start = time.perf_counter()
    parts: dict[str, float] = {}
    if not _started:
        parts["startup"] = time.process_time()
        _started = True
    outer, _local.parts = getattr(_local, "parts", None), parts
    try:
        yield parts
    finally:
        _local.parts = outer
        timed = sum(v for k, v in parts.items() if k != "startup")
        parts["other"] = max(time.perf_counter() - start - timed, 0.0)
