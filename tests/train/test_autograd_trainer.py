import numpy as np
import pytest
import torch

from inductionlab.runs import RunContext
from inductionlab.train import optim
from inductionlab.train.autograd import TrainConfig, pack, train
from inductionlab.train.loop import Interrupted, NonFiniteError
from tests.conftest import CtrlCAt


def _problem():
    """Per-run least squares: run r fits a_r·x to 2x + r (gradient descent has a known optimum)."""
    theta0 = torch.zeros(3, 2)

    def loss(theta, x):
        pred = theta[:, :1] * x + theta[:, 1:]
        return 0.5 * (pred - (2 * x + torch.arange(3.0).view(-1, 1))).square().mean(-1)

    def evaluate(theta, step):
        return {"a": theta[:, 0].double().numpy().copy(), "b": theta[:, 1].double().numpy().copy()}

    return theta0, loss, (lambda g: torch.randn(32, generator=g)), evaluate


def test_sgd_reaches_each_runs_own_optimum_and_adam_too():
    theta0, loss, sample, evaluate = _problem()
    for opt, lr in (("sgd", 0.1), ("adam", 0.05)):
        theta, metrics = train(
            TrainConfig(optimizer=opt, lr=lr, steps=600, eval_every=100), theta0, loss, sample, evaluate
        )
        assert torch.allclose(theta, torch.tensor([[2.0, 0.0], [2.0, 1.0], [2.0, 2.0]]), atol=2e-2), opt
        assert set(metrics.run) == {0, 1, 2} and metrics.step.max() == 600


def test_interrupted_run_resumes_to_the_same_numbers(tmp_path):
    theta0, loss, sample, evaluate = _problem()
    cfg = TrainConfig(optimizer="adam", lr=0.05, steps=20, eval_every=3, checkpoint_every=5)
    full, full_metrics = train(cfg, theta0, loss, sample, evaluate)
    calls = {"n": 0}

    def failing(theta, x):
        calls["n"] += 1
        if calls["n"] == 13:
            raise RuntimeError("boom")
        return loss(theta, x)

    ctx = RunContext(tmp_path, threads=1)
    with pytest.raises(RuntimeError):
        train(cfg, theta0, failing, sample, evaluate, ctx)
    resumed, metrics = train(cfg, theta0, loss, sample, evaluate, ctx.child(resume=True))
    assert torch.equal(resumed, full)
    assert np.array_equal(metrics.to_numpy(), full_metrics.to_numpy())


def test_non_finite_parameters_stop_with_a_clear_error():
    theta0, loss, sample, evaluate = _problem()
    with pytest.raises(NonFiniteError, match="NaN/inf"):
        train(TrainConfig(optimizer="sgd", lr=1e6, steps=200, finite_check_every=1), theta0, loss, sample, evaluate)


def test_pack_views_share_memory_with_theta():
    params = {"a": torch.randn(2, 3, 4), "b": torch.randn(2, 5)}
    theta, views = pack(params)
    assert theta.shape == (2, 17)
    v = views(theta)
    assert torch.equal(v["a"], params["a"]) and torch.equal(v["b"], params["b"])
    theta[0, 0] = 99.0
    assert float(views(theta)["a"][0, 0, 0]) == 99.0


def test_cosine_schedule_runs_from_lr_to_the_final_fraction():
    cfg = TrainConfig(steps=100, schedule="cosine", lr_final_fraction=0.1)
    assert cfg.lr_factor(0) == 1.0 and abs(cfg.lr_factor(100) - 0.1) < 1e-12
    assert abs(cfg.lr_factor(50) - 0.55) < 1e-12
    assert TrainConfig(steps=100).lr_factor(70) == 1.0


def test_momentum_step_matches_torch_sgd_and_clipping_matches_clip_grad_norm():
    theta = torch.randn(2, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(99))
    refs = [theta[r].clone().requires_grad_() for r in range(2)]
    opts = [torch.optim.SGD([ref], lr=lr, momentum=0.9) for ref, lr in zip(refs, (0.1, 0.02))]
    state = optim.new_state("sgd", theta, momentum=0.9)
    lr_mask = torch.tensor([[0.1], [0.02]], dtype=torch.float64).expand(2, 6)
    for i in range(4):
        g = 3 * torch.randn(2, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(i))
        g[1] *= 1e-3  # run 1 below the clip threshold: left alone
        for r, (ref, opt) in enumerate(zip(refs, opts)):
            ref.grad = g[r].clone()
            torch.nn.utils.clip_grad_norm_([ref], 0.5)
            opt.step()
        optim.clip_rows(g, 0.5)
        optim.step(theta, g, lr_mask, state)
    # clip_grad_norm_ divides by ‖g‖ + 1e-6, clip_rows by ‖g‖: a relative 1e-6/‖g‖ ≈ 1e-7 of each clipped step
    assert torch.allclose(theta, torch.stack([ref.detach() for ref in refs]), rtol=0, atol=1e-7)


def test_clipped_momentum_sgd_trains_and_bad_settings_are_refused():
    theta0, loss, sample, evaluate = _problem()
    cfg = TrainConfig(optimizer="sgd", lr=0.02, momentum=0.9, clip_norm=1.0, steps=600, eval_every=100)
    theta, _ = train(cfg, theta0, loss, sample, evaluate)
    assert torch.allclose(theta, torch.tensor([[2.0, 0.0], [2.0, 1.0], [2.0, 2.0]]), atol=2e-2)
    with pytest.raises(ValueError, match="train.momentum"):
        TrainConfig(optimizer="adam", momentum=0.9)
    with pytest.raises(ValueError, match="train.clip_norm"):
        TrainConfig(clip_norm=-1.0)


def test_clipping_counts_only_the_columns_that_move():
    """Staged training: a frozen column's gradient must not shrink the step of the trainable ones."""

    def loss(theta, x):  # a fits 2x (gradient −2 at a = 0); frozen b has gradient 1000
        return 0.5 * (theta[:, :1] * x - 2 * x).square().mean(-1) + 1000 * theta[:, 1]

    cfg = TrainConfig(optimizer="sgd", lr=0.1, clip_norm=10.0, steps=1, eval_every=1)
    theta, _ = train(
        cfg, torch.zeros(2, 2), loss, lambda g: torch.ones(4), lambda t, s: {}, trainable=torch.tensor([1.0, 0.0])
    )
    torch.testing.assert_close(theta, torch.tensor([[0.2, 0.0], [0.2, 0.0]]))


def test_an_interrupted_call_without_a_checkpoint_keeps_the_metrics_measured_so_far():
    theta0, loss, sample, evaluate = _problem()
    cfg = TrainConfig(optimizer="sgd", lr=0.1, steps=600, eval_every=100)
    _, full = train(cfg, theta0, loss, sample, evaluate)
    with pytest.raises(Interrupted, match="no checkpoint") as stop:
        train(cfg, theta0, loss, sample, evaluate, hooks=[CtrlCAt(0, 250)])
    kept = stop.value.metrics  # the evaluations before the stop at step 251
    assert kept.step.max() > 200 and kept.equals(full[full.step <= 251].reset_index(drop=True))
