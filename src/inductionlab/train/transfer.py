"""The transfer initialisation of Ren et al. (docs/conventions.md#ren-8, Lemmas H.1–H.2): from a pretrained task
correlated with the target, one gradient step on A lands Stage 2's start, so that the poly(T) Stage 1 is skipped."""

from __future__ import annotations

import torch

from inductionlab.config import require
from inductionlab.models import linear
from inductionlab.tasks.scb import SCBInstance
from inductionlab.theory.scb import signal
from inductionlab.train.scb_batch import sampled_gradients


def reversal(P: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """The time reversal D_μ Pᵀ D_μ⁻¹ of a column-stochastic P (S, N, N): column-stochastic with the same μ."""
    return P.transpose(1, 2) * mu.unsqueeze(-1) / mu.unsqueeze(-2)


CHUNK_TOKENS = 1 << 22  # context tokens of the runs drawn at once by transfer_start: its peak memory (~200 B each)


def transfer_start(
    inst: SCBInstance,
    V_bar: torch.Tensor,
    gamma: float,
    alpha_target: float,
    n_samples: int,
    generator: torch.Generator,
    chunk: int = 4096,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Transfer initialisation (docs/conventions.md#ren-8, Lemmas H.1–H.2): V₀ = μ1ᵀ + γ(V̄ − μ1ᵀ), A₀ = 11ᵀ/T, then one gradient
    step on A from ``n_samples`` samples (drawn in chunks of at most ``chunk`` samples and CHUNK_TOKENS context
    tokens) with λ = 0 and η_A = α*/(K_P β₀), so that the population step lands at α₁ = α* on the line (β₀ = β(V₀)
    from the ground truth [P: the proposed η_A ≈ Θ(1)/(K_Pβ₀)]).  The thresholding that follows is the rounding at the start of Stage 2
    (:func:`train_scb` with ``stage1_steps=0``).  Returns V₀ (S, N, N), A₁ (S, T, N) and β₀ (S,)."""
    require(0 < gamma <= 1 and alpha_target > 0 and n_samples >= 1, "transfer", "needs 0 < γ ≤ 1, α* > 0, n ≥ 1")
    mu = inst.mu
    V0 = mu.unsqueeze(-1) + gamma * (V_bar - mu.unsqueeze(-1))
    A0 = torch.full_like(inst.Q, 1.0 / inst.T)
    beta0 = signal(V0, A0, inst)["beta"]
    require(bool((beta0 > 0).all()), "transfer", "the pretraining task must correlate with the task (β₀ > 0, κ > 0)")
    grad = torch.zeros_like(A0)
    chunk = max(1, min(chunk, CHUNK_TOKENS // (A0.shape[0] * (inst.T + 1))))  # (S, chunk, T) temporaries bounded
    for start in range(0, n_samples, chunk):
        size = min(chunk, n_samples - start)
        grad += sampled_gradients(V0, A0, inst, size, generator)[1] * (size / n_samples)
    eta_A = (alpha_target / (inst.K_P * beta0)).view(-1, 1, 1)
    return V0, A0 - eta_A * linear.precondition(grad, mu), beta0
