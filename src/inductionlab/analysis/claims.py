"""The claims registry (docs/conventions.md#claims): what a paper states, the summary key that measures it, and
the test that judges it.

Each experiment declares ``CLAIMS``, a tuple of :class:`Claim`, beside its CONFIG.  :func:`judge` reads a claim's
key from a run's ``summary.json`` and returns one row of ``claims.parquet``.  A test is a small frozen dataclass
with ``holds(value) -> bool`` and a one-line ``str`` (the tolerance as the report prints it).

A claim may name a *negative control* (:class:`Control`, docs/conventions.md#controls): a run of the same
experiment that breaks the mechanism the claim rests on.  The claim's own test is applied to the control's
summary, and the control *rejects* when that test fails there; a control that *accepts* shows a check that cannot
fail.

Statuses: ``passed`` / ``failed`` (the test on the measured value), ``not run`` (the run is missing or failed,
or the claim needs what this machine lacks, e.g. a GPU at paper scale; the reason says which), and
``smoke, not judged`` (a smoke-size run checks the path, not the number).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

Paper = str  # "wang", "chen", "ren", or the short name of a researcher's own source (docs/own_experiment.md)
PAPERS: dict[str, str] = {  # the toolkit's papers; any other name is a source of its own
    "wang": "Wang, Yu, E & Wu — how transformers get rich",
    "chen": "Chen, Sheen, Wang & Yang — unveiling induction heads",
    "ren": "Ren, Wang & Lee — sparse contextual bigrams",
    "olsson": "Olsson et al. — induction heads in any model, monitored while it trains",
}
STATUSES = ("passed", "failed", "not run", "smoke, not judged")
CONTROL_STATUSES = ("rejects", "accepts", "not run", "smoke, not judged")
FAILURE_KINDS = ("a finding about the paper", "a limit of this machine", "open")
MISSING = object()


class Test(Protocol):
    def holds(self, value: Any) -> bool: ...


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or None (None, NaN, a string or a bool are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Between:
    """lo ≤ value ≤ hi (either bound may be None)."""

    lo: float | None = None
    hi: float | None = None

    def __post_init__(self) -> None:
        if self.lo is None and self.hi is None:
            raise ValueError("Between needs a bound: lo, hi or both")

    def holds(self, value: Any) -> bool:
        x = _number(value)
        return x is not None and (self.lo is None or x >= self.lo) and (self.hi is None or x <= self.hi)

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
        x = _number(value)
        return x is not None and abs(x - self.target) <= max(self.atol, self.rtol * abs(self.target))

    def __str__(self) -> str:
        tol = f"{self.rtol:.0%}" if self.rtol else f"{self.atol:g}"
        return f"{self.target:g} ± {tol}"


@dataclass(frozen=True)
class Is:
    """value == expected (a boolean check, a label such as "{1,2}", or None for "never")."""

    expected: Any

    def holds(self, value: Any) -> bool:
        return value == self.expected if self.expected is not None else value is None

    def __str__(self) -> str:
        return "never (null)" if self.expected is None else f"= {self.expected}"


@dataclass(frozen=True, kw_only=True)
class Control:
    """A negative control (docs/conventions.md#controls): ``name`` (unique within its experiment), what it
    ``breaks`` (one sentence), and the run: the experiment's ``preset`` (the smallest budget at which the check
    means something) with the dotted-key ``overrides`` on top.  Each claim that names it must fail its own test
    on the control's summary.  ``wall``: its measured wall time on one core (e.g. "~4 min"; "" for about a minute
    or less, or at the experiment's default its ``wall``), by which ``reproduce`` starts the longest jobs first."""

    name: str
    breaks: str
    overrides: Mapping[str, Any]
    preset: str | None = "quick"
    wall: str = ""

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").isalnum() or not self.breaks:
            raise ValueError(f"control {self.name!r}: a name of letters, digits and '-', and what it breaks")


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One claim: ``id`` (unique, e.g. ``wang-thm5.5-L``), the paper and where in it (figure / theorem /
    section), the claim in one sentence, the summary ``key`` (dotted; a key may itself hold dots), what the paper
    or theory gives (``expected``, as text), the ``test``; ``over``: a second key, the measured value then being
    the ratio key / over; ``needs``: empty, or what the claim needs that a CPU run lacks ("a GPU: …"), which makes
    it "not run" on a CPU; ``control``: the name of one of its experiment's :class:`Control` runs, on which the
    test must fail; ``if_failed``: when the claim fails, what that is, one of :data:`FAILURE_KINDS` then a colon
    and one sentence (the report prints it; a failed claim without one is "open")."""

    id: str
    paper: Paper
    where: str
    statement: str
    key: str
    expected: str
    test: Between | Near | Is
    over: str = ""
    needs: str = ""
    control: str = ""
    if_failed: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.paper, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", self.paper):
            raise ValueError(
                f"claim {self.id}: paper must be a short lower-case name ({', '.join(PAPERS)} or your own), "
                f"got {self.paper!r}"
            )
        if not self.id or not self.key or not self.statement:
            raise ValueError(f"claim {self.id!r}: id, key and statement are required")
        if self.if_failed and self.if_failed.split(":", 1)[0] not in FAILURE_KINDS:
            raise ValueError(f"claim {self.id}: if_failed must start with one of {FAILURE_KINDS} and a colon")


def lookup(summary: dict[str, Any], key: str) -> Any:
    """The value at dotted ``key`` in a nested summary; a part may itself hold dots (``final.SGD η=0.03.alpha``),
    so the longest part present is taken first.  :data:`MISSING` when there is none."""
    if key in summary:
        return summary[key]
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:i])
        if head in summary and isinstance(summary[head], dict):
            found = lookup(summary[head], ".".join(parts[i:]))
            if found is not MISSING:
                return found
    return MISSING


def measure(claim: Claim, summary: dict[str, Any]) -> Any:
    """The claim's measured value: its key, or the ratio key / over (None where either is not a number or the
    denominator is 0; :data:`MISSING` where a key is absent)."""
    value = lookup(summary, claim.key)
    if not claim.over or value is MISSING:
        return value
    denominator = lookup(summary, claim.over)
    if denominator is MISSING:
        return MISSING
    x, y = _number(value), _number(denominator)
    return None if x is None or not y else x / y


def show(value: Any) -> str:
    """A measured value as the report prints it."""
    if value is MISSING:
        return "—"
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def judge(
    claim: Claim, summary: dict[str, Any] | None, *, smoke: bool = False, gpu: bool = False, reason: str = ""
) -> dict[str, Any]:
    """One row of ``claims.parquet`` for ``claim`` against a run's ``summary`` (None: the run is missing or
    failed, ``reason`` says why).  ``smoke``: a smoke-size run, reported as "smoke, not judged"; ``gpu``: the
    run had a GPU (a claim that needs one is judged only then)."""
    value = MISSING if summary is None else measure(claim, summary)
    if summary is None:
        status, why = "not run", reason or "the experiment did not run"
    elif claim.needs and not gpu:
        status, why = "not run", f"not run here: needs {claim.needs}"
    elif smoke:
        status, why = "smoke, not judged", "smoke-size run: checks the path, not the number"
    elif value is MISSING:
        status, why = "failed", f"the summary has no key {claim.key!r}"
    else:
        status, why = ("passed", "") if claim.test.holds(value) else ("failed", f"measured {show(value)}")
    return {
        "id": claim.id,
        "paper": claim.paper,
        "where": claim.where,
        "statement": claim.statement,
        "key": claim.key,
        "measured": _number(value),
        "measured_text": show(value),
        "expected": claim.expected,
        "test": str(claim.test),
        "status": status,
        "reason": why,
        "if_failed": claim.if_failed,
    }


def judge_control(claim: Claim, summary: dict[str, Any] | None, *, smoke: bool = False) -> dict[str, Any]:
    """The control columns of ``claim``'s row: its test applied to the control run's ``summary`` (None: not run).
    ``rejects`` when the test fails there (the check can fail), ``accepts`` when it holds (it cannot tell the
    broken mechanism from the working one)."""
    if not claim.control:
        return {"control": "", "control_measured_text": "", "control_status": ""}
    value = MISSING if summary is None else measure(claim, summary)
    if smoke:
        status = "smoke, not judged"
    elif summary is None:
        status = "not run"
    else:
        status = "accepts" if value is not MISSING and claim.test.holds(value) else "rejects"
    return {"control": claim.control, "control_measured_text": show(value), "control_status": status}
