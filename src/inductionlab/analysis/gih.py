"""The generalised induction head GIH (Chen et al. 2024, docs/conventions.md#chen-4-1) and argmax agreement with a model.

GIH_a(k) = Σ_{l≤L} 1{x_l = k} e^{a·1{X_{l−S*} = X_{L+1−S*}}} / Σ_{l≤L} e^{a·1{…}}: attention to the positions
whose lag-S* context matches the query's.  As a → ∞ it is N_{z*,k} / N_{z*}, the in-context n-gram frequency
over the lags S*, falling back to the unigram frequencies when the context never occurred (N_{z*} = 0).
"""

from __future__ import annotations

import math

import torch

from inductionlab.tasks.markov import parent_states


def gih_predictor(inputs: torch.Tensor, lags: tuple[int, ...], d: int, a: float = math.inf) -> torch.Tensor:
    """GIH_a (B, d) for inputs x_{1:L} (B, L) and the selected lags S* (1-based, e.g. (1, 2))."""
    B, L = inputs.shape
    padded = torch.cat([inputs, torch.zeros(B, 1, dtype=inputs.dtype)], 1)
    z = parent_states(padded, tuple(lags), d)
    match = (z[:, :L] == z[:, L:]).to(torch.float64)  # (B, L)
    weights = match if math.isinf(a) else (a * match).exp()
    counts = torch.zeros(B, d, dtype=torch.float64).scatter_add_(1, inputs, weights)
    unigram = torch.zeros(B, d, dtype=torch.float64).scatter_add_(1, inputs, torch.ones(B, L, dtype=torch.float64)) / L
    total = counts.sum(-1, keepdim=True)
    return torch.where(total > 0, counts / total.clamp_min(1e-300), unigram)


def argmax_agreement(y: torch.Tensor, reference: torch.Tensor, tol: float = 1e-9) -> torch.Tensor:
    """Fraction of rows (over the second-last axis) whose argmax of ``y`` (..., B, d) is an argmax of
    ``reference`` (ties in the reference count as agreement)."""
    top = y.argmax(-1, keepdim=True)
    ref_at_top = reference.gather(-1, top).squeeze(-1)
    return (ref_at_top >= reference.amax(-1) - tol).double().mean(-1)
