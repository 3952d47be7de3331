import math

import pytest
import torch

from inductionlab import rng
from inductionlab.config import ConfigError
from inductionlab.models import toy
from inductionlab.tasks.mixed import MixedTarget, new_tokens
from inductionlab.theory import mixed as th
from inductionlab.train.toy_batches import make_batch


@pytest.mark.parametrize("p", [0.0, 5e-5, 1e-3, 0.3, 2.0, 40.0])
def test_M_and_m_equal_their_sums(p):
    L = 23
    assert math.isclose(th.M(p, L), math.fsum(math.exp(-p * k) for k in range(L - 2)), rel_tol=1e-12)
    assert math.isclose(
        th.m(p, L), math.fsum(k * math.exp(-p * k) for k in range(1, L - 2)), rel_tol=1e-10, abs_tol=1e-300
    )


def test_closed_form_4gram_loss_matches_monte_carlo():
    L, n = 12, 400_000
    target = MixedTarget.per_run([1.5], [0.4], L, dtype=torch.float64)
    x = new_tokens(1, L, n, [rng.generator(5)], "gaussian", torch.float64)
    p, g = 0.8, 0.35
    theta = torch.tensor([[0.0, p, g, 0.0, 0.0, 0.0]], dtype=torch.float64)
    mc = toy.loss_and_grad(theta, make_batch(x, target, "ideal"), "ideal", per_sample=True).partial[0, 0]
    exact = th.loss_grad_g4(p, g, 1.5, L)[0]
    assert abs(float(mc.mean()) - exact) < 4 * float(mc.std()) / math.sqrt(n)
    assert abs(float(mc.mean()) / exact - 1) < 0.01


def test_exp_simplified_ih_loss_matches_monte_carlo_of_its_definition():
    """Eq. (10) is ½E[(h*/N Σ e^{w*² x_L x_{s-1}} x_s − h/N Σ e^{v x_L x_{s-1}} x_s)²], N = L−2."""
    L, n, a, ws, wq, wk, h = 10, 1_000_000, 1.0, 0.49, 0.3, 0.5, 0.4
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(n, L, generator=gen, dtype=torch.float64)
    q = x[:, L - 1 : L] * x[:, : L - 2]
    vals = x[:, 1 : L - 1]
    diff = ((torch.exp(ws**2 * q) / (1 + a) - h * torch.exp(wq * wk * q)) * vals).sum(1) / (L - 2)
    mc = 0.5 * diff**2
    exact = th.loss_grad_ih2(wq, wk, h, a, ws, L)[0]
    assert abs(float(mc.mean()) - exact) < 4 * float(mc.std()) / math.sqrt(n)


@pytest.mark.parametrize(
    "fn, args",
    [
        (th.loss_grad_g4, (0.7, 0.3, 1.0, 15)),
        (th.loss_grad_g4, (1e-5, 0.01, 2.0, 40)),
        (th.loss_grad_ih2, (0.2, 0.35, 0.45, 1.0, 0.49, 40)),
    ],
)
def test_analytic_gradients_equal_finite_differences(fn, args):
    n_params = 2 if fn is th.loss_grad_g4 else 3
    grads = fn(*args)[1:]
    for i in range(n_params):
        eps = 1e-6
        hi, lo = list(args), list(args)
        hi[i] += eps
        lo[i] -= eps
        num = (fn(*hi)[0] - fn(*lo)[0]) / (2 * eps)
        assert math.isclose(grads[i], num, rel_tol=1e-5, abs_tol=1e-10)


def test_domain_of_the_closed_form_is_enforced():
    with pytest.raises(ConfigError, match="w\\* < 1/√2"):
        th.loss_grad_ih2(0.1, 0.1, 0.5, 1.0, 0.71, 40)
    with pytest.raises(ConfigError, match="w_Q w_K"):
        th.loss_grad_ih2(0.8, 0.8, 0.5, 1.0, 0.49, 40)


def test_h_turning_threshold_value_from_the_spec():
    assert abs(th.h_turning_threshold(0.49) - 0.299) < 1e-3


@pytest.mark.parametrize("p_tilde", [0.3, 0.94, 2.0])
def test_the_literal_fixed_point_is_the_regression_of_x_on_the_finite_layer_one(p_tilde):
    """Monte Carlo of docs/conventions.md#wang-5-3: with y_s = Σ_k (1−r) r^{k−1} x_{s−k} (eq. 5, long context) the
    least-squares slope of x_{s−1} on y_s is 1 + r, and the fraction of Var(x_{s−1}) it leaves is r²."""
    import numpy as np

    r, lags, n = math.exp(-p_tilde), 80, 400_000
    x = np.random.default_rng(0).standard_normal((n, lags))  # column k−1: x_{s−k}
    y = x @ ((1 - r) * r ** np.arange(lags))
    slope = float(x[:, 0] @ y / (y @ y))
    left = float(np.mean((x[:, 0] - slope * y) ** 2) / np.mean(x[:, 0] ** 2))
    fixed = th.literal_fixed_point(np.array([p_tilde]), alpha_star=1.0, w_star=0.49)
    assert slope == pytest.approx(1 + r, rel=0.01)  # ~3 standard errors at n = 4e5
    assert left == pytest.approx(float(fixed["g4_floor"][0]), rel=0.03, abs=2e-3)
    assert float(fixed["w_V1"][0]) == pytest.approx(th.g_star(1.0) * slope, rel=0.01)
    assert float(fixed["w_KQ"][0]) == pytest.approx(0.49 * math.sqrt(slope), rel=0.01)
