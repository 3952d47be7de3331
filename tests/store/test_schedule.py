"""Which jobs run first (docs/conventions.md#ledger): the claims unblocked per core-minute, greedily, and a budget of
core-minutes that stops new jobs once spent."""

from inductionlab.store import schedule


def test_the_cheapest_claim_comes_first_with_its_jobs():
    needs = {"big": {"a", "b"}, "small": {"c"}, "shared": {"c", "d"}}
    minutes = {"a": 10.0, "b": 20.0, "c": 1.0, "d": 2.0, "e": 0.5}
    order = schedule.order(["a", "b", "c", "d", "e"], needs, minutes)
    assert order == ["c", "d", "a", "b", "e"]  # small (1), then shared's rest (2), then big (30); e reads no claim


def test_a_budget_stops_new_jobs_once_spent():
    now = [0.0]
    spend = schedule.Budget(2.0, threads=2, clock=lambda: now[0])
    assert spend.may_start("a")
    now[0] = 30.0  # a has run 30 s on 2 threads: 1 core-minute
    assert spend.may_start("b")
    now[0] = 45.0
    spend.finished("a")  # 1.5 core-minutes
    assert abs(spend.spent_now() - 2.0) < 1e-9  # b's 0.5 running
    assert not spend.may_start("c")


def test_a_clusters_budget_spends_each_jobs_expected_minutes_at_submission():
    spend = schedule.Expected(5.0, {"a": 3.0, "b": 3.0, "c": 1.0})
    assert spend.may_start("a") and not spend.may_start("b") and spend.may_start("c")
