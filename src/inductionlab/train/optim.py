"""Functional optimisers on a (S, P) parameter matrix: per-run learning rates (S,) and a column mask
of trainable parameters (layerwise training trains a subset).  In-place, allocation-light."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class OptimState:
    """Optimiser state; ``m``/``v`` are Adam moments (S, P), ``count`` the Adam step."""

    kind: str
    m: torch.Tensor | None = None
    v: torch.Tensor | None = None
    count: int = 0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8


def new_state(kind: str, theta: torch.Tensor, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> OptimState:
    if kind == "adam":
        return OptimState(kind, torch.zeros_like(theta), torch.zeros_like(theta), 0, betas, eps)
    return OptimState(kind)


def step(theta: torch.Tensor, grad: torch.Tensor, lr_mask: torch.Tensor, state: OptimState) -> None:
    """One update of θ (S, P) in place.

    ``lr_mask`` (S, P) is the per-run learning rate times the 0/1 mask of trainable columns, so frozen
    parameters never move.  ``sgd`` and ``gd`` share the plain step θ ← θ − lr·∇ (they differ in the
    data, not the update); ``adam`` is Kingma & Ba with bias correction.
    """
    if state.kind == "adam":
        b1, b2 = state.betas
        state.count += 1
        state.m.mul_(b1).add_(grad, alpha=1 - b1)
        state.v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        denom = (state.v / (1 - b2**state.count)).sqrt_().add_(state.eps)
        theta.addcdiv_(lr_mask * state.m, denom, value=-1 / (1 - b1**state.count))
    else:
        theta.addcmul_(lr_mask, grad, value=-1)
