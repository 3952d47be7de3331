"""Where a run's time goes (docs/conventions.md#profile): sections, their nesting and the runner's profile."""

import json

import pytest

from inductionlab import timing
from inductionlab.cli import main


class _Clock:
    """A clock that moves only when told: the sections' arithmetic is checked without depending on how long a
    sleep takes on a loaded machine."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def process_time(self) -> float:
        return 0.0


def test_nested_sections_keep_only_their_own_time_and_the_parts_add_up(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(timing, "time", clock)
    start = clock.perf_counter()
    with timing.record() as parts:
        with timing.section("steps"):
            clock.sleep(0.05)
            with timing.section("data"):
                clock.sleep(0.1)
        with timing.section("steps"):
            clock.sleep(0.02)
        clock.sleep(0.03)
    wall = clock.perf_counter() - start
    assert parts["data"] == pytest.approx(0.1)
    assert parts["steps"] == pytest.approx(0.07)  # the nested data section is not counted twice
    assert parts["other"] == pytest.approx(0.03)
    assert sum(v for k, v in parts.items() if k != "startup") == pytest.approx(wall)


def test_a_section_outside_a_record_costs_nothing_and_records_nothing():
    with timing.section("steps"):
        pass
    with timing.record() as parts:
        pass
    assert set(parts) <= {"other", "startup"}


def test_a_run_writes_its_profile_beside_its_wall_time(tmp_path):
    assert main(["run", "heads-dims", "--preset", "smoke", "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    parts = summary["profile"]
    assert {"steps", "eval", "data", "plot", "io", "other"} <= set(parts)
    assert all(v >= 0 for v in parts.values())
    run = sum(v for k, v in parts.items() if k not in ("plot", "io", "startup"))
    assert run == pytest.approx(summary["wall_seconds"], rel=0.05, abs=0.05)  # the run's parts are its wall time
