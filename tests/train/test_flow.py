import math

import numpy as np
import pytest

from inductionlab.train.flow import FlowProblem, closed_form_loss, exact_loss, solve_flow


def test_gradient_flow_equals_small_step_gradient_descent():
    prob = FlowProblem(L=20, t_end=60.0)
    res = solve_flow(prob, n_points=50)
    grad = closed_form_loss(prob)
    y, dt = np.full(5, prob.sigma_init), 1e-3
    for _ in range(int(60 / dt)):
        y = y - dt * grad(y)[2]
    end = res.curve.iloc[-1]
    assert np.allclose([end.p, end.w_V1, end.w_V2, end.w_Q, end.w_K], y, rtol=2e-3, atol=1e-6)


def test_balance_of_wq_and_wk_is_conserved():
    """Lemma 5.4: d/dt (w_Q² − w_K²) = 0 under gradient flow."""
    from scipy.integrate import solve_ivp

    grad = closed_form_loss(FlowProblem(L=30))
    y0 = np.array([0.01, 0.01, 0.01, 0.05, 0.02])
    sol = solve_ivp(lambda t, y: -grad(y)[2], (0, 5000), y0, method="LSODA", rtol=1e-10, atol=1e-12)
    balance = sol.y[3] ** 2 - sol.y[4] ** 2
    assert np.abs(balance - balance[0]).max() < 1e-7 and sol.y[3, -1] > 0.3  # w grew a lot meanwhile


def test_stage_two_converges_to_the_fixed_point():
    res = solve_flow(FlowProblem(L=40, t_end=15_000.0))
    end = res.curve.iloc[-1]
    assert abs(end.w_V1 - 0.5) < 0.02 and abs(end.w_V2 - 0.5) < 1e-4 and abs(end.w_KQ - 0.49) < 1e-4
    assert end.p > 3 and end.loss_IH2 < 1e-12


def test_phases_are_ordered_and_the_plateau_scales_like_theorem_5_5():
    a = solve_flow(FlowProblem(L=40)).phases
    b = solve_flow(FlowProblem(L=80, t_end=20_000.0)).phases
    assert a.T_I < a.T_50 < a.T_III and a.T_o < a.T_III and a.T_whalf < a.T_III
    assert 1.8 < b.T_III / a.T_III < 2.3  # ∝ L (L−2 in the closed form)


def test_exact_softmax_flow_agrees_with_the_4gram_closed_form():
    """The 4-gram loss is exact in both (π does not depend on x); only L_IH2 was simplified."""
    prob = FlowProblem(L=12, t_end=50.0, loss="exact", mc_samples=200_000)
    y = np.array([0.4, 0.3, 0.2, 0.1, 0.1])
    mc_g4, mc_ih, _ = exact_loss(prob)(y)
    cf_g4, cf_ih, _ = closed_form_loss(FlowProblem(L=12))(y)
    assert abs(mc_g4 / cf_g4 - 1) < 0.01
    assert abs(mc_ih / cf_ih - 1) < 0.15  # exp-for-softmax is close near w ≈ 0


def test_invalid_problem():
    with pytest.raises(ValueError, match="sigma_init"):
        FlowProblem(sigma_init=0.0)
    with pytest.raises(ValueError, match="Gaussian"):
        FlowProblem(tokens="boolean")
    assert math.isnan(solve_flow(FlowProblem(L=40, t_end=50.0)).phases.T_III)
