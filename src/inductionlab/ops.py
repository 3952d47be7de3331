"""Small tensor kernels shared by tasks and models.

Layout convention (used throughout the toy path): token-major ``(S, L, B)`` = runs × positions × batch,
so that reductions over positions are vectorised over the batch.
"""

from __future__ import annotations

import math

import torch

LOG2E = math.log2(math.e)
FAST_EXPONENT_LIMIT = 60.0  # |logit·log2 e| below this: exp2 without a max shift cannot overflow float32


def softmax_average(
    coef: torch.Tensor, scores: torch.Tensor, values: torch.Tensor, shift: bool, keep_weights: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Softmax-weighted average over positions with logits ``coef · scores``.

    Args:
        coef: (S,) logit coefficient per run.
        scores: (S, K, B) unscaled scores (e.g. ``x_L · y_s``); the softmax runs over K.
        values: (S or 1, K, B) values to average.
        shift: subtract the per-column max before exponentiating; needed only when the logits could
            overflow (see :func:`needs_shift`).
        keep_weights: also return the unnormalised weights (costs one more buffer).

    Returns:
        ``(avg, weights, Z)``: avg (S, B) = Σ_k ρ_k values_k; weights (S, K, B) with ``ρ = weights / Z``
        (or None); Z (S, B).  Softmax is shift invariant, so this is the exact softmax; the max shift is
        applied only when the logits could overflow (exp2 is ~3× faster than exp here).  In-place work on
        one buffer keeps the passes in cache.  (Stacking several softmaxes on a head axis was measured
        slower: broadcasting multiplies over a middle axis do not vectorise well on CPU.)
    """
    weights = (coef * LOG2E).view(-1, 1, 1) * scores
    if shift:
        weights.sub_(weights.amax(dim=1, keepdim=True))
    weights.exp2_()
    z = weights.sum(dim=1)
    weighted = weights * values if keep_weights or weights.requires_grad else weights.mul_(values)
    return weighted.sum(dim=1).div_(z), (weights if keep_weights else None), z


def needs_shift(logit_bound: float) -> bool:
    """Whether logits bounded by ``logit_bound`` in absolute value could overflow exp2 unshifted."""
    return logit_bound * LOG2E >= FAST_EXPONENT_LIMIT


def abs_bound(x: torch.Tensor) -> float:
    """max |x| as a Python float (one pass)."""
    lo, hi = torch.aminmax(x)
    return max(-float(lo), float(hi))
