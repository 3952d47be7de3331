"""Which of the page's missing and stale jobs to run first (docs/conventions.md#ledger): those that unblock the
most claims per core-minute.  A claim is unblocked when every job it reads — its experiment's main run, its data
draws where it is judged over seeds, its negative control — is current.  Greedily, the claim whose remaining jobs
cost least comes first, and its jobs with it; jobs no claim reads come last, cheapest first."""

from __future__ import annotations

import time
from collections.abc import Mapping


def order(todo: list[str], needs: Mapping[str, set[str]], minutes: Mapping[str, float]) -> list[str]:
    """The jobs ``todo`` in the order to run them; ``needs``: claim → the jobs it reads; ``minutes``: each job's
    expected core-minutes."""
    left = set(todo)
    out: list[str] = []
    claims = {c: jobs & left for c, jobs in needs.items() if jobs & left}
    while claims:
        best = min(claims, key=lambda c: (sum(minutes[j] for j in claims[c]), c))
        chosen = sorted(claims.pop(best), key=lambda j: (minutes[j], j))
        out += chosen
        left -= set(chosen)
        claims = {c: jobs - set(chosen) for c, jobs in claims.items() if jobs - set(chosen)}
    return out + sorted(left, key=lambda j: (minutes[j], j))


class Budget:
    """``minutes`` core-minutes to spend: a job may start while the finished jobs' core-minutes plus the running
    ones' so far stay under it (``threads`` cores each)."""

    def __init__(self, minutes: float, threads: int, clock=time.monotonic) -> None:
        self.minutes, self.threads, self.clock = minutes, threads, clock
        self.running: dict[str, float] = {}
        self.spent = 0.0

    def spent_now(self) -> float:
        now = self.clock()
        return self.spent + sum(now - t for t in self.running.values()) * self.threads / 60

    def may_start(self, job: str) -> bool:
        if self.spent_now() >= self.minutes:
            return False
        self.running[job] = self.clock()
        return True

    def finished(self, job: str) -> None:
        started = self.running.pop(job, self.clock())
        self.spent += (self.clock() - started) * self.threads / 60


class Expected(Budget):
    """A :class:`Budget` spent at each job's expected core-minutes when it starts (a cluster's jobs, submitted at
    once, are not watched as they run)."""

    def __init__(self, minutes: float, costs: Mapping[str, float]) -> None:
        super().__init__(minutes, 1, clock=lambda: 0.0)
        self.costs = costs

    def may_start(self, job: str) -> bool:
        if self.spent + self.costs[job] > self.minutes and self.spent > 0:
            return False
        self.spent += self.costs[job]
        return True

    def finished(self, job: str) -> None:
        return None
