"""Functional optimisers on a (S, P) parameter matrix: per-run learning rates (S,) and a column mask
of trainable parameters (layerwise training trains a subset).  In-place, allocation-light."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class OptimState:
    """Optimiser state; ``m``/``v`` are Adam moments (S, P), ``count`` the Adam step; for SGD with
    ``momentum`` > 0, ``m`` is the heavy-ball velocity (S, P)."""

    kind: str
    m: torch.Tensor | None = None
    v: torch.Tensor | None = None
    count: int = 0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    momentum: float = 0.0


def new_state(
    kind: str, theta: torch.Tensor, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, momentum: float = 0.0
) -> OptimState:
    if kind == "adam":
        return OptimState(kind, torch.zeros_like(theta), torch.zeros_like(theta), 0, betas, eps)
    if momentum > 0:
        return OptimState(kind, torch.zeros_like(theta), momentum=momentum)
    return OptimState(kind)


def clip_rows(grad: torch.Tensor, max_norm: float) -> None:
    """Scale each run's gradient (a row of (S, P)) in place to Euclidean norm ≤ ``max_norm``.  Unlike
    Adam's per-coordinate normalisation this keeps the gradient's direction, so parameters with larger
    gradients still move faster (the time-scale separation of Wang et al. survives)."""
    norms = torch.linalg.vector_norm(grad, dim=1, keepdim=True)
    grad.mul_((max_norm / norms.clamp_min(1e-30)).clamp_max(1.0))


def step(theta: torch.Tensor, grad: torch.Tensor, lr_mask: torch.Tensor, state: OptimState) -> None:
    """One update of θ (S, P) in place.

    ``lr_mask`` (S, P) is the per-run learning rate times the 0/1 mask of trainable columns, so frozen
    parameters never move.  ``sgd`` and ``gd`` share the plain step θ ← θ − lr·∇ (they differ in the
    data, not the update), or with momentum μ the heavy ball v ← μ·v + ∇, θ ← θ − lr·v (PyTorch's SGD
    convention); ``adam`` is Kingma & Ba with bias correction.
    """
    if state.kind == "adam":
        b1, b2 = state.betas
        m, v = state.m, state.v
        assert m is not None and v is not None  # new_state gives Adam both moments
        state.count += 1
        m.mul_(b1).add_(grad, alpha=1 - b1)
        v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        denom = (v / (1 - b2**state.count)).sqrt_().add_(state.eps)
        theta.addcdiv_(lr_mask * m, denom, value=-1 / (1 - b1**state.count))
    elif state.m is not None:
        state.m.mul_(state.momentum).add_(grad)
        theta.addcmul_(lr_mask, state.m, value=-1)
    else:
        theta.addcmul_(lr_mask, grad, value=-1)
