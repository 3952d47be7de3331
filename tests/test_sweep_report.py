"""The sweep report: the wall-time estimate's wording and the keys constant across a sweep, which get no panel."""

import math

import pandas as pd

from inductionlab import sweep_report


def test_constant_grid_keys_and_numbers_are_named_not_plotted():
    table = pd.DataFrame(
        {
            "task.L": [8, 8, 12, 12],
            "task.w_star": [0.49] * 4,
            "seed": [0, 1, 0, 1],
            "T_I": [205.0, 206.0, 207.0, 208.0],
            "T_50": [math.nan] * 4,
            "n_runs": [1, 1, 1, 1],
        }
    )
    fixed = sweep_report.constants(table, ["task.L", "task.w_star", "T_I", "T_50", "n_runs"])
    assert set(fixed) == {"task.w_star", "T_50", "n_runs"}
    note = sweep_report._constant_note(fixed)
    assert note == "constant across the sweep: task.w_star = 0.49, T_50 not reached, n_runs = 1"
    assert sweep_report._constant_note({}) == ""


def test_the_estimate_names_the_experiments_wall_field(monkeypatch):
    assert "markov-mi's wall:" in sweep_report.estimate("markov-mi", 10, 2)
    real = sweep_report.experiments.get("markov-mi")

    class NoTime:
        wall = "varies"

    monkeypatch.setattr(sweep_report.experiments, "get", lambda name: NoTime if name == "x" else real)
    assert (
        sweep_report.estimate("x", 3, 1)
        == "3 jobs on 1 worker (no wall-time estimate: x's wall field gives no time: 'varies')"
    )
    NoTime.wall = ""
    assert sweep_report.estimate("x", 3, 1).endswith("x's wall field is empty)")


def test_bookkeeping_columns_are_not_reported_as_measures():
    table = pd.DataFrame({"seed": [0, 1], "threads": [1, 1], "wall_seconds": [2.0, 3.0], "T_50": [5.0, 6.0]})
    assert sweep_report.metrics_of(table, "lazy-to-rich", []) == ["T_50"]
