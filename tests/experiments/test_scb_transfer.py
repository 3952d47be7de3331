import json
import math
from dataclasses import replace

import pandas as pd
import pytest
import torch

from inductionlab import experiments
from inductionlab.experiments.ren import scb_transfer
from inductionlab.experiments.ren.scb_transfer import calibrate_c, the_c
from inductionlab.experiments.ren.scb_transfer.measures import crossing, median_cost, stage2_cost, support_errors
from inductionlab.runs import RunContext


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


def test_c_is_the_smallest_of_its_grid_whose_step_recovers_the_support_exactly():
    cfg = experiments.configure(
        "scb-transfer", preset="smoke", overrides={"batch_per_log_T": 0, "c_grid": "5,20,80,320,1280"}
    )
    c, tries = calibrate_c(cfg)
    assert [t["c"] for t in tries] == [5.0, 20.0, 80.0, 320.0, 1280.0][: len(tries)]
    assert c == tries[-1]["c"] and [t["batch"] for t in tries] == [round(t["c"] * math.log(20)) for t in tries]
    assert all(t["false_positives"] + t["misses"] > 0 for t in tries[:-1])
    assert tries[-1]["false_positives"] + tries[-1]["misses"] == 0 or c == 1280.0
    assert calibrate_c(cfg)[0] == c  # the calibration draw is seeded


def test_support_errors_count_false_positives_and_misses_of_the_rounding():
    Q = torch.tensor([[[0.5], [0.5], [0.0], [0.0]]])  # (S=1, T=4, N=1), support {0, 1}
    A = torch.tensor([[[0.6], [0.1], [0.3], [0.0]]])
    assert support_errors(A, Q, torch.tensor(0.2).view(1, 1, 1)) == ([1], [1])
    assert support_errors(Q, Q, torch.tensor(0.2).view(1, 1, 1)) == ([0], [0])


def test_the_calibrated_c_is_cached_with_the_run_s_fingerprint(tmp_path, monkeypatch):
    cfg = experiments.configure("scb-transfer", preset="smoke", overrides={"batch_per_log_T": 0, "c_grid": "5,20"})
    ctx = RunContext(run_dir=tmp_path, fingerprint="abc")
    c, tries = the_c(cfg, ctx)
    saved = json.loads((tmp_path / "checkpoints" / "calibration_c.json").read_text())
    assert saved == {"fingerprint": "abc", "rule": scb_transfer.RULE, "c": c, "tries": tries}

    def fail(cfg):
        raise AssertionError("calibrated again")

    monkeypatch.setattr(scb_transfer, "calibrate_c", fail)
    assert the_c(cfg, ctx) == (c, tries)
    with pytest.raises(AssertionError, match="calibrated again"):  # another config: its own calibration
        the_c(cfg, RunContext(run_dir=tmp_path, fingerprint="other"))
    assert the_c(replace(cfg, batch_per_log_T=7.0), RunContext()) == (7.0, [])
    assert the_c(replace(cfg, gamma=0.0), RunContext()) == (None, [])


def test_without_pretraining_the_transfer_arm_is_training_from_scratch_and_its_values_are_defined():
    cfg = experiments.configure(
        "scb-transfer",
        preset="smoke",
        overrides={"gamma": 0.0, "train.steps": 400, "train.stage1_steps": 400, "target": 0.3},
    )
    s = experiments.get("scb-transfer").run(cfg, RunContext(threads=1, progress=False)).summary
    assert s["c"] is None and s["kappa_sweep"] == {} and s["landed_worst_over_T"] is None
    assert s["samples_to_target"]["transfer"] == s["samples_to_target"]["scratch"]
    assert s["log_log_slope"]["transfer"] == s["log_log_slope"]["scratch"]
    assert s["transfer_over_scratch_at_max_T"] == 1.0


def test_stage_two_s_cost_counts_from_the_last_stage_one_evaluation():
    rows = [
        dict(run=0, samples=s, stage=1 if s <= 100 else 2, dist_A_norm=0.5 if s < 300 else 0.01)
        for s in (0, 100, 200, 300)
    ]
    rows += [dict(run=1, samples=s, stage=1 if s == 0 else 2, dist_A_norm=0.5) for s in (0, 100, 200, 300)]
    assert stage2_cost(pd.DataFrame(rows), 0.05)[0] == 200.0
    assert math.isnan(stage2_cost(pd.DataFrame(rows), 0.05)[1])


def test_the_median_cost_counts_a_run_that_never_reached_the_target_as_the_costliest():
    nan = float("nan")
    assert median_cost([80000.0, nan, 105600.0, 86400.0]) == pytest.approx(96000.0)  # (86 400 + 105 600) / 2
    assert median_cost([1.0, 2.0, 3.0]) == 2.0
    assert median_cost([1.0, nan, nan, 2.0]) is None and median_cost([nan]) is None
