"""The tests a claim applies to its measured value (docs/conventions.md#claims): small frozen dataclasses with
``holds(value) -> bool``, ``defined(value) -> bool`` (a value the test can judge at all) and a one-line ``str``
(the tolerance as the report prints it).  +inf is a number here: the time of an event that never happened within
the run (docs/conventions.md#never)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol


class Test(Protocol):
    def holds(self, value: Any) -> bool: ...

    def defined(self, value: Any) -> bool: ...


def number(value: Any) -> float | None:
    """``value`` as a float, or None (None, NaN, a string or a bool are not numbers here).  +inf is a number: the
    time of an event that never happened (docs/conventions.md#never), later than every bound."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Reached:
    """The event happened within the run: its time is a finite number (+inf, never reached, fails)."""

    def holds(self, value: Any) -> bool:
        x = number(value)
        return x is not None and math.isfinite(x)

    def defined(self, value: Any) -> bool:
        return number(value) is not None

    def __str__(self) -> str:
        return "reached within the run"


@dataclass(frozen=True)
class Between:
    """lo ≤ value ≤ hi (either bound may be None)."""

    lo: float | None = None
    hi: float | None = None

    def __post_init__(self) -> None:
        if self.lo is None and self.hi is None:
            raise ValueError("Between needs a bound: lo, hi or both")

    def holds(self, value: Any) -> bool:
        x = number(value)
        return x is not None and (self.lo is None or x >= self.lo) and (self.hi is None or x <= self.hi)

    def defined(self, value: Any) -> bool:
        return number(value) is not None

    def __str__(self) -> str:
        if self.hi is None:
            return f"≥ {self.lo:g}"
        if self.lo is None:
            return f"≤ {self.hi:g}"
        return f"in [{self.lo:g}, {self.hi:g}]"


@dataclass(frozen=True)
class Near:
    """|value − target| ≤ max(atol, rtol·|target|)."""

    target: float
    rtol: float = 0.0
    atol: float = 0.0

    def holds(self, value: Any) -> bool:
        x = number(value)
        return x is not None and abs(x - self.target) <= max(self.atol, self.rtol * abs(self.target))

    def defined(self, value: Any) -> bool:
        return number(value) is not None

    def __str__(self) -> str:
        tol = f"{self.rtol:.0%}" if self.rtol else f"{self.atol:g}"
        return f"{self.target:g} ± {tol}"


@dataclass(frozen=True)
class Is:
    """value == expected (a boolean check or a label such as "{1,2}"); a null or NaN is undefined (an event that
    never happens is tested with :class:`Reached`, docs/conventions.md#never)."""

    expected: Any

    def holds(self, value: Any) -> bool:
        return value == self.expected

    def defined(self, value: Any) -> bool:
        return value is not None and not (isinstance(value, float) and math.isnan(value))

    def __str__(self) -> str:
        return f"= {self.expected}"
