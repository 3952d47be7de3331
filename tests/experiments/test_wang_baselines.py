"""The mechanism-free baselines of the Wang claims (docs/conventions.md#controls): plateau-scaling's preconditioned
learners (wang-5-5), lazy-to-rich's literal run off its protocol (wang-5-3) and Theorem 4.3's super-polynomial rate
(wang-4-3), whose test a power law must fail."""

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab import experiments
from inductionlab.experiments.wang import approx_ihn
from inductionlab.experiments.wang.approx_ihn import local_slope_growth
from inductionlab.experiments.wang.plateau_scaling.learners import Preconditioned, factors, share_ratio, solve
from inductionlab.runs import RunContext
from inductionlab.theory import mixed as th
from inductionlab.train.flow import FlowProblem, solve_flow
from inductionlab.train.loop import LoopState, Stage

PROB = FlowProblem(L=20, t_end=4000.0)  # the paper's α*, w*, σ_init at the grid's smallest L
IH_TIMES = ("T_o", "T_II", "T_III", "T_50", "T_w001", "T_whalf")


def _claim(name: str, claim_id: str):
    return next(c for c in experiments.get(name).claims if c.id == claim_id)


def test_dp_linear_makes_the_logit_linear_in_one_parameter():
    """With P = 1/(w_Q² + w_K²) on w_Q, w_K, d(w_Q w_K)/dt = −∂L/∂v: the flow of v itself."""
    y = np.array([0.3, 0.2, 0.1, 0.05, 0.08])
    _, dq, dk, _ = th.loss_grad_ih2(y[3], y[4], y[2], 1.0, 0.49, 40)
    d_v = dq / y[4]
    ydot = -factors("dp-linear", y, 1.0) * np.array([0.0, 0.0, 0.0, dq, dk])
    assert ydot[3] * y[4] + y[3] * ydot[4] == pytest.approx(-d_v, rel=1e-12)


def test_the_share_ratio_is_the_components_proportion():
    """L_G4(0)/L_IH2(0) ≈ α*²(L − 2)·const (dynamics paper §3.3): linear in L − 2."""
    r20, r200 = share_ratio(20, 1.0, 0.49, 0.01), share_ratio(200, 1.0, 0.49, 0.01)
    assert r200 / r20 == pytest.approx(198 / 18, rel=0.01)


@pytest.mark.parametrize("learner", ["ih-fast", "g4-slow"])
def test_a_share_preconditioner_rescales_one_components_clock(learner):
    """The 4-gram (p, w_V1) and the induction head (w_V2, w_Q, w_K) decouple in eqs. 7 and 10, so scaling one
    component's gradient by k runs its clock k times faster and leaves the other's times alone: the solver of the
    baselines reproduces solve_flow's event times to 1e-4."""
    k = share_ratio(PROB.L, PROB.alpha_star, PROB.w_star, PROB.sigma_init)
    paper = solve_flow(PROB).phases.as_dict()
    fast_ih = learner == "ih-fast"
    t_end = PROB.t_end * (1 if fast_ih else k)
    base = solve(FlowProblem(L=PROB.L, t_end=t_end), learner).phases.as_dict()
    assert base["T_I"] == pytest.approx(paper["T_I"] * (1 if fast_ih else k), rel=1e-4)
    for name in IH_TIMES:
        assert base[name] == pytest.approx(paper[name] / (k if fast_ih else 1), rel=1e-4), name


def test_rpe_frozen_holds_p_and_leaves_the_4_gram_loss_on_a_floor():
    curve = solve(PROB, "rpe-frozen", n_points=40).curve
    assert (curve.p == PROB.sigma_init).all()
    assert curve.loss_G4.iloc[-1] > 0.5 * curve.loss_G4.iloc[0]


def test_the_sgd_hook_scales_each_update_by_the_learners_factors():
    hook = Preconditioned("ih-fast", [10.0])
    params = torch.full((1, 6), 0.01)
    state = LoopState(stage_index=1, stage=Stage("II", 1, 1), step=0, params=params)
    hook.before_step(state)
    params += 0.001  # the optimiser's update
    hook.after_step(state)
    expected = 0.01 + 0.001 * np.array([1, 1, 1, 10, 10, 10])  # p̃ untouched; p, w_V1; w_V2, w_Q, w_K
    np.testing.assert_allclose(params[0].numpy(), expected, rtol=1e-5)


def test_a_power_law_fails_the_rate_claim_and_an_exponential_passes():
    """Theorem 4.3's C_q/H^q for every q: the local log–log slope must grow with H (wang-thm4.3-rate)."""
    claim = _claim("approx-ihn", "wang-thm4.3-rate")
    H = np.arange(1.0, 9.0)
    for q in (3.0, 10.0):
        growth = local_slope_growth(H, 5 * H**-q)
        assert growth == pytest.approx(0.0, abs=1e-9)
        assert not claim.test.holds(growth)
    assert claim.test.holds(local_slope_growth(H, 0.1 * np.exp(-2 * H)))
    assert local_slope_growth(H[:2], np.exp(-H[:2])) is None  # two errors: one local slope, no growth


def test_errors_at_the_constructions_round_off_are_left_out_of_the_rate_and_the_bound():
    """wang-4-3: an error below RESOLVED × ε₆₄·Σ|α| is float64 round-off, so it moves no read measure, however far
    it sits from the decay or the bound; the same error above the round-off does."""
    H = np.arange(1.0, 7.0)
    errors = 0.1 * np.exp(-2 * H)
    table = pd.DataFrame({"n": 2, "H": H, "max_error": errors, "bound": 10 * errors, "short_prefix_error": errors})
    table["roundoff"], table["resolved"] = 1e-20, True
    clean = approx_ihn._summary(table)
    noisy = table.copy()
    noisy.loc[5, ["max_error", "roundoff", "resolved"]] = 1e-3, 1e-5, False  # round-off far above decay and bound
    summary = approx_ihn._summary(noisy)
    assert summary["max_error_over_bound"] == pytest.approx(0.1)
    assert summary["error_decreases_with_H"]["2"]
    partial = local_slope_growth(H[:5], errors[:5])
    assert summary["local_slope_growth_min"] == pytest.approx(partial) and partial != clean["local_slope_growth_min"]
    noisy.loc[5, "resolved"] = True  # the same error, counted: it breaks the decay and the bound
    counted = approx_ihn._summary(noisy)
    assert counted["max_error_over_bound"] > 1 and counted["local_slope_growth_min"] < partial
    assert not counted["error_decreases_with_H"]["2"]
    lost = approx_ihn._summary(table.assign(resolved=False))  # nothing resolved: undefined, not NaN
    assert lost["max_error_over_bound"] is None and lost["local_slope_growth_min"] is None


def test_the_literal_run_off_its_protocol_is_the_ideal_stage_ii():
    """literal-ideal: Stage II of the literal run on y_s = x_{s−1} is the paper's idealised run, while p̃ is still
    the one Stage I left (docs/conventions.md#wang-5-3)."""
    cfg = experiments.configure("lazy-to-rich", preset="smoke", overrides={"literal_layer1": "ideal", "gf": "none"})
    summary = experiments.get("lazy-to-rich").run(cfg, RunContext(threads=1, progress=False)).summary
    assert summary["literal"]["stage2_layer1"] == "ideal"
    assert summary["literal"]["p_tilde_after_stage1"] == summary["p_tilde_after_stage1"]
    assert summary["literal"]["final"] == pytest.approx(summary["final"], rel=1e-6)
