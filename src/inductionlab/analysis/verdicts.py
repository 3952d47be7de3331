"""Verdicts (docs/conventions.md#claims): a claim of :mod:`inductionlab.analysis.claims` judged against a run's
summary and its data draws — passed, failed, undefined, did not learn (#learned), unearned (#controls) — and its
negative control's verdict beside it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from inductionlab.analysis.claim_tests import Is, Reached, number
from inductionlab.analysis.claims import (
    DID_NOT_LEARN,
    MIN_LEARNED,
    MISSING,
    SCALE,
    UNEARNED,
    Claim,
    Evidence,
    measure,
    or_never,
)

__all__ = ["earn", "judge", "judge_control", "learned_values", "over_seeds", "seed_rows", "show"]


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
    if claim.seeds and isinstance(claim.test, (Is, Reached)):  # a label or an event: judged on every seed
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
    if claim.needs and not gpu:  # run or not, this scale does not judge it
        status, why = SCALE, f"needs {claim.needs}"
    elif summary is None:
        status, why = "not run", reason or "the experiment did not run"
    elif smoke:
        status, why = "smoke, not judged", "smoke-size run: checks the path, not the number"
    elif claim.learned is not None:
        status, value, why, seeds = _verdict_learned(claim, [summary, *(draws or [])])
    else:
        status, value, why, seeds = _verdict(claim, value)
    return {
        "id": claim.id,
        "paper": claim.paper,
        "group": "observation" if claim.observation else "paper",
        "learned": "",
        "where": claim.where,
        "statement": claim.statement,
        "key": f"log10({claim.key})" if claim.log10 else claim.key,  # the value is in decades
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


def _verdict_learned(claim: Claim, sources: list[dict[str, Any] | None]) -> tuple[str, Any, str, dict[str, Any]]:
    """:func:`_verdict` of a claim with a :class:`Learned` precondition over the run and its draws ``sources``: the
    seeds that did not learn are counted and shown, never judged; the claim is judged on the others when at least
    :data:`MIN_LEARNED` of them (every one of fewer seeds) learned (docs/conventions.md#learned)."""
    gate = claim.learned
    assert gate is not None
    if any(s is None for s in sources):
        return "undefined", MISSING, "a data draw has not finished", {}
    rows = seed_rows(claim, [s for s in sources if s is not None])
    learned = [gate.test.defined(g) and bool(gate.test.holds(g)) for _, g, _ in rows]
    kept = [v for (v, _, _), ok in zip(rows, learned) if ok]
    missed = [
        f"{show(g)}" + (f" ({gate.shown} {show(x)})" if gate.shown else "")
        for (_, g, x), ok in zip(rows, learned)
        if not ok
    ]
    note = f"{len(kept)} of {len(rows)} seeds learned ({gate.what})" + (
        f"; did not learn: {', '.join(missed)}" if missed else ""
    )
    need = min(MIN_LEARNED, claim.seeds) if claim.seeds else 1
    if not rows:
        return "undefined", MISSING, f"the summary has no key {claim.key!r}", {"learned": note}
    if len(rows) < claim.seeds:  # too few draws to judge, learned or not
        return (
            "undefined",
            MISSING,
            f"{len(rows)} seeds, the claim is judged over at least {claim.seeds}",
            {"learned": note},
        )
    if len(kept) < need:
        return DID_NOT_LEARN, MISSING, f"{note}: judged on at least {need} that learned", {"learned": note}
    status, value, why, seeds = _verdict(
        replace(claim, seeds=need if claim.seeds else 0), kept if claim.seeds else kept[0]
    )
    return status, value, why, {**seeds, "learned": note}


def learned_values(claim: Claim, sources: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(the claim's values on the seeds of ``sources`` that passed its learned gate, the gate's value on every
    seed): what the claim is judged on and what its gate is judged on (docs/conventions.md#learned)."""
    gate = claim.learned
    assert gate is not None
    rows = seed_rows(claim, sources)
    return [v for v, g, _ in rows if gate.test.defined(g) and gate.test.holds(g)], [g for _, g, _ in rows]


def seed_rows(claim: Claim, sources: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """(the claim's value, the precondition's value, the shown value) per seed over ``sources`` (a run and its
    draws), the seeds where the claim's key is absent left out."""
    gate = claim.learned
    assert gate is not None
    on_gate = replace(claim, key=gate.key, over=gate.over, learned=None, log10=False)
    rows: list[tuple[Any, Any, Any]] = []
    for summary in sources:
        value, passed = measure(claim, summary), measure(on_gate, summary)
        shown = or_never(summary, gate.shown) if gate.shown else MISSING
        if value is MISSING:
            continue
        if isinstance(value, list):
            passed, shown = (_per_seed(claim, part, len(value)) for part in (passed, shown))
            rows += zip(value, passed, shown)
        else:
            rows.append((value, passed, shown))
    return rows


def _per_seed(claim: Claim, value: Any, n: int) -> list[Any]:
    """A gate's value (or shown value) beside a claim that reads ``n`` seeds: one per seed, or one for the run, which
    holds for each of its seeds.  A list of another length pairs no seed with its gate: a registry error."""
    if not isinstance(value, list):
        return [value] * n
    if len(value) != n:
        raise ValueError(f"{claim.id}: {len(value)} gate values for {n} seeds of {claim.key}")
    return value


def earn(row: dict[str, Any], claim: Claim) -> dict[str, Any]:
    """A pass must be able to fail (docs/conventions.md#controls): a paper claim that passes stays *passed* only when
    its mechanism-free control rejects; otherwise it is *unearned*, with why.  An observation keeps its pass."""
    if row["status"] != "passed" or claim.observation or row.get("control_status") == "rejects":
        return row
    said = {"accepts": "accepts it too", "undefined": "is undefined"}.get(row.get("control_status", ""), "did not run")
    why = f"its control {claim.control} {said}" if claim.control else "it has no mechanism-free control"
    return row | {"status": UNEARNED, "reason": f"passes, but {why}: a pass not shown able to fail"}


def _evidence(evidence: Evidence | None) -> str:
    """The evidence of a finding, as one line per part ("" without one)."""
    if evidence is None:
        return ""
    return f"paper: {evidence.sentence}\nregime: {evidence.regime}\nre-implementation: {evidence.reimplementation}"


def judge_control(
    claim: Claim, summary: dict[str, Any] | None | Sequence[dict[str, Any] | None], *, smoke: bool = False
) -> dict[str, Any]:
    """The control columns of ``claim``'s row: its test applied to the control run's ``summary`` (None: not run), or
    to the mean over its data draws' summaries (a list: ``Control.draws``; one not finished: not run).
    ``rejects`` when the test fails there on a defined value (the check can fail), ``accepts`` when it holds (it
    cannot tell the broken mechanism from the working one), ``undefined`` when the value is missing there (no
    control at all: docs/conventions.md#controls)."""
    if not claim.control:
        return {"control": "", "control_measured_text": "", "control_status": ""}
    runs = [summary] if summary is None or isinstance(summary, dict) else list(summary)
    finished = [r for r in runs if r is not None]
    done = bool(runs) and len(finished) == len(runs)
    value = control_value(claim, finished) if done else MISSING
    if smoke:
        status = "smoke, not judged"
    elif not done:
        status = "not run"
    else:  # a control runs at its data draws, on the seeds its `cheaper` states: judged on the seeds it ran
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        one = replace(claim, seeds=len(value) if isinstance(value, list) else 0)
        verdict, value, _, seeds = _verdict(one, value)
        status = {"passed": "accepts", "failed": "rejects"}.get(verdict, "undefined")
        return {
            "control": claim.control,
            "control_measured_text": seeds.get("measured_text", show(value)),
            "control_status": status,
        }
    return {"control": claim.control, "control_measured_text": show(value), "control_status": status}


def control_value(claim: Claim, runs: list[dict[str, Any]]) -> Any:
    """The claim's measured value on a control's runs: one run's as it is; over several data draws, their values one
    per seed (:data:`MISSING` where a run lacks the key), which the claim's test reads through their mean."""
    values = [measure(claim, run) for run in runs]
    if len(values) == 1 or any(v is MISSING for v in values):
        return values[0] if len(values) == 1 else MISSING
    return [x for v in values for x in (v if isinstance(v, list) else [v])]
