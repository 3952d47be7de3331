"""Induction-head targets of Wang et al. (docs/conventions.md#wang-2): IH_2 (eq. 4), IH_n over (n−1)-token patches (eq. 6)
and the generalised GIH_n (eq. 7) with a similarity g from :data:`SIMILARITIES` or any callable.

Layout: tokens x (..., B, L, d) — any leading axes (e.g. runs), positions, token dimension — and the
target (..., B, d).  Positions are 1-indexed in the docstrings, as in the paper.

IH_n(X) = Σ_{s=n}^{L−1} x_s softmax_s( vec(X_{L−n+2:L})ᵀ W* vec(X_{s−n+1:s−1}) ), where vec stacks a
patch newest first (our reconstruction; docs/conventions.md#wang-1), W* is (n−1)d × (n−1)d, and L ≥ n + 1
(docs/conventions.md#wang-a1: keys s = n..L−1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from inductionlab.config import require

Similarity = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (query (..., 1, m), keys (..., N, m)) → (..., N)
Tokens = Literal["gaussian", "uniform"]


def dot(w_star: torch.Tensor) -> Similarity:
    """g(u, v) = uᵀ W* v: the bilinear score of IH_n (eqs. 4 and 6)."""
    return lambda q, k: (torch.matmul(q, w_star.to(q.dtype)) * k).sum(-1)


def rbf(bandwidth: float = 1.0, scale: float = 1.0) -> Similarity:
    """g(u, v) = scale · exp(−‖u − v‖² / (2 bandwidth²)): a smooth similarity with a fast-decaying POD."""
    return lambda q, k: scale * torch.exp(-(q - k).square().sum(-1) / (2 * bandwidth**2))


def cosine(scale: float = 1.0) -> Similarity:
    """g(u, v) = scale · cos∠(u, v) (0 for a zero vector)."""
    return lambda q, k: scale * torch.nn.functional.cosine_similarity(q, k, dim=-1, eps=1e-12)


SIMILARITIES: dict[str, Callable[..., Similarity]] = {"dot": dot, "rbf": rbf, "cosine": cosine}


def skewed_matrix(m: int, scale: float, skew: float) -> torch.Tensor:
    """W* = scale·I_m + skew·(U − Uᵀ), U the strict upper triangle of ones: a test matrix whose ‖W*‖₂ is not
    the identity's (used by the approximation experiments)."""
    upper = torch.triu(torch.ones(m, m, dtype=torch.float64), 1)
    return scale * torch.eye(m, dtype=torch.float64) + skew * (upper - upper.T)


def sample_tokens(
    shape: Sequence[int], tokens: Tokens, generator: torch.Generator, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """I.i.d. tokens: N(0, 1) or uniform on [−1, 1] per coordinate (the bounded domain of docs/conventions.md#wang-a8)."""
    require(tokens in ("gaussian", "uniform"), "task.tokens", f"must be 'gaussian' or 'uniform', got {tokens!r}")
    if tokens == "gaussian":
        return torch.randn(*shape, generator=generator, dtype=dtype)
    return torch.rand(*shape, generator=generator, dtype=dtype).mul_(2).sub_(1)


def patches(x: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The query patch vec(X_{L−n+2:L}) (..., B, 1, (n−1)d), the key patches vec(X_{s−n+1:s−1}) for
    s = n..L−1 (..., B, L−n, (n−1)d), and the values x_s (..., B, L−n, d); vec is newest first."""
    L = x.shape[-2]
    require(n >= 2, "task.n", f"must be ≥ 2, got {n}")
    require(L >= n + 1, "x", f"IH_{n} needs L ≥ n + 1 = {n + 1} positions, got {L}")
    query = torch.cat([x[..., L - 1 - k : L - k, :] for k in range(n - 1)], -1)
    keys = torch.cat([x[..., n - 1 - k : L - 1 - k, :] for k in range(1, n)], -1)
    return query, keys, x[..., n - 1 : L - 1, :]


def generalized_induction_head(x: torch.Tensor, n: int, similarity: Similarity) -> torch.Tensor:
    """GIH_n(X) = Σ_{s=n}^{L−1} x_s softmax_s(g(vec(X_{L−n+2:L}), vec(X_{s−n+1:s−1}))) (eq. 7): (..., B, d)."""
    query, keys, values = patches(x, n)
    weights = torch.softmax(similarity(query, keys), -1)  # (..., B, L−n)
    return torch.matmul(weights.unsqueeze(-2), values).squeeze(-2)


def induction_head(x: torch.Tensor, w_star: torch.Tensor, n: int = 2) -> torch.Tensor:
    """IH_n with the bilinear score vec(query)ᵀ W* vec(key) (eqs. 4 and 6); ``w_star`` is (n−1)d square."""
    m = (n - 1) * x.shape[-1]
    require(
        tuple(w_star.shape) == (m, m),
        "w_star",
        f"IH_{n} on d = {x.shape[-1]} tokens needs a {m}×{m} matrix, got {tuple(w_star.shape)}",
    )
    return generalized_induction_head(x, n, dot(w_star))


@dataclass(frozen=True)
class InductionTaskConfig:
    """IH_n / GIH_n task: W* = w_scale · I_{(n−1)d} for the bilinear score (docs/conventions.md#wang-6-4: 0.49² I_3 at n = 4)."""

    n: int = 2  # order n of IH_n: the last n − 1 tokens are compared with each earlier patch (wang-2)
    d: int = 1  # token dimension d
    L: int = 40  # sequence length L, ≥ n + 1
    tokens: Tokens = "gaussian"  # token law: gaussian N(0, 1) or uniform on [−1, 1] per coordinate
    # patch similarity: dot x̃_Lᵀ W* x̃_s (IH_n), rbf or cosine (GIH_n, scaled by w_scale)
    similarity: Literal["dot", "rbf", "cosine"] = "dot"
    w_scale: float = 0.49**2  # W* = w_scale·I_{(n−1)d} (dot), or the rbf/cosine similarity's scale
    bandwidth: float = 1.0  # the rbf similarity's bandwidth

    def __post_init__(self) -> None:
        require(self.n >= 2, "task.n", f"must be ≥ 2, got {self.n}")
        require(self.d >= 1, "task.d", f"must be ≥ 1, got {self.d}")
        require(self.L >= self.n + 1, "task.L", f"IH_n needs L ≥ n + 1 = {self.n + 1}, got {self.L}")
        require(math.isfinite(self.w_scale), "task.w_scale", "must be finite")
        require(self.bandwidth > 0, "task.bandwidth", f"must be > 0, got {self.bandwidth}")

    def w_star(self, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        return self.w_scale * torch.eye((self.n - 1) * self.d, dtype=dtype)

    def target(self, x: torch.Tensor) -> torch.Tensor:
        """The task's target for tokens x (..., B, L, d)."""
        if self.similarity == "dot":
            return induction_head(x, self.w_star(x.dtype).to(x.device), self.n)
        args = (self.bandwidth, self.w_scale) if self.similarity == "rbf" else (self.w_scale,)
        return generalized_induction_head(x, self.n, SIMILARITIES[self.similarity](*args))


def repeated_random_tokens(
    batch: int, period: int, repeats: int, generator: torch.Generator, vocab: int = 0, d: int = 1
) -> torch.Tensor:
    """Random sequences repeated ``repeats`` times: integer tokens (B, period·repeats) from ``vocab``, or
    Gaussian real tokens (B, period·repeats, d) when vocab = 0."""
    require(period >= 1 and repeats >= 2, "period", "needs period ≥ 1 and ≥ 2 repeats")
    if vocab:
        base = torch.randint(vocab, (batch, period), generator=generator)
        return base.repeat(1, repeats)
    return torch.randn(batch, period, d, generator=generator).repeat(1, repeats, 1)


def patch_targets(x: torch.Tensor, n: int) -> torch.Tensor:
    """X_{s−n+1:s} for s = n..L (1-indexed) from tokens x (..., B, L, d): (..., B, L−n+1, n·d), newest first —
    the probe targets of Fig. 3."""
    L = x.shape[-2]
    require(L >= n, "x", f"needs L ≥ n = {n}, got {L}")
    return torch.cat([x[..., n - 1 - k : L - k, :] for k in range(n)], -1)


def lifted_target(x: torch.Tensor, alpha_star: float, w_star: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mixed target lifted to d-dimensional tokens x (B, L, d): the blocks (B, d) α*/(1+α*) x_{L−2} and
    1/(1+α*) IH_2(X; W*) with the d × d matrix W* (``docs/conventions.md#wang-6-3``)."""
    return alpha_star / (1 + alpha_star) * x[:, -3], induction_head(x, w_star.to(x.device, x.dtype)) / (1 + alpha_star)
