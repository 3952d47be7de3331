import os
import signal

import pytest
import torch

from inductionlab import rng
from inductionlab.models import toy
from inductionlab.runs import RunContext, load_checkpoint
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.train import optim
from inductionlab.train import toy as trainer
from inductionlab.train.loop import Interrupted, NonFiniteError
from inductionlab.train.toy import ToyTrainConfig, train_toy
from inductionlab.train.toy_batches import BatchStream

L = 10
SMALL = dict(
    stage1_steps=30,
    stage2_steps=90,
    batch_size=64,
    eval_size=300,
    eval_every=15,
    eval_log_points=4,
    checkpoint_every=20,
)


def _cfg(**kw):
    return ToyTrainConfig(**{**SMALL, **kw})


@pytest.mark.parametrize("prefetch", [True, False])
def test_run_axis_equals_separate_runs(prefetch):
    target = MixedTarget.per_run([1.0, 2.0], [0.49, 0.3], L)
    both = train_toy(
        _cfg(),
        target,
        toy.init_params(torch.tensor([0.01, 0.05]), 2),
        [3, 4],
        RunContext(threads=2 if prefetch else 1),
        lr=[0.1, 0.2],
    )
    for r, (a, w, s, lr, seed) in enumerate([(1.0, 0.49, 0.01, 0.1, 3), (2.0, 0.3, 0.05, 0.2, 4)]):
        one = train_toy(
            _cfg(),
            MixedTarget.per_run([a], [w], L),
            toy.init_params(s, 1),
            [seed],
            RunContext(threads=1 if prefetch else 2),
            lr=[lr],
        )
        assert torch.allclose(both.theta[r], one.theta[0], rtol=1e-5, atol=1e-7)
        m_both = both.metrics[both.metrics.run == r].reset_index(drop=True)
        assert list(m_both.t) == list(one.metrics.t)


def test_stages_train_only_their_parameters():
    target = MixedTarget.per_run([1.0], [0.49], L)
    out = train_toy(_cfg(stage2_steps=0), target, toy.init_params(0.01, 1), [0])
    assert out.theta[0, toy.P_TILDE] != 0.01 and torch.all(out.theta[0, 1:] == 0.01)
    out = train_toy(_cfg(stage1_steps=0), target, toy.init_params(0.01, 1), [0])
    assert out.theta[0, toy.P_TILDE] == 0.01 and torch.all(out.theta[0, 1:] != 0.01)


@pytest.mark.parametrize(
    "kw",
    [
        dict(optimizer="gd", n_samples=128),
        dict(optimizer="adam", lr=0.01),
        dict(schedule="joint", stage2_layer1="trained"),
        dict(stage2_layer1="trained"),
    ],
)
def test_optimizers_and_schedules_reduce_the_loss(kw):
    target = MixedTarget.per_run([1.0], [0.49], L)
    out = train_toy(_cfg(**{"stage2_steps": 400, "eval_every": 100, **kw}), target, toy.init_params(0.01, 1), [0])
    last = out.metrics.stage.iloc[-1]
    m = out.metrics[out.metrics.stage == last]
    # with the learned layer 1 at p̃ ≈ σ_init, y_s averages the prefix and L_G4 cannot fall much: test L_IH2
    assert m.loss.iloc[-1] < m.loss.iloc[0] and m.loss_IH2.iloc[-1] < 0.8 * m.loss_IH2.iloc[0]


def test_sgd_matches_one_manual_step():
    """One SGD step of the trainer = θ − lr ∇L on the same batch."""
    target = MixedTarget.per_run([1.0], [0.49], L)
    cfg = _cfg(stage1_steps=0, stage2_steps=1)
    out = train_toy(cfg, target, toy.init_params(0.01, 1), [5])
    stream = BatchStream(target, cfg.batch_size, [rng.generator(5)], "ideal", None, cfg.checkpoint_every)
    grad = toy.loss_and_grad(toy.init_params(0.01, 1), stream.next(), "ideal", wrt="layer2").grad
    expected = toy.init_params(0.01, 1) - 0.1 * grad * torch.tensor([0, 1, 1, 1, 1, 1.0])
    assert torch.allclose(out.theta, expected, atol=1e-7)


def test_adam_step_matches_torch_adam():
    theta = torch.randn(2, 6, dtype=torch.float64)
    ref = theta.clone().requires_grad_()
    opt = torch.optim.Adam([ref], lr=0.01)
    state = optim.new_state("adam", theta)
    for i in range(3):
        g = torch.randn(2, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(i))
        optim.step(theta, g, torch.full((2, 6), 0.01, dtype=torch.float64), state)
        ref.grad = g.clone()
        opt.step()
    assert torch.allclose(theta, ref.detach(), atol=1e-12)


def test_prefetch_gives_identical_numbers():
    target = MixedTarget.per_run([1.0], [0.49], L)
    runs = [train_toy(_cfg(), target, toy.init_params(0.01, 1), [9], RunContext(threads=t)) for t in (2, 1)]
    assert torch.equal(runs[0].theta, runs[1].theta) and runs[0].metrics.equals(runs[1].metrics)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])  # Ctrl-C; `timeout` or a scheduler's limit
def test_interrupt_then_resume_is_bit_identical(tmp_path, monkeypatch, sig):
    target = MixedTarget.per_run([1.0, 1.5], [0.49, 0.4], L)
    theta0 = toy.init_params(0.01, 2)
    full = train_toy(_cfg(), target, theta0, [1, 2], RunContext(threads=1))
    ctx = RunContext(tmp_path)
    ckpt = ctx.checkpoint
    real_step, calls = optim.step, [0]

    def step_then_ctrl_c(*args):
        calls[0] += 1
        if calls[0] == 70:
            os.kill(os.getpid(), sig)
        return real_step(*args)

    monkeypatch.setattr(trainer.optim, "step", step_then_ctrl_c)
    with pytest.raises(Interrupted, match="--resume"):
        train_toy(_cfg(), target, theta0, [1, 2], ctx)
    monkeypatch.setattr(trainer.optim, "step", real_step)
    assert load_checkpoint(ckpt)["stage"] == 1  # stopped inside Stage II
    resumed = train_toy(_cfg(), target, theta0, [1, 2], ctx.child(resume=True))
    assert torch.equal(resumed.theta, full.theta)
    assert resumed.metrics.equals(full.metrics)


def test_nan_stops_with_a_clear_message_and_keeps_the_last_good_checkpoint(tmp_path):
    target = MixedTarget.per_run([1.0], [0.49], L)
    ctx = RunContext(tmp_path)
    ckpt = ctx.checkpoint
    with pytest.raises(NonFiniteError, match="NaN/inf.*Lower train.lr"):
        train_toy(
            _cfg(stage1_steps=0, stage2_steps=400, finite_check_every=5),
            target,
            toy.init_params(0.01, 1),
            [0],
            ctx,
            lr=[1e4],
        )
    if ckpt.exists():
        assert torch.isfinite(load_checkpoint(ckpt)["theta"]).all()


def test_invalid_train_config():
    with pytest.raises(ValueError, match="train.lr"):
        ToyTrainConfig(lr=0)
    with pytest.raises(ValueError, match="joint"):
        ToyTrainConfig(schedule="joint")


def test_compiled_stage_two_trains_like_the_eager_step():
    target = MixedTarget.per_run([1.0, 2.0], [0.49, 0.3], L)
    on, off = (
        train_toy(_cfg(compile=c), target, toy.init_params(0.05, 2), [3, 4], RunContext(threads=1))
        for c in ("on", "off")
    )
    assert torch.allclose(on.theta, off.theta, rtol=1e-4, atol=1e-6)
    assert not torch.equal(on.theta, toy.init_params(0.05, 2))
