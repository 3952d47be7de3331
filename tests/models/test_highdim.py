import math
from dataclasses import replace

import pytest
import torch

from inductionlab.models import highdim as M
from inductionlab.tasks.induction import lifted_target


def _construct(cfg: M.HighDimConfig) -> torch.Tensor:
    """θ with p → ∞, g = α/(1+α), h = 1/(1+α) and W_Qᵀ W_K = W*: the model equals the target."""
    theta = torch.zeros(1, cfg.n_params, dtype=torch.float64)
    a = cfg.alpha_star
    theta[0, :3] = torch.tensor([60.0, a / (1 + a), 1 / (1 + a)])
    P = M.unpack(cfg, theta)
    w = cfg.w_star().double()
    if cfg.reading == "A":
        P["W_Q"][0] = torch.eye(cfg.D, dtype=torch.float64)
        P["W_K"][0] = w
    else:  # ⟨W_Q, W_K⟩ = w*²
        P["W_Q"][0, 0, 0] = P["W_K"][0, 0, 0] = math.sqrt(float(w))
    return theta


def test_both_readings_reproduce_the_target_with_the_constructed_weights():
    for cfg in (M.HighDimConfig(reading="A", D=6, L=12), M.HighDimConfig(reading="B", D=5, L=12)):
        theta = _construct(cfg)
        x = torch.randn(50, cfg.L, cfg.d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        assert (
            max(float(v.max()) for v in M.partial_losses(cfg, theta, x, lifted_target(x, cfg.alpha_star, cfg.w_star())))
            < 1e-20
        )
        assert float(M.kq_product(cfg, theta)[0]) < 1e-12


def test_init_scale_and_plateau_structure():
    cfg = M.HighDimConfig(D=10, L=12)
    theta = M.init_theta(cfg, 3, torch.Generator().manual_seed(0))
    P = M.unpack(cfg, theta)
    assert theta.shape == (3, cfg.n_params)
    assert torch.allclose(P["W_Q"].flatten(1).norm(dim=1), torch.full((3,), 0.01))
    assert torch.allclose(P["h"], torch.full((3,), 0.01))
    # with W_Q W_K = 0 the IH head averages x_2..x_{L-1} uniformly
    theta[:, 3:] = 0
    x = torch.randn(4, cfg.L, cfg.d, generator=torch.Generator().manual_seed(1))
    ih = M.forward(cfg, theta, x)[1]
    assert torch.allclose(ih[0], 0.01 * x[:, 1:-1].mean(1), atol=1e-7)


def test_the_summed_loss_is_d_times_the_mean_and_gd_on_it_is_gd_at_d_times_the_rate():
    m = M.HighDimConfig(D=6, L=10)
    theta = M.init_theta(m, 2, torch.Generator().manual_seed(0)).requires_grad_()
    x = torch.randn(32, m.L, m.d, generator=torch.Generator().manual_seed(1))
    want = lifted_target(x, m.alpha_star, m.w_star())
    grads = []
    for loss in ("sum", "mean"):
        g4, ih = M.partial_losses(replace(m, loss=loss), theta, x, want)
        grads.append(torch.autograd.grad((g4 + ih).sum(), theta)[0])
    assert torch.allclose(grads[0], m.d * grads[1], rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("reading", ["A", "B"])
def test_the_models_target_is_the_tasks_lifted_target(reading):
    """The training batches' target (the IH head's own computation at W_Qᵀ W_K = W*) against the task's IH_2."""
    m = M.HighDimConfig(reading=reading, D=7, L=12, alpha_star=0.7, w_star_scale=2.3)
    x = torch.randn(64, m.L, m.d, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    for got, want in zip(M.target(m, x), lifted_target(x, m.alpha_star, m.w_star())):
        assert got.shape == want.shape == (64, m.d)
        assert torch.allclose(got, want, rtol=1e-12, atol=1e-14)
    assert not torch.allclose(M.target(m, x)[1], M.target(replace(m, w_star_scale=0.1), x)[1])  # W* acts
