import pytest

from inductionlab import experiments
from inductionlab.experiments.scb_transfer import _median, crossing, one_step_batch


def test_crossing_is_where_the_two_log_log_fits_meet():
    Ts = (100, 400, 1600)
    median = {"scratch": {T: 10.0 * T**0.5 for T in Ts}, "transfer": {T: 400.0 for T in Ts}}
    out = crossing(median)
    assert out["crossing_T"] == pytest.approx(1600.0)  # 10·√T = 400
    assert out["transfer_cheaper_at_T"] == [] and out["crossing_reason"] == ""
    behind = crossing({"scratch": {1000: 2.0, 4000: 2.5}, "transfer": {1000: 4.0, 4000: 6.0}})
    assert behind["crossing_T"] < 1000 and "no crossing ahead" in behind["crossing_reason"]
    median["scratch"][1600] = None
    assert crossing({**median, "scratch": {100: 1.0, 1600: None}})["crossing_T"] is None
    parallel = crossing({"scratch": {1: 1.0, 2: 2.0}, "transfer": {1: 2.0, 2: 4.0}})
    assert parallel["crossing_T"] is None and "parallel" in parallel["crossing_reason"]


def test_the_one_step_batch_is_the_smallest_power_of_two_that_lands_in_stage_two_s_basin():
    cfg = experiments.configure("scb-transfer", preset="smoke", overrides={"batch_log2": "4,12", "transfer_samples": 0})
    batch, tries = one_step_batch(cfg, 40, 0.5)
    assert [t["batch"] for t in tries] == [2**k for k in range(4, 4 + len(tries))]
    assert batch == tries[-1]["batch"]
    assert all(t["dist_A_norm"] > cfg.calibration_tol for t in tries[:-1])
    assert tries[-1]["dist_A_norm"] <= cfg.calibration_tol or batch == 2**12
    again, _ = one_step_batch(cfg, 40, 0.5)
    assert again == batch  # the calibration draw is seeded


def test_the_median_cost_counts_a_run_that_never_reached_the_target_as_the_costliest():
    nan = float("nan")
    assert _median([80000.0, nan, 105600.0, 86400.0]) == pytest.approx(96000.0)  # (86 400 + 105 600) / 2
    assert _median([1.0, 2.0, 3.0]) == 2.0
    assert _median([1.0, nan, nan, 2.0]) is None and _median([nan]) is None
