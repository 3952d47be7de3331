import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab import experiments
from inductionlab.config import ConfigError
from inductionlab.experiments.ren import scb_transfer
from inductionlab.experiments.ren.scb_transfer import calibrate_c, the_c
from inductionlab.experiments.ren.scb_transfer.measures import (
    after_start,
    at_budget,
    crossing,
    first_hit,
    landings,
    median_cost,
    slope_ratio,
    slopes,
    support_errors,
)
from inductionlab.runs import RunContext
from inductionlab.train.proximal import train_scb


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
        "scb-transfer",
        preset="smoke",
        overrides={"batch_per_log_T": 0, "c_grid": "5,20,80,320,1280", "calibration_instances": 8},
    )
    c, tries = calibrate_c(cfg)
    assert [t["c"] for t in tries] == [5.0, 20.0, 80.0, 320.0, 1280.0][: len(tries)]
    assert c == tries[-1]["c"] and [t["batch"] for t in tries] == [round(t["c"] * math.log(20)) for t in tries]
    assert all(t["failed"] <= 8 for t in tries) and (tries[-1]["failed"] == 0 or c == 1280.0)
    assert all(t["false_positives"] + t["misses"] > 0 for t in tries[:-1])
    assert tries[-1]["false_positives"] + tries[-1]["misses"] == 0 or c == 1280.0
    assert calibrate_c(cfg)[0] == c  # the calibration draw is seeded


def test_support_errors_count_false_positives_and_misses_of_the_rounding():
    Q = torch.tensor([[[0.5], [0.5], [0.0], [0.0]]])  # (S=1, T=4, N=1), support {0, 1}
    A = torch.tensor([[[0.6], [0.1], [0.3], [0.0]]])
    assert support_errors(A, Q, torch.tensor(0.2).view(1, 1, 1)) == ([1], [1])
    assert support_errors(Q, Q, torch.tensor(0.2).view(1, 1, 1)) == ([0], [0])


def test_the_calibrated_c_is_cached_with_the_run_s_fingerprint(tmp_path, monkeypatch):
    cfg = experiments.configure(
        "scb-transfer", preset="smoke", overrides={"batch_per_log_T": 0, "c_grid": "5,20", "calibration_instances": 4}
    )
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
    assert the_c(replace(cfg, gamma=0.0, batch_per_log_T=7.0), RunContext()) == (7.0, [])  # the control's budgets


def test_without_pretraining_the_transfer_arm_is_the_scratch_arm_and_every_ratio_is_one():
    overrides = {"gamma": 0.0, "train.steps": 400, "train.stage1_steps": 400, "target": 0.3, "stage2_target": 0.2}
    cfg = experiments.configure("scb-transfer", preset="smoke", overrides=overrides)
    out = experiments.get("scb-transfer").run(cfg, RunContext(threads=1, progress=False))
    s, m = out.summary, out.tables["metrics"]
    assert s["c"] == 50.0 and s["kappa_sweep"] == {} and s["landed_false_positives"] == {20: [], 40: []}
    # both arms are Algorithm 1 from V₀ = μ1ᵀ, A₀ = 11ᵀ/T under train's settings, Stage 1 first, stopped at ε₂
    for T in (20, 40):
        alone = train_scb(scb_transfer.arm(cfg, 0.2, transferred=False), scb_transfer._instances(cfg, T), cfg.task.Q)
        for method in ("scratch", "transfer"):
            got = m[(m["T"] == T) & (m.method == method)]
            np.testing.assert_array_equal(got.dist_A_norm.to_numpy(), alone[2].dist_A_norm.to_numpy())
    assert (m.stage == 1).any() and (m.samples % 64 == 0).all()
    assert (
        s["samples_to_eps2"]["transfer"]
        == s["samples_to_eps2"]["scratch"]
        == {T: median_cost(first_hit(m[(m["T"] == T) & (m.method == "scratch")], 0.2)) for T in (20, 40)}
    )
    assert s["log_log_slope"]["transfer"] == s["log_log_slope"]["scratch"]
    assert s["log_T_slope"] == pytest.approx(math.log(math.log(40) / math.log(20)) / math.log(2))
    assert all(r in (None, 1.0) for r in s["slope_ratio"].values())
    assert s["one_step_batch"][40] == [round(50 * math.log(40))] * 2  # scratch read at the same budgets
    assert s["landed_median_worst_T"] == max(s["landed_median"].values())


def test_both_arms_run_train_s_settings_to_eps2_the_transfer_arm_from_stage_2():
    cfg = experiments.configure("scb-transfer", preset="smoke")
    scratch, transfer = (scb_transfer.arm(cfg, cfg.stage2_target, transferred=t) for t in (False, True))
    assert scratch == replace(cfg.train, stop_below=0.006, seed=cfg.seeds[0])  # the seed's data stream
    assert transfer == replace(scratch, stage1_steps=0, stage1_end="steps")
    t = scb_transfer.CONFIG.train
    assert (t.batch_size, t.eta2_t0, t.lam, t.stage1_end) == (256, 300.0, 1e-4, "signal") and t.steps * 256 > 10**6
    with pytest.raises(ConfigError, match="train.stop_below"):
        experiments.configure("scb-transfer", preset="smoke", overrides={"train.stop_below": 0.05})


def test_the_slope_ratio_is_defined_only_where_scratch_grows_faster_than_log_t():
    assert slope_ratio({"scratch": 0.5, "transfer": 0.135}, 0.135) == pytest.approx(0.27)
    assert slope_ratio({"scratch": 0.135, "transfer": 0.0}, 0.135) is None  # no poly(T) for the step to remove
    assert slope_ratio({"scratch": -0.01, "transfer": 0.17}, 0.135) is None  # a negative ratio would pass ≤ 0.5
    assert slope_ratio({"transfer": 0.1}, 0.135) is None and slope_ratio({"scratch": 0.5}, 0.135) is None


def test_every_instance_keeps_its_p_at_every_t_and_draws_q_per_t():
    cfg = experiments.configure("scb-transfer", preset="smoke")
    a, b = scb_transfer._instances(cfg, 20), scb_transfer._instances(cfg, 40)
    assert torch.equal(a.P, b.P) and torch.equal(a.mu, b.mu) and a.Q.shape[1] == 20 and b.Q.shape[1] == 40
    assert not torch.equal(a.P, scb_transfer._instances(cfg, 20, seed=1000).P)


def test_landings_report_the_median_per_t_and_the_share_with_exact_support():
    steps = {
        250: {"batch": [5, 5], "landed": [0.02, 0.04], "false_positives": [0, 3], "misses": [0, 0]},
        1000: {"batch": [7, 7], "landed": [0.01, 0.5, 0.03], "false_positives": [0, 0, 9], "misses": [0, 1, 0]},
    }
    out = landings(steps, 0.05)
    assert out["landed_median"] == {250: pytest.approx(0.03), 1000: 0.03}
    assert out["landed_exact_share"] == {250: 0.5, 1000: pytest.approx(1 / 3)}
    assert out["landed_within_target"][1000] == pytest.approx(2 / 3)
    assert out["landed_median_worst_T"] == pytest.approx(0.03) and out["landed_worst_over_T"] == 0.5


def test_scratch_is_read_at_a_budget_and_a_censored_median_enters_the_fit_at_its_budget():
    m = pd.DataFrame(dict(run=[0, 0, 0, 1, 1, 1], samples=[0, 10, 20] * 2, dist_A_norm=[0.9, 0.4, 0.01, 0.8, 0.7, 0.6]))
    assert at_budget(m, [15, 5]) == [0.4, 0.8]
    assert after_start(m.assign(start=[5] * 3 + [0] * 3, dist_A_norm=[0.9, 0.04, 0.01] * 2), 0.05) == [5.0, 10.0]
    fit = slopes({"scratch": {100: 10.0, 1000: None}, "transfer": {100: 10.0, 1000: 10.0}}, {"scratch": 100.0})
    assert fit["scratch"] == pytest.approx(1.0) and fit["transfer"] == pytest.approx(0.0)


def test_the_median_cost_counts_a_run_that_never_reached_the_target_as_the_costliest():
    nan = float("nan")
    assert median_cost([80000.0, nan, 105600.0, 86400.0]) == pytest.approx(96000.0)  # (86 400 + 105 600) / 2
    assert median_cost([1.0, 2.0, 3.0]) == 2.0
    assert median_cost([1.0, nan, nan, 2.0]) is None and median_cost([nan]) is None
