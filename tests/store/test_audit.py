"""The ledger audit's comparison (docs/conventions.md#portable-numbers): what it re-makes, and how close is close."""

import pytest

from inductionlab import experiments
from inductionlab.store import audit
from inductionlab.store.ledger import Ledger
from tests.ledger_spread import LEDGER


def test_a_run_is_re_made_at_the_precision_its_entry_records():
    """A bf16-made entry is re-made under bf16 on a CPU without it (``auto`` would train in float32 there)."""
    config = {"bf16": "auto", "steps": 10}
    assert audit.as_made(config, {"precision": "bf16 autocast"}) == {"bf16": "on", "steps": 10}
    assert audit.as_made(config, {"precision": "float32"}) == {"bf16": "off", "steps": 10}
    assert audit.as_made({"steps": 10}, {"precision": "float32"}) == {"steps": 10}  # no bf16 key: as planned
    assert config["bf16"] == "auto"  # the plan's config is not changed


def test_a_re_make_is_held_to_the_larger_of_the_golden_and_the_measured_spread():
    assert set(audit.CROSS_CPU) <= set(experiments.REGISTRY)
    for name in experiments.REGISTRY:
        rtol, atol = audit.tolerance(name)
        golden = audit.TOLERANCES.get(name, audit.FLOAT64)
        assert rtol >= golden[0] and atol >= golden[1]
    assert audit.tolerance("plateau-scaling") == (3e-3, 1e-9)  # measured 2.8e-4, wider than the golden 1e-5
    assert audit.tolerance("markov-stages") == audit.TOLERANCES["markov-stages"]  # within the golden: unlisted


def test_a_change_beyond_the_cross_cpu_tolerance_is_named():
    rtol, atol = audit.tolerance("plateau-scaling")
    committed = {"exponents_exact": {"w_star": -0.4094}}
    within = {"exponents_exact": {"w_star": -0.4094 * (1 + 0.9 * rtol)}}
    beyond = {"exponents_exact": {"w_star": -0.4094 * (1 + 1.1 * rtol) - atol}}
    assert audit.disagreements(committed, within, ["exponents_exact"], rtol, atol) == []
    (said,) = audit.disagreements(committed, beyond, ["exponents_exact"], rtol, atol)
    assert said.startswith("exponents_exact: committed")


@pytest.mark.skipif(not LEDGER.exists(), reason="no committed ledger")
def test_the_cross_cpu_tolerance_still_tells_two_data_draws_apart():
    """An audit must be able to fail: another data draw's measures, re-made anywhere, are not within the tolerance
    (on the committed ledger's main run and data draws of each experiment that has draws)."""
    entries, judged = Ledger(LEDGER).entries(), set()
    for name in audit.CROSS_CPU:
        jobs = {name} | {f"{name}.draw-{i}" for i in range(1, 100)}
        draws = [e["summary"] for e in entries if e["job"] in jobs]
        keys, (rtol, atol) = audit.read_keys(name), audit.tolerance(name)
        for i, x in enumerate(draws):
            for y in draws[i + 1 :]:
                assert audit.disagreements(x, y, keys, 0.0, 0.0), (name, "two draws with the same read measures")
                assert audit.disagreements(x, y, keys, rtol, atol), (name, rtol, atol)
                judged.add(name)
    # fast-induction and markov-full have one run each: their tolerances are judged by no pair of draws
    assert judged == set(audit.CROSS_CPU) - {"fast-induction", "markov-full"}


def test_an_experiment_that_re_makes_as_another_draw_is_audited_only_on_its_own_cpu_kind():
    made_on_amd = {"cpu": {"kind": "AMD AVX512 +bf16"}}
    assert audit.comparable({"experiment": "probe", **made_on_amd}, "AMD AVX512 +bf16")
    assert not audit.comparable({"experiment": "probe", **made_on_amd}, "Intel AVX512 +bf16 +amx")
    assert audit.comparable({"experiment": "markov-mi", **made_on_amd}, "Intel AVX512 +bf16 +amx")
    assert audit.ONE_PATH <= set(experiments.REGISTRY) and not audit.ONE_PATH & set(audit.CROSS_CPU)
