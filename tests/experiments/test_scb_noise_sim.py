import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab import experiments
from inductionlab.experiments.ren.scb_noise_sim import (
    _after_tau1,
    _batch_sweep,
    _sweep_summary,
    _theorem_regime,
    batch_ratio,
)
from inductionlab.runs import RunContext
from inductionlab.tasks.scb import random_instance
from inductionlab.theory.scb import gaussian_noise_oracle
from inductionlab.train.proximal import train_scb


def test_each_sweep_run_is_the_single_run_at_its_batch():
    cfg = experiments.configure(
        "scb-noise-sim",
        preset="smoke",
        overrides={"sweep_batches": "4,64", "train.steps": 30, "train.stage1_steps": 10},
    )
    inst = random_instance(replace(cfg.task, N=4, T=4 * cfg.task.Q), 1, np.random.default_rng(0))
    sigma_V, sigma_A = torch.tensor(0.5, dtype=torch.float64), torch.tensor(0.2, dtype=torch.float64)
    sweep = _batch_sweep(cfg, inst, sigma_V, sigma_A, RunContext(threads=1))
    assert sorted(sweep.method.unique()) == ["proximal", "sgd"]
    for method in ("proximal", "sgd"):
        for batch in (4, 64):
            oracle = gaussian_noise_oracle(sigma_V, sigma_A, batch)
            alone = train_scb(replace(cfg.train, method=method, seed=cfg.seeds[0]), inst, cfg.task.Q, oracle=oracle)[2]
            got = sweep[(sweep.batch == batch) & (sweep.method == method)]
            np.testing.assert_allclose(got.dist_A_norm.to_numpy(), alone.dist_A_norm.to_numpy(), rtol=1e-10)
            assert (got.samples == got.step * batch).all()
    last = sweep[(sweep.step == sweep.step.max()) & (sweep.method == "proximal")].set_index("batch")
    assert last.loc[4, "dist_V"] != last.loc[64, "dist_V"]  # the noise scale differs


def test_sweep_summary_finds_the_exit_the_smallest_recovering_batch_and_its_growth():
    rows = []
    for N, exits in {10: {16: 5, 64: 3}, 40: {16: None, 64: None, 256: 4}}.items():
        for batch, exit_step in exits.items():
            for step in range(7):
                stage = 2 if exit_step is not None and step >= exit_step else 1
                final = 0.01 if exit_step is not None else 0.5
                row = dict(N=N, batch=batch, step=step, stage=stage, dist_A_norm=final if step == 6 else 0.5)
                # SGD recovers at N = 10 from B = 64 on, at N = 40 at none of the sweep
                sgd = 0.01 if N == 10 and batch == 64 and step == 6 else 0.5
                rows += [row | {"method": "proximal"}, row | {"method": "sgd", "stage": 1, "dist_A_norm": sgd}]
    out = _sweep_summary(pd.DataFrame(rows), target=0.05)
    assert out["min_batch_to_recover_sgd"] == {10: 64, 40: math.inf}
    assert out["min_batch_over_sgd"] == {10: 0.25, 40: None}  # 256 is the sweep's largest: no bound below 1
    assert out["stage1_exit_step"] == {10: {16: 5, 64: 3}, 40: {16: None, 64: None, 256: 4}}
    assert out["min_batch_to_recover"] == {10: 16, 40: 256}
    assert out["best_final_dist_A_norm"] == {10: 0.01, 40: 0.01}  # defined also where no batch recovers
    assert out["min_batch_log_log_slope"] == pytest.approx(2.0)  # 16 → 256 over 10 → 40
    assert _sweep_summary(pd.DataFrame(rows).query("N == 40"), 0.05)["min_batch_log_log_slope"] is None


def test_the_batch_ratio_is_bounded_where_sgd_never_recovers_and_undefined_where_neither_does():
    assert batch_ratio(256, 1024, 4096) == 0.25
    assert batch_ratio(256, math.inf, 4096) == 256 / 4096  # SGD's batch is above 4096: an upper bound
    assert batch_ratio(4096, math.inf, 4096) is None  # the bound is 1: nothing to say
    assert batch_ratio(math.inf, 1024, 4096) == math.inf and batch_ratio(math.inf, math.inf, 4096) is None


def test_the_regime_run_reports_the_prox_per_stage_2_step_and_its_hypotheses():
    overrides = {"regime.T": 60, "regime.steps": 600, "regime.calibration_samples": 64}
    for lam in (1e-3, 0.0):
        cfg = experiments.configure("scb-noise-sim", preset="smoke", overrides={**overrides, "regime.lam": lam})
        m, s = _theorem_regime(cfg, RunContext(threads=1))
        assert s["stage1_exit_step"] is not None and (m[m.step <= s["stage1_exit_step"]].stage == 1).all()
        assert max(s["alpha_at_exit"], s["beta_at_exit"]) >= cfg.train.rho
        assert 0 <= s["negative_fraction"] <= 1 and 0 <= s["zeroed_fraction"] <= s["useless_share"] + cfg.task.Q / 60
        if lam == 0:  # no threshold: nothing is zeroed and the hypotheses against λ have no value
            assert s["zeroed_fraction"] == 0 and s["noise_linf_over_lambda"] is None
        else:
            assert s["useless_over_threshold"] > 0 and s["signal_over_lambda"] > 0


def test_after_tau1_both_methods_start_from_stage_1_s_state_at_its_first_crossing_and_share_the_noise():
    cfg = experiments.configure("scb-noise-sim", preset="smoke", overrides={"after_tau1.stage1_cap": 60})
    a, t = cfg.after_tau1, replace(cfg.train, seed=cfg.seeds[0])  # the seed's data stream
    inst = random_instance(replace(cfg.task, N=4, T=4 * cfg.task.Q), 1, np.random.default_rng(0))
    sigma_V, sigma_A = torch.tensor(0.5, dtype=torch.float64), torch.tensor(0.2, dtype=torch.float64)
    m, s = _after_tau1(cfg, inst, sigma_V, sigma_A, RunContext(threads=1))
    stage1 = m[m.arm == "stage1"]
    crossed = stage1[np.maximum(stage1.alpha, stage1.beta) >= a.rho].step
    assert s["stage1_exit_step"] == crossed.min() < 60 and s["proximal_switch_step"] == 0  # its own rule, at τ₁
    tau1 = int(s["stage1_exit_step"])
    V, A, _ = train_scb(  # Stage 1 again, stopped at τ₁: the state both arms start from
        replace(t, method="sgd", steps=tau1, stage1_steps=tau1),
        inst,
        cfg.task.Q,
        oracle=gaussian_noise_oracle(sigma_V, sigma_A, a.stage1_batch),
    )
    for method in ("proximal", "sgd"):
        alone = train_scb(
            replace(t, method=method, steps=a.steps, stage1_steps=a.steps),
            inst,
            cfg.task.Q,
            init=(V, A),
            oracle=gaussian_noise_oracle(sigma_V, sigma_A, a.batch_at(4)),
        )[2]
        got = m[m.arm == method]
        np.testing.assert_allclose(got.dist_A_norm.to_numpy(), alone.dist_A_norm.to_numpy(), rtol=1e-12)
        assert (got.step.to_numpy() == alone.step.to_numpy() + tau1).all()
    assert s["final_ratio"] == s["final"]["proximal"] / s["final"]["sgd"]
    no_exit = replace(cfg, train=replace(cfg.train, rho=1e9))
    never = _after_tau1(no_exit, inst, sigma_V, sigma_A, RunContext(threads=1))[1]
    assert never["stage1_exit_step"] == tau1 and never["final_ratio"] == 1.0  # the control: one method twice
    late = _after_tau1(replace(cfg, after_tau1=replace(a, rho=1e9)), inst, sigma_V, sigma_A, RunContext(threads=1))[1]
    assert late["stage1_exit_step"] == math.inf and late["final_ratio"] is None


def test_after_tau1_runs_at_each_of_its_n_at_that_n_s_batch_and_refuses_a_batch_per_n_missing():
    cfg = experiments.configure("scb-noise-sim", preset="smoke")
    assert cfg.after_tau1.N == (3, 4) and cfg.after_tau1.batch_at(3) == 64 and cfg.after_tau1.batch_at(4) == 256
    inst = random_instance(replace(cfg.task, N=3, T=3 * cfg.task.Q), 1, np.random.default_rng(0))
    sigma_V, sigma_A = torch.tensor(0.5, dtype=torch.float64), torch.tensor(0.2, dtype=torch.float64)
    assert _after_tau1(cfg, inst, sigma_V, sigma_A, RunContext(threads=1))[1]["batch"] == 64
    with pytest.raises(ValueError, match="one B₂ per N"):
        experiments.configure("scb-noise-sim", overrides={"after_tau1.batch": "256"})
    default = experiments.configure("scb-noise-sim")
    assert default.after_tau1.N == (10, 50) and set(default.after_tau1.N) <= set(default.N_values)
