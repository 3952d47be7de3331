"""The power of a claim's protocol (docs/conventions.md#calibration): from its calibration seeds' values (mean m,
standard deviation s) and the number n of judged draws, the margin |m − threshold| / (s / √n) — how many standard
errors of the judged mean lie between the calibration mean and the threshold nearest it.  A claim is *powered* when
the margin is at least :data:`Z` (the judged mean then lands on the calibration side with ≥ 95 % probability), and
power sets the draws: n = ⌈(Z · s / |m − threshold|)²⌉, at least :data:`MIN_DRAWS`.

A per-draw gate (a model's *learned* precondition) is powered when the calibration seeds that pass it lie beyond it
by at least :data:`GATE_S` of their standard deviations (a gate without a bound, such as ``Reached``: when one
passes), and, where some seeds fail it, when the judged draws hold enough that learn with ≥ 95 % probability
(:func:`of_gate`); a label or a flag (``Is``) or an event (``Reached``) when every calibration seed agrees; a
control when its value (the mean of its k values, one per seed over its draws) lies beyond the threshold by the
margin, on the other side of it from the claim's calibration mean, in units of s / √k.  A claim is powered only
with its gate and its control."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from inductionlab.analysis.claim_tests import Between, Is, Near, Reached, Test, number
from inductionlab.analysis.claims import MIN_LEARNED, MISSING, Claim, measure
from inductionlab.analysis.verdicts import control_value, judge_control, learned_values

Z = 1.645  # the one-sided 95 % quantile of the normal
GATE_S = 2.0  # a gate's nearest calibration seed, in standard deviations
P_MISS = 0.05  # a gate some seeds fail: the chance, at most, that too few of the judged draws learn
MIN_DRAWS = 3


@dataclass(frozen=True)
class Power:
    """``margin`` (None: undefined — fewer than two finite values, or a test with no threshold), ``n`` the judged
    draws it assumes, ``needed`` the draws that would power it (None where none would: m on the threshold), the
    calibration mean and standard deviation."""

    margin: float | None
    n: int
    needed: int | None
    mean: float | None = None
    sd: float | None = None
    learned: float | None = None  # a gate's: the fraction of calibration seeds that pass it
    chance: float | None = None  # a gate's: P(enough of the n draws learn), where some seeds did not

    @property
    def powered(self) -> bool:
        return self.margin is not None and self.margin >= Z


def thresholds(test: Test) -> list[float]:
    """The finite bounds of a numeric test: Between's lo and hi, Near's target ± its tolerance."""
    if isinstance(test, Between):
        return [b for b in (test.lo, test.hi) if b is not None and math.isfinite(b)]
    if isinstance(test, Near):
        tol = max(test.atol, test.rtol * abs(test.target))
        return [test.target - tol, test.target + tol]
    return []


def mean_sd(values: Sequence[object]) -> tuple[float, float] | None:
    xs = [x for x in map(number, values) if x is not None and math.isfinite(x)]
    if len(xs) < 2 or len(xs) < len(values):
        return None
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def of_claim(test: Test, values: Sequence[object], n: int) -> Power:
    """The power of a claim judged on the mean of ``n`` draws, from its calibration seeds' ``values``; a test without
    a bound (a label, ``Is``; an event, ``Reached``) is judged on every draw, so it is powered when every calibration
    seed agrees."""
    if isinstance(test, (Is, Reached)):
        if any(not test.defined(v) for v in values):  # a missing value agrees with nothing
            return Power(None, n, None)
        agree = len({bool(test.holds(v)) for v in values}) == 1 and len(values) >= 2
        return Power(math.inf if agree else 0.0, n, max(n, MIN_DRAWS) if agree else None)
    stats, bounds = mean_sd(values), thresholds(test)
    if stats is None or not bounds:
        return Power(None, n, None)
    m, s = stats
    gap = min(abs(m - b) for b in bounds)
    if s == 0:
        return Power(math.inf if gap > 0 else 0.0, n, MIN_DRAWS if gap > 0 else None, m, s)
    needed = max(MIN_DRAWS, math.ceil((Z * s / gap) ** 2)) if gap > 0 else None
    return Power(gap / (s / math.sqrt(n)), n, needed, m, s)


def of_gate(test: Test, values: Sequence[object], n: int = 1, need: int = 1) -> Power:
    """A per-draw gate's power (docs/conventions.md#learned): the calibration seeds that pass it lie inside it by at
    least :data:`GATE_S` standard deviations of theirs (``margin``; a gate without a bound, ``Reached`` or ``Is``:
    ∞ when one passes); where some seeds fail it (a model that did not learn within the budget) the claim's ``n``
    draws must also hold at least ``need`` that learn with ≥ 95 % probability at the calibration's learned fraction
    (``chance``; ``needed``: the draws that would).  No seed passing it: margin 0."""
    bounds = thresholds(test)
    if len(values) < 2:
        return Power(None, n, None)
    passing = [v for v in values if test.defined(v) and test.holds(v)]  # an undefined value did not learn
    fraction = len(passing) / len(values)
    chance = _at_least(need, n, fraction) if passing and fraction < 1 else None
    needed = (
        next((k for k in range(n, 65) if _at_least(need, k, fraction) >= 1 - P_MISS), None)
        if chance is not None
        else None
    )
    if not passing:
        return Power(0.0, n, None, learned=0.0)
    if not bounds:
        return Power(math.inf, n, needed, learned=fraction, chance=chance)
    stats = mean_sd(passing)
    if stats is None:  # one seed learned: no spread to read its distance in
        return Power(None, n, needed, learned=fraction, chance=chance)
    xs = [float(number(v)) for v in passing]  # type: ignore[arg-type]  # defined: a number
    inside = min(-_outside(test, x) for x in xs)  # the nearest passing seed's distance inside the gate
    m, s = stats
    margin = inside / s if s > 0 else (math.inf if inside > 0 else 0.0)
    return Power(margin, n, needed, m, s, learned=fraction, chance=chance)


def surely_learned(p: Power, n: int) -> int:
    """Of ``n`` draws, how many learn with ≥ 95 % probability at a gate's calibration learned fraction (:func:`of_gate`:
    all of them where every calibration seed learned): the draws a gated claim's margin may count on."""
    if p.learned is None or p.learned >= 1:
        return n
    return max((k for k in range(n + 1) if _at_least(k, n, p.learned) >= 1 - P_MISS), default=0)


def gate_powered(p: Power) -> bool:
    """A gate's power as :func:`of_gate` reads it: its learned seeds clear of it, and enough draws that learn."""
    return p.margin is not None and p.margin >= GATE_S and (p.chance is None or p.chance >= 1 - P_MISS)


def _at_least(k: int, n: int, f: float) -> float:
    """P(at least ``k`` of ``n`` independent draws learn), each with probability ``f``."""
    return 1.0 - sum(math.comb(n, i) * f**i * (1 - f) ** (n - i) for i in range(min(k, n + 1)))


def of_control(test: Test, claim_values: Sequence[object], control: object) -> Power:
    """A control's power, by the claim's own rule: the distance of its value (the mean of its k values, one per seed
    over its data draws) outside the claim's passing interval (beyond the bound it crossed, on either side of a
    two-sided test), in units of s / √k, s the claim's calibration standard deviation."""
    k = len(control) if isinstance(control, list) else 1
    if isinstance(control, list):  # one value per seed: their mean, as the claim's test reads it
        stats = mean_sd(control)
        never = control and all(number(v) == math.inf for v in control)  # an event no draw reached
        control = stats[0] if stats else (math.inf if never else (control[0] if len(control) == 1 else None))
    stats, x, bounds = mean_sd(claim_values), number(control), thresholds(test)
    if stats is None or x is None or not bounds:
        return Power(None, k, None)
    m, s = stats
    beyond = _outside(test, x)  # positive on the failing side of whichever bound it crossed
    return Power(beyond / (s / math.sqrt(k)) if s > 0 else (math.inf if beyond > 0 else 0.0), k, None, m, s)


def _outside(test: Test, x: float) -> float:
    """How far ``x`` lies outside the test's passing interval (negative: inside it, by its distance to the nearer
    bound); a two-sided test is failed on either side."""
    lo, hi = (test.lo, test.hi) if isinstance(test, Between) else (None, None)
    if isinstance(test, Near):
        tol = max(test.atol, test.rtol * abs(test.target))
        lo, hi = test.target - tol, test.target + tol
    return max(lo - x if lo is not None else -math.inf, x - hi if hi is not None else -math.inf)


def per_seed(claim: Claim, summaries: Sequence[Mapping[str, Any] | None], key: str = "", over: str = "") -> list:
    """The values a claim's key (or ``key`` / ``over``) holds over ``summaries``, one per seed (a run whose key
    holds one value per seed gives each; a missing run or key gives none)."""
    probe = replace(
        claim, key=key or claim.key, over=over if key else claim.over, learned=None, log10=claim.log10 and not key
    )
    out: list = []
    for summary in summaries:
        value = MISSING if summary is None else measure(probe, dict(summary))
        if value is not MISSING:
            out += value if isinstance(value, list) else [value]
    return out


def _spread(p: Power) -> str:
    """``: m …, s …`` of a numeric claim's calibration values (nothing for a label's)."""
    return "" if p.mean is None or p.sd is None else f": m {p.mean:.4g}, s {p.sd:.2g}"


def columns(
    claim: Claim,
    calibration: Sequence[Mapping[str, Any] | None],
    n: int,
    control: Sequence[Mapping[str, Any] | None] = (),
) -> dict[str, Any]:
    """The power columns of a claim's row on the page, from its calibration runs' summaries (``calibration``), the
    number ``n`` of judged values and its control's summaries (its run and data draws): the margin and its text,
    whether it is powered — the claim, its learned gate and its control all — the draws that would power the claim
    where its own margin is what falls short, and the gate's and the control's margins (the control's over its
    ``control_k`` values).  A gated claim's margin counts the draws that surely learn (:func:`surely_learned`)."""
    runs = [dict(c) for c in calibration if c is not None]
    if not runs or len(runs) < len(calibration):
        done = len(runs)
        text = "no calibration run" if not done else f"no calibration run yet ({done} of {len(calibration)} draws)"
        return {"margin": None, "margin_text": text, "powered": False, "draws_needed": None}
    values: list[Any] = per_seed(claim, runs)
    out: dict[str, Any] = {}
    short: list[str] = []  # what besides the claim's own margin keeps it from being powered
    counted = n
    if claim.learned is not None:  # a claim about a trained model is judged only on the seeds that learned
        values, gated = learned_values(claim, runs)
        gate, why = _gate(claim, gated, n)
        out["gate_margin"], counted = gate.margin, max(surely_learned(gate, n), 1)
        short += [why] if why else []
    p = of_claim(claim.test, values, counted)
    text = "undefined" if p.margin is None else ("∞" if math.isinf(p.margin) else f"{p.margin:.2g}")
    out |= {"margin": p.margin, "calibration_m": p.mean, "calibration_s": p.sd, "judged_n": n}
    if claim.control:
        out |= _control_columns(claim, values, control)
        if not out["control_powered"]:
            short.append(out["control_short"])
        out.pop("control_short")
    out["powered"] = p.powered and not short
    out["unpowered"] = "; ".join(([] if p.powered else ["its margin"]) + short)
    out["draws_needed"] = p.needed if not short else None
    learned = f", {counted} of them surely learned" if counted != n else ""
    spread = f"; calibration {len(values)} seeds{_spread(p)}"
    out["margin_text"] = f"{text} (n = {n}{learned}{spread})" + "".join(f"; {why}" for why in short)
    return out


def _gate(claim: Claim, gated: list[Any], n: int) -> tuple[Power, str]:
    """A gated claim's gate power over ``n`` draws, and why it falls short ("" when it is powered)."""
    assert claim.learned is not None
    need = min(MIN_LEARNED, claim.seeds) if claim.seeds else 1
    gate = of_gate(claim.learned.test, gated, n, need)
    if gate_powered(gate):
        return gate, ""
    if gate.margin is None or gate.margin < GATE_S:
        return gate, f"its learned gate {_number(gate.margin)} s < {GATE_S:g}"
    more = f"{gate.needed} draws would power it" if gate.needed else "no affordable number of draws powers it"
    return gate, (
        f"its learned gate passed on {gate.learned:.0%} of the calibration seeds: {need} of {n} draws learn "
        f"with probability {gate.chance:.2f} ({more})"
    )


def _control_columns(
    claim: Claim, values: Sequence[object], control: Sequence[Mapping[str, Any] | None]
) -> dict[str, Any]:
    """The control's margin over its ``control_k`` values, whether it is powered, and if not, why (a control not yet
    run, or undefined, has no power; a label's control, with no bound to lie beyond, is powered by rejecting)."""
    runs = [dict(c) for c in control if c is not None]
    if not control or len(runs) < len(control):
        return {
            "control_margin": None,
            "control_k": 0,
            "control_powered": False,
            "control_short": "its control has not run",
        }
    measured = control_value(replace(claim, learned=None), runs)
    k = len(measured) if isinstance(measured, list) else 1
    if not thresholds(claim.test):
        rejects = judge_control(claim, runs)["control_status"] == "rejects"
        return {
            "control_margin": None,
            "control_k": k,
            "control_powered": rejects,
            "control_short": "its control does not reject",
        }
    c = None if measured is MISSING else of_control(claim.test, values, measured).margin
    powered = c is not None and c >= Z
    return {
        "control_margin": c,
        "control_k": k,
        "control_powered": powered,
        "control_short": f"its control {_number(c)} s < {Z}",
    }


def _number(x: float | None) -> str:
    return "undefined" if x is None else ("∞" if math.isinf(x) else f"{x:.2g}")
