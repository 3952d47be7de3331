"""The claims table's power columns (docs/conventions.md#calibration) read calibration and control runs made by this
code only: an entry made by other code is stale, and a protocol is powered at the code it judges with."""

from __future__ import annotations

from typing import Any

from inductionlab import experiments
from inductionlab.claims_report import judge
from inductionlab.store.layout import calibration_job, draw_job
from inductionlab.store.plan import calibration_draws

NAME, CLAIM, KEY = "scb-softmax", "ren-fig2-patterns", "attention_cosine_linear_vs_softmax"


class Ledgerish:
    """A source whose every job finished with ``KEY`` = ``value``, the jobs in ``stale`` made by other code."""

    def __init__(
        self, values: dict[str, float], stale: frozenset[str] = frozenset(), missing: frozenset[str] = frozenset()
    ) -> None:
        self.values, self.stale_jobs, self.missing, self.info = values, stale, missing, {}

    def summary(self, job: str) -> dict[str, Any] | None:
        return None if job in self.missing else {KEY: self.values.get(job, 0.95)}

    def config(self, job: str) -> dict[str, Any]:
        return {}

    def failure(self, job: str) -> str:
        return ""

    def stale(self, job: str) -> str:
        return f"{job} stale: the key" if job in self.stale_jobs else ""

    def figures(self, experiment: str) -> list[tuple[str, bytes]]:
        return []


def _row(source: Ledgerish) -> dict[str, Any]:
    table = judge(source, [NAME], "all", smoke=False)  # type: ignore[arg-type]
    return table[table.id == CLAIM].iloc[0].to_dict()


def test_a_stale_calibration_run_powers_nothing():
    calibration = [calibration_job(NAME, i) for i in range(calibration_draws(NAME))]
    values = dict(zip(calibration, [0.95, 0.96, 0.94, 0.97]))
    assert experiments.get(NAME).claims and len(calibration) >= 2
    current = _row(Ledgerish(values))
    assert current["margin"] > 1.645 and current["calibration_m"] == sum(values.values()) / len(values)
    stale = _row(Ledgerish(values, frozenset(calibration[:1])))
    assert stale["margin"] is None or stale["margin"] != stale["margin"]  # None, or NaN in the frame
    assert stale["margin_text"] == f"no calibration run yet ({len(calibration) - 1} of {len(calibration)} draws)"
    assert not stale["powered"]


def test_a_stale_control_run_powers_nothing():
    claim = next(c for c in experiments.get(NAME).claims if c.id == CLAIM)
    control = f"{NAME}@{claim.control}"
    current = _row(Ledgerish({control: 0.1}))
    assert current["control_margin"] > 1.645 and current["powered"]
    stale = _row(Ledgerish({control: 0.1}, frozenset([control])))
    assert not stale["powered"] and "its control has not run" in stale["unpowered"]


def test_a_claim_is_powered_at_its_planned_draws_while_some_have_not_landed():
    draws = experiments.get(NAME).draws
    assert draws >= 2
    whole = _row(Ledgerish({}))
    partial = _row(Ledgerish({}, missing=frozenset([draw_job(NAME, draws - 1)])))
    assert whole["judged_n"] == partial["judged_n"] == draws
    assert partial["margin"] == whole["margin"] and partial["status"] == "undefined"
