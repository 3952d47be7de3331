"""The claims registry (docs/conventions.md#claims): what a paper states, the summary key that measures it, and
the test that judges it; the verdicts are :mod:`inductionlab.analysis.verdicts`.

Each experiment declares ``CLAIMS``, a tuple of :class:`Claim`, beside its CONFIG.  :func:`judge` reads a claim's
key from a run's ``summary.json`` and returns one row of ``claims.parquet``.  The tests (``Between``, ``Near``,
``Is``, ``Reached``) live in :mod:`inductionlab.analysis.claim_tests` and are imported from here too.

Three outcomes (docs/conventions.md#claims): a claim is *passed* or *failed* only on a defined value; a missing key,
a null or NaN where a number is tested, or fewer data seeds than the claim asks for make it *undefined*, never a
pass and never a failure.  A claim that ``needs`` what this run lacks (the paper's scale: a GPU, a length) is *not
judged at this scale*.  A failed claim has a kind: *a finding about the paper* only with its :class:`Evidence`
(the paper's sentence, the run that meets the statement's hypotheses, an independent re-implementation under
``tests/findings/``), else *open*.

A claim may name a *negative control* (:class:`Control`, docs/conventions.md#controls): a run of the same
experiment that breaks the mechanism the claim rests on.  The claim's own test is applied to the control's
summary: the control *rejects* when the test fails there on a defined value, *accepts* when it holds (a check that
cannot fail), and is *undefined* when the value is missing.

A stochastic claim sets ``seeds``: its key then holds one value per data seed, the test applies to their mean, and
the row carries the standard deviation and the count (the report prints mean ± 2 s.d.).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inductionlab.analysis.claim_tests import Between, Is, Near, Reached, Test, number

__all__ = [  # the tests are re-exported: experiments import everything a claim needs from here
    "Between",
    "Claim",
    "Control",
    "Evidence",
    "Learned",
    "Is",
    "Near",
    "Reached",
    "Test",
    "lookup",
    "measure",
]

Paper = str  # "wang", "chen", "ren", or the short name of a researcher's own source (docs/own_experiment.md)
PAPERS: dict[str, str] = {  # the toolkit's papers; any other name is a source of its own
    "wang": "Wang, Yu, E & Wu — how transformers get rich",
    "chen": "Chen, Sheen, Wang & Yang — unveiling induction heads",
    "ren": "Ren, Wang & Lee — sparse contextual bigrams",
    "olsson": "Olsson et al. — induction heads in any model, monitored while it trains",
}
SCALE = "not judged at this scale"
DID_NOT_LEARN = "did not learn"
UNEARNED = "unearned"
STATUSES = ("passed", UNEARNED, "failed", "undefined", DID_NOT_LEARN, SCALE, "not run", "smoke, not judged")
MIN_LEARNED = 3  # a claim about a trained model is judged on at least this many draws that learned (#learned)
CONTROL_STATUSES = ("rejects", "accepts", "undefined", "not run", "smoke, not judged")
FINDING = "a finding about the paper"
FAILURE_KINDS = (FINDING, "open")
MISSING = object()


@dataclass(frozen=True, kw_only=True)
class Control:
    """A negative control (docs/conventions.md#controls): ``name`` (unique within its experiment), what it
    ``breaks`` (one sentence), and the run: the experiment's ``preset`` (the smallest budget at which the check
    means something) with the dotted-key ``overrides`` on top.  Each claim that names it must fail its own test
    on the control's summary.  ``wall``: its measured wall time on one core (e.g. "~4 min"; "" for about a minute
    or less, or at the experiment's default its ``wall``), by which ``reproduce`` starts the longest jobs first.
    ``draws``: the data draws it runs (``<experiment>@<name>``, then ``<experiment>@<name>.draw-<i>`` on the seeds
    of the experiment's draw i), as many as its rejection needs to be powered (docs/conventions.md#calibration), at
    most the experiment's: its claims' test is applied to their mean."""

    name: str
    breaks: str
    overrides: Mapping[str, Any]
    preset: str | None = "quick"
    wall: str = ""
    cheaper: str = ""
    draws: int = 1

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").isalnum() or not self.breaks:
            raise ValueError(f"control {self.name!r}: a name of letters, digits and '-', and what it breaks")
        if isinstance(self.draws, bool) or not isinstance(self.draws, int) or self.draws < 1:
            raise ValueError(f"control {self.name!r}: draws is the number of data draws it runs, ≥ 1")
        if not isinstance(self.cheaper, str):
            raise ValueError(f"control {self.name!r}: cheaper is one sentence, got {self.cheaper!r}")


@dataclass(frozen=True, kw_only=True)
class Learned:
    """The precondition of a claim about a trained model (docs/conventions.md#learned): the claim is judged only on
    the draws whose ``key`` (or key / ``over``) passes ``test``, e.g. a final loss at most 0.2 of the plateau
    (``what`` says it in words); ``shown``: a summary key printed beside a draw that did not learn (its escape
    step).  The key holds one value per seed wherever the claim's does."""

    key: str
    test: Test
    what: str
    over: str = ""
    shown: str = ""

    def __post_init__(self) -> None:
        if not self.key or not self.what:
            raise ValueError("Learned needs the key it reads and what it asks in words")


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What makes a failure *a finding about the paper* (docs/conventions.md#findings): ``sentence``, the paper's
    own words, quoted, with where they stand; ``regime``, the statement's hypotheses and the run shown to meet them
    (or the nearest regime the paper gives), naming the claim id or experiment and key that measures it;
    ``reimplementation``, ``tests/findings/<file>.py``: an independent minimal re-implementation (numpy/torch,
    importing nothing from inductionlab) that reproduces the failing number in seconds."""

    sentence: str
    regime: str
    reimplementation: str

    def __post_init__(self) -> None:
        if not (self.sentence and self.regime):
            raise ValueError("Evidence needs the paper's sentence and the regime's run")
        if not re.fullmatch(r"tests/findings/test_[a-z0-9_]+\.py", self.reimplementation):
            raise ValueError(
                f"Evidence.reimplementation: a tests/findings/test_*.py file, got {self.reimplementation!r}"
            )


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One claim: ``id`` (unique, e.g. ``wang-thm5.5-L``), the paper and where in it (figure / theorem /
    section), the claim in one sentence, the summary ``key`` (dotted; a key may itself hold dots), what the paper
    or theory gives (``expected``, as text), the ``test``; ``over``: a second key, the measured value then being
    the ratio key / over; ``needs``: empty, or the scale the claim needs that a CPU run lacks ("a GPU: …"), which
    makes it "not judged at this scale" on a CPU; ``control``: the name of one of its experiment's :class:`Control`
    runs, on which the test must fail; ``seeds``: 0 for a deterministic claim, else the key holds one value per data
    seed and the test applies to their mean over at least ``seeds`` of them (docs/conventions.md#claims);
    ``if_failed``: when the claim fails, what that is, one of :data:`FAILURE_KINDS` then a colon and one sentence
    (the report prints it; a failed claim without one is "open"); a finding needs its ``evidence``;
    ``observation``: the project's own observation or a robustness note, not a paper's claim (shown and counted
    apart, no control needed); ``learned``: the precondition of a claim about a trained model (:class:`Learned`);
    ``log10``: the measured value is the decimal logarithm of the key (or of the ratio), for a gain spread over
    orders of magnitude, whose mean over seeds is then a geometric mean and whose spread is read in decades
    (docs/conventions.md#calibration); the test's bounds are in decades too."""

    id: str
    paper: Paper
    where: str
    statement: str
    key: str
    expected: str
    test: Test  # any object with holds, defined and a one-line str (analysis/claim_tests.py)
    over: str = ""
    needs: str = ""
    control: str = ""
    seeds: int = 0
    if_failed: str = ""
    evidence: Evidence | None = None
    observation: bool = False
    learned: Learned | None = None
    log10: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.log10, bool):
            raise ValueError(f"claim {self.id}: log10 is True or False, got {self.log10!r}")
        if not isinstance(self.paper, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", self.paper):
            raise ValueError(
                f"claim {self.id}: paper must be a short lower-case name ({', '.join(PAPERS)} or your own), "
                f"got {self.paper!r}"
            )
        if not self.id or not self.key or not self.statement:
            raise ValueError(f"claim {self.id!r}: id, key and statement are required")
        if self.if_failed and self.if_failed.split(":", 1)[0] not in FAILURE_KINDS:
            raise ValueError(f"claim {self.id}: if_failed must start with one of {FAILURE_KINDS} and a colon")
        if (self.kind == FINDING) != (self.evidence is not None):
            raise ValueError(
                f"claim {self.id}: a failure is {FINDING!r} exactly when the claim carries its evidence (the paper's "
                "sentence, the in-regime run, tests/findings/ re-implementation); otherwise say 'open: ...'"
            )
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 0 or self.seeds == 1:
            raise ValueError(f"claim {self.id}: seeds is 0 (deterministic) or the least number of data seeds, ≥ 2")

    @property
    def kind(self) -> str:
        """What a failure of this claim is: one of :data:`FAILURE_KINDS`."""
        return self.if_failed.split(":", 1)[0] if self.if_failed else "open"


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
    denominator is 0; :data:`MISSING` where a key is absent), and its decimal logarithm with ``claim.log10``.  With
    ``claim.seeds`` the key (and ``over``) hold one value per seed and the ratio is taken seed by seed."""
    value = _measured(claim, summary)
    if not claim.log10 or value is MISSING:
        return value
    return [_log10(v) for v in value] if isinstance(value, list) else _log10(value)


def _measured(claim: Claim, summary: dict[str, Any]) -> Any:
    value = or_never(summary, claim.key)
    if not claim.over or value is MISSING:
        return value
    denominator = or_never(summary, claim.over)
    if denominator is MISSING:
        return MISSING
    if claim.seeds and isinstance(value, list) and isinstance(denominator, list) and len(value) == len(denominator):
        return [_ratio(x, y) for x, y in zip(value, denominator)]
    return _ratio(value, denominator)


def _log10(value: Any) -> float | None:
    """log10 of a positive number (+inf stays +inf); None for anything else, which the test reads as undefined."""
    x = number(value)
    return math.log10(x) if x is not None and x > 0 else None


def or_never(summary: dict[str, Any], key: str) -> Any:
    """:func:`lookup`, with +inf for a null that the summary lists under ``not_reached`` (an event that never
    happened within the run: docs/conventions.md#never)."""
    value = lookup(summary, key)
    return math.inf if value is None and key in summary.get("not_reached", ()) else value


def _ratio(value: Any, denominator: Any) -> float | None:
    x, y = number(value), number(denominator)
    if x is None or not y or (math.isinf(x) and math.isinf(y)):
        return None
    return x / y
