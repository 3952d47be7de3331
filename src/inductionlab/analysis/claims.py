"""The claims registry (docs/conventions.md#claims): what a paper states, the summary key that measures it, and
the test that judges it.

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
from dataclasses import dataclass, replace
from typing import Any

from inductionlab.analysis.claim_tests import Between, Is, Near, Reached, Test, number

__all__ = [  # the tests are re-exported: experiments import everything a claim needs from here
    "Between",
    "Claim",
    "Control",
    "Evidence",
    "Is",
    "Near",
    "Reached",
    "Test",
    "judge",
    "judge_control",
    "lookup",
    "measure",
    "over_seeds",
]

Paper = str  # "wang", "chen", "ren", or the short name of a researcher's own source (docs/own_experiment.md)
PAPERS: dict[str, str] = {  # the toolkit's papers; any other name is a source of its own
    "wang": "Wang, Yu, E & Wu — how transformers get rich",
    "chen": "Chen, Sheen, Wang & Yang — unveiling induction heads",
    "ren": "Ren, Wang & Lee — sparse contextual bigrams",
    "olsson": "Olsson et al. — induction heads in any model, monitored while it trains",
}
SCALE = "not judged at this scale"
STATUSES = ("passed", "failed", "undefined", SCALE, "not run", "smoke, not judged")
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
    (the report prints it; a failed claim without one is "open"); a finding needs its ``evidence``."""

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
    denominator is 0; :data:`MISSING` where a key is absent).  With ``claim.seeds`` the key (and ``over``) hold one
    value per seed and the ratio is taken seed by seed."""
    value = _or_never(summary, claim.key)
    if not claim.over or value is MISSING:
        return value
    denominator = _or_never(summary, claim.over)
    if denominator is MISSING:
        return MISSING
    if claim.seeds and isinstance(value, list) and isinstance(denominator, list) and len(value) == len(denominator):
        return [_ratio(x, y) for x, y in zip(value, denominator)]
    return _ratio(value, denominator)


def _or_never(summary: dict[str, Any], key: str) -> Any:
    """:func:`lookup`, with +inf for a null that the summary lists under ``not_reached`` (an event that never
    happened within the run: docs/conventions.md#never)."""
    value = lookup(summary, key)
    return math.inf if value is None and key in summary.get("not_reached", ()) else value


def _ratio(value: Any, denominator: Any) -> float | None:
    x, y = number(value), number(denominator)
    if x is None or not y or (math.isinf(x) and math.isinf(y)):
        return None
    return x / y


def over_seeds(values: Any) -> tuple[float, float, int] | None:
    """Mean, standard deviation (ddof 1) and count of a list of per-seed values; None when it is not a list or one
    of its values is not a finite number (docs/conventions.md#claims)."""
    if not isinstance(values, (list, tuple)) or not values:
        return None
    numbers = [number(v) for v in values]
    if any(x is None for x in numbers):
        return None
    xs = [float(x) for x in numbers if x is not None]
    if not all(math.isfinite(x) for x in xs):
        return None
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return mean, sd, len(xs)


def show(value: Any) -> str:
    """A measured value as the report prints it."""
    if value is MISSING:
        return "—"
    if value is None:
        return "null"
    if isinstance(value, float) and math.isinf(value) and value > 0:
        return "never (not reached in the run)"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _verdict(claim: Claim, value: Any) -> tuple[str, Any, str, dict[str, Any]]:
    """(``passed`` | ``failed`` | ``undefined``, the judged value, the reason, per-seed columns) for a measured
    ``value``: with ``claim.seeds``, the mean of the per-seed values."""
    if value is MISSING:
        return "undefined", value, f"the summary has no key {claim.key!r}", {}
    seeds: dict[str, Any] = {}
    if claim.seeds and isinstance(claim.test, Is):
        return _verdict_every_seed(claim, value)
    if claim.seeds:
        stats = over_seeds(value)
        if stats is None:
            return "undefined", value, f"needs one finite value per seed at {claim.key!r}, got {show(value)}", {}
        mean, sd, n = stats
        seeds = {"measured_sd": sd, "n_seeds": n, "per_seed": ", ".join(f"{v:.4g}" for v in value)}
        text = f"{mean:.4g} ± {2 * sd:.2g} (2 s.d., {n} seeds)"
        if n < claim.seeds:
            return "undefined", mean, f"{n} seeds, the claim is judged over at least {claim.seeds}", seeds
        seeds["measured_text"] = text
        value = mean
    if not claim.test.defined(value):
        return "undefined", value, f"measured {show(value)}: the test {claim.test} is not defined on it", seeds
    if claim.test.holds(value):
        return "passed", value, "", seeds
    return "failed", value, f"measured {show(value)}", seeds


def _verdict_every_seed(claim: Claim, value: Any) -> tuple[str, Any, str, dict[str, Any]]:
    """:func:`_verdict` of an :class:`Is` claim over seeds: a label or a flag has no mean, so it holds when it
    holds on every seed, and is undefined when a seed's value is (docs/conventions.md#claims)."""
    values = value if isinstance(value, list) else [value]
    n = len(values)
    seeds = {"n_seeds": n, "per_seed": ", ".join(show(v) for v in values)}
    held = sum(bool(claim.test.holds(v)) for v in values)
    seeds["measured_text"] = f"{held} of {n} seeds {claim.test}"
    if n < claim.seeds:
        return "undefined", value, f"{n} seeds, the claim is judged over at least {claim.seeds}", seeds
    if not all(claim.test.defined(v) for v in values):
        return "undefined", value, f"a seed's value is not defined for {claim.test}: {seeds['per_seed']}", seeds
    if held == n:
        return "passed", values[0], "", seeds
    return "failed", values[0], f"holds on {held} of {n} seeds", seeds


def judge(
    claim: Claim,
    summary: dict[str, Any] | None,
    *,
    smoke: bool = False,
    gpu: bool = False,
    reason: str = "",
    draws: list[dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """One row of ``claims.parquet`` for ``claim`` against a run's ``summary`` (None: the run is missing or
    failed, ``reason`` says why).  ``smoke``: a smoke-size run, reported as "smoke, not judged"; ``gpu``: the
    run had a GPU (a claim that needs the paper's scale is judged only then); ``draws``: the summaries of the
    experiment's other data draws (None for one not finished), whose values join the run's own, one per seed."""
    value = MISSING if summary is None else measure(claim, summary)
    if claim.seeds and draws and value is not MISSING and not isinstance(value, list):
        values = [value, *(MISSING if d is None else measure(claim, d) for d in draws)]
        value = [v for v in values if v is not MISSING]  # a draw not finished: fewer seeds, so undefined
    seeds: dict[str, Any] = {}
    if summary is None:
        status, why = "not run", reason or "the experiment did not run"
    elif claim.needs and not gpu:
        status, why = SCALE, f"needs {claim.needs}"
    elif smoke:
        status, why = "smoke, not judged", "smoke-size run: checks the path, not the number"
    else:
        status, value, why, seeds = _verdict(claim, value)
    return {
        "id": claim.id,
        "paper": claim.paper,
        "where": claim.where,
        "statement": claim.statement,
        "key": claim.key,
        "measured": number(value),
        "measured_text": show(value),
        "measured_sd": None,
        "n_seeds": None,
        "per_seed": "",
        "expected": claim.expected,
        "test": str(claim.test),
        "status": status,
        "reason": why,
        "kind": claim.kind if status == "failed" else "",
        "if_failed": claim.if_failed,
        "evidence": _evidence(claim.evidence),
        **seeds,
    }


def _evidence(evidence: Evidence | None) -> str:
    """The evidence of a finding, as one line per part ("" without one)."""
    if evidence is None:
        return ""
    return f"paper: {evidence.sentence}\nregime: {evidence.regime}\nre-implementation: {evidence.reimplementation}"


def judge_control(claim: Claim, summary: dict[str, Any] | None, *, smoke: bool = False) -> dict[str, Any]:
    """The control columns of ``claim``'s row: its test applied to the control run's ``summary`` (None: not run).
    ``rejects`` when the test fails there on a defined value (the check can fail), ``accepts`` when it holds (it
    cannot tell the broken mechanism from the working one), ``undefined`` when the value is missing there (no
    control at all: docs/conventions.md#controls)."""
    if not claim.control:
        return {"control": "", "control_measured_text": "", "control_status": ""}
    value = MISSING if summary is None else measure(claim, summary)
    if smoke:
        status = "smoke, not judged"
    elif summary is None:
        status = "not run"
    else:  # a control runs at one data draw: a seeded claim's test applies to that draw's value
        one = replace(claim, seeds=0) if claim.seeds and not isinstance(value, list) else claim
        verdict, value = _verdict(one, value)[:2]
        status = {"passed": "accepts", "failed": "rejects"}.get(verdict, "undefined")
    return {"control": claim.control, "control_measured_text": show(value), "control_status": status}
