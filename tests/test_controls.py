"""Every negative control breaks its claim's mechanism, not the measurement (docs/conventions.md#controls): the
claim's value is defined on the control's run, and no control sets, clamps or freezes the quantity its claim
measures."""

import functools

import pytest

from inductionlab import experiments
from inductionlab.analysis.claims import MISSING, Claim, Control, measure
from inductionlab.analysis.verdicts import over_seeds
from inductionlab.runs import RunContext
from tests.analysis.test_claims import DEFAULT_ONLY

PAIRS = [
    (name, control, [c for c in exp.claims if c.control == control.name])
    for name, exp in experiments.REGISTRY.items()
    for control in exp.controls
]


def _targets(control: Control) -> set[str]:
    """The parameters a control clamps or freezes (``intervene.clamp`` "name=value@a:b", ``intervene.freeze``)."""
    out = set()
    for key, value in control.overrides.items():
        if key.startswith("intervene."):
            items = (value,) if isinstance(value, str) else tuple(value)
            out |= {str(item).split("=", 1)[0].strip() for item in items}
    return out


def sets_its_measure(claim: Claim, control: Control) -> bool:
    """True when the control writes the claim's measured quantity: an override of the claim's key, or a clamp or
    freeze of a parameter that names a part of it (``w_KQ`` in ``final.w_KQ`` or ``literal.w_KQ_over_predicted``,
    ``blocks.0.attn.p`` in ``p_relative_growth``)."""
    parts = {p for key in (claim.key, claim.over) if key for p in key.split(".")}
    names = {t.rsplit(".", 1)[-1] for t in _targets(control)}
    return claim.key in control.overrides or any(p == n or p.startswith(f"{n}_") for p in parts for n in names)


def test_the_check_catches_a_control_that_clamps_the_measured_quantity():
    claim = Claim(id="x", paper="wang", where="w", statement="s", key="final.w_KQ", expected="e", test=None)  # type: ignore[arg-type]
    assert sets_its_measure(claim, Control(name="c", breaks="b", overrides={"intervene.clamp": ("w_KQ=0.01",)}))
    assert not sets_its_measure(claim, Control(name="c", breaks="b", overrides={"task.w_star": 0.3}))
    growth = Claim(id="y", paper="wang", where="w", statement="s", key="p_relative_growth", expected="e", test=None)  # type: ignore[arg-type]
    assert sets_its_measure(growth, Control(name="c", breaks="b", overrides={"intervene.freeze": ("blocks.0.attn.p",)}))


@pytest.mark.parametrize("name,control,claims", PAIRS, ids=[f"{n}@{c.name}" for n, c, _ in PAIRS])
def test_each_control_is_named_and_leaves_its_claims_measure_alone(name, control, claims):
    assert claims, f"{name}: control {control.name} is named by no claim"
    for claim in claims:
        assert not sets_its_measure(claim, control), f"{claim.id}: {control.name} sets what the claim measures"


@functools.cache
def _smoke(name: str, overrides: tuple = ()) -> dict:
    cfg = experiments.configure(name, preset="smoke", overrides=dict(overrides))
    return experiments.get(name).run(cfg, RunContext(threads=1, progress=False)).summary


def _defined(claim: Claim, value) -> bool:
    if value is MISSING:
        return False
    return bool(over_seeds(value)) if claim.seeds else claim.test.defined(value)


@pytest.mark.parametrize("name,control,claims", PAIRS, ids=[f"{n}@{c.name}" for n, c, _ in PAIRS])
def test_each_control_gives_its_claims_a_defined_value_at_smoke_size(name, control, claims):
    """The control's run has each claim's key, and a number wherever the experiment's own smoke run has one: a
    null there would make the control *undefined*, not a rejection.  (A phase time that a smoke-size run does not
    reach is null on both; the report judges the control at its own preset.)"""
    summary = _smoke(name, tuple(control.overrides.items()))
    for claim in claims:
        if claim.id in DEFAULT_ONLY:
            continue
        value = measure(claim, summary)
        assert value is not MISSING, f"{claim.id}: no {claim.key!r} on control {control.name}"
        if _defined(claim, measure(claim, _smoke(name))):
            assert _defined(claim, value), f"{claim.id}: {claim.key!r} is {value!r} on control {control.name}"
