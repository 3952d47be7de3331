import pytest
import torch

from inductionlab import rng
from inductionlab.models import toy
from inductionlab.tasks.mixed import MixedTarget, new_tokens
from inductionlab.train.toy_batches import make_batch

THETA = torch.tensor(
    [[0.5, 0.3, 0.2, 0.4, 0.7, 0.6], [1.0, -0.1, 0.5, 0.2, -0.3, 0.8], [0.01] * 6], dtype=torch.float64
)


def _setup(L=9, B=400):
    target = MixedTarget.per_run([1.0, 0.5, 2.0], [0.49, 0.3, 0.4], L, dtype=torch.float64)
    x = new_tokens(3, L, B, [rng.generator(s) for s in (0, 1, 2)], "gaussian", torch.float64)
    return target, x


@pytest.mark.parametrize("layer1", ["learned", "ideal"])
@pytest.mark.parametrize("wrt, cols", [("all", slice(0, 6)), ("layer1", slice(0, 1)), ("layer2", slice(1, 6))])
def test_hand_written_gradient_equals_autograd(layer1, wrt, cols):
    target, x = _setup()
    out = toy.loss_and_grad(THETA, make_batch(x, target, layer1), layer1, wrt=wrt)
    theta = THETA.clone().requires_grad_()
    ref = toy.loss_and_grad(theta, make_batch(x, target, layer1), layer1, need_grad=False)
    ref.loss.sum().backward()
    expected = torch.zeros_like(theta.grad)
    expected[:, cols] = theta.grad[:, cols]
    if layer1 == "ideal":
        expected[:, toy.P_TILDE] = 0  # p̃ does not enter the ideal model
    assert torch.allclose(out.grad, expected, atol=1e-12)
    assert torch.allclose(out.loss, ref.loss.detach(), atol=1e-14)


def test_layer1_is_the_softmax_of_eq5_and_tends_to_the_previous_token():
    L = 6
    a, da = toy.layer1_matrix(torch.tensor([0.7, 50.0], dtype=torch.float64), L)
    for i, s in enumerate(range(2, L)):  # row i is position s (1-indexed)
        w = torch.softmax(torch.tensor([-0.7 * (s - 1 - t) for t in range(1, s)], dtype=torch.float64), 0)
        assert torch.allclose(a[0, i, : s - 1], w) and float(a[0, i, s - 1 :].abs().sum()) == 0
        assert abs(float(a[1, i, s - 2]) - 1) < 1e-12  # p̃ → ∞: y_s = x_{s-1}
    eps = 1e-6
    f = lambda p: toy.layer1_matrix(torch.tensor([p], dtype=torch.float64), L)[0]  # noqa: E731
    assert torch.allclose(da[0], ((f(0.7 + eps) - f(0.7 - eps)) / (2 * eps))[0], atol=1e-8)


def test_global_minimum_is_the_fixed_point_of_stage_two():
    """θ* = (p → ∞, g*, h*, w_Q = w_K = w*) fits the target exactly with the ideal layer 1 (spec §5.3)."""
    target, x = _setup()
    g, h = target.g_star, target.h_star
    theta = torch.stack([torch.zeros(3), torch.full((3,), 60.0), g, h, target.w_star, target.w_star], 1)
    out = toy.loss_and_grad(theta, make_batch(x, target, "ideal"), "ideal", wrt="layer2")
    assert float(out.loss.abs().max()) < 1e-20 and float(out.grad.abs().max()) < 1e-12


def test_shared_and_blocked_batches_equal_plain_ones():
    target, x = _setup(B=50)
    plain = toy.loss_and_grad(THETA, make_batch(x, target, "ideal"), "ideal")
    block = torch.stack([x, 2 * x], 1)  # (S, K=2, L, B)
    prepared = make_batch(block, target.repeat_runs(2), "ideal")
    first = toy.Batch(
        prepared.x[:, 0], prepared.targets[:, 0], prepared.bound, prepared.keys[:, 0], prepared.scores[:, 0]
    )
    assert torch.allclose(toy.loss_and_grad(THETA, first, "ideal").grad, plain.grad, atol=1e-14)
    shared = toy.loss_and_grad(THETA, make_batch(x[:1], target, "learned"), "learned", need_grad=False)
    solo = toy.loss_and_grad(THETA, make_batch(x[:1].expand(3, -1, -1), target, "learned"), "learned", need_grad=False)
    assert torch.allclose(shared.partial, solo.partial)


def test_bad_shapes_are_reported():
    target, x = _setup()
    with pytest.raises(ValueError, match="theta"):
        toy.loss_and_grad(THETA[:, :5], make_batch(x, target, "ideal"), "ideal")


@pytest.mark.parametrize("layer1", ["learned", "ideal"])
@pytest.mark.parametrize("shift", [False, True])
def test_straight_line_stage_two_step_equals_the_hand_written_one(layer1, shift):
    """straight_step (the function the trainer compiles) against loss_and_grad(wrt="layer2"), frozen keys."""
    target, x = _setup()
    a = toy.layer1_matrix(THETA[:, toy.P_TILDE], x.shape[1])[0] if layer1 == "learned" else None
    batch = make_batch(x, target, layer1, a)
    ref = toy.loss_and_grad(THETA, batch, layer1, wrt="layer2")
    partial, grad = toy.straight_step(THETA, batch.x, batch.targets, shift, batch.keys, batch.scores)
    assert torch.allclose(partial, ref.partial, atol=1e-14) and torch.allclose(grad, ref.grad, atol=1e-13)
    assert float(grad[:, toy.P_TILDE].abs().max()) == 0


@pytest.mark.parametrize("shift", [False, True])
def test_straight_line_learned_step_equals_the_hand_written_one(shift):
    target, x = _setup()
    batch = make_batch(x, target, "learned")
    ref = toy.loss_and_grad(THETA, batch, "learned", wrt="all")
    partial, grad = toy.straight_step(THETA, batch.x, batch.targets, shift)
    assert torch.allclose(partial, ref.partial, atol=1e-14) and torch.allclose(grad, ref.grad, atol=1e-13)
