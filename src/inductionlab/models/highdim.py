"""The toy model of the dynamics paper lifted to D dimensions (Wang et al., workshop Fig. 4; docs/conventions.md#wang-6-3).

The setup is underspecified (docs/conventions.md#wang-a12); both readings are implemented, chosen by ``reading``:

* **A** (default, recommended in docs/conventions.md#wang-a12): tokens x_i ~ N(0, I_D); the IH score is (W_Q x_L)ᵀ(W_K y_s)
  with W_Q, W_K ∈ ℝ^{D×D}; the target's IH_2 uses W* = w_star_scale · I_D / D; output in ℝ^{2D}.
* **B**: scalar tokens; W_Q, W_K ∈ ℝ^D lift the scalar, so the score is ⟨W_Q, W_K⟩ x_L y_s; the target's
  coefficient is ⟨w*, w*⟩ = w_star_scale² (the Fig. 1 target; at D = 1 this is the Fig. 1 toy itself).

The loss is (3), ½E‖TF − f*‖², averaged over the d output coordinates of each block (``loss="mean"``, the default:
the paper writes (3) for scalar tokens, d = 1, and at D = 100 only the mean is stable at its lr 0.1,
docs/conventions.md#wang-6-3), or summed over them (``loss="sum"``, d times it): GD at rate η on the mean is GD at
η/d on the sum; Adam is invariant to the scale up to its ε.

Both are one formula with W_Q, W_K of shape (r, d): A has r = d = D, B has r = D, d = 1, and the score is
x_Lᵀ W_Qᵀ W_K y_s.  Layer 1 is the ideal y_s = x_{s−1} (the p̃ → ∞ limit of Stage I, Lemma 5.3; the spine's
default ``stage2_layer1="ideal"``), so the trainable parameters are Stage II's: the 4-gram head's slope p
and value g = w_V^{(2,1)}, the IH head's value h = w_V^{(2,2)}, W_Q and W_K.

Shapes: S runs, B batch, L positions, d token dimension; keys s = 2..L−1 (docs/conventions.md#wang-a1), N = L − 2 of them.
Parameters live in one (S, P) matrix θ = [p, g, h, vec W_Q, vec W_K] so optimisers treat all runs at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from inductionlab.config import require


@dataclass(frozen=True)
class HighDimConfig:
    reading: Literal["A", "B"] = "A"  # A: tokens in R^D, W_Q, W_K ∈ R^{D×D}; B: scalar tokens lifted to R^D (wang-6-3)
    D: int = 100  # dimension D of the D-dimensional toy
    L: int = 40  # sequence length L
    alpha_star: float = 1.0  # α*: weight of the 4-gram part relative to the 2-gram part (wang-5-1)
    w_star_scale: float = 0.49  # w*: W* = w*·I/D (reading A) or the score coefficient w*² (reading B)
    sigma_init: float = 0.01  # scalars start here; W_Q, W_K get Frobenius norm sigma_init
    loss: Literal["sum", "mean"] = "mean"  # loss (3) averaged over the d output coordinates (wang-6-3), or summed

    def __post_init__(self) -> None:
        require(self.reading in ("A", "B"), "model.reading", f"must be 'A' or 'B', got {self.reading!r}")
        require(self.D >= 1 and self.L >= 5, "model.D", f"needs D ≥ 1 and L ≥ 5, got D={self.D}, L={self.L}")
        require(
            self.alpha_star > 0 and self.sigma_init > 0, "model.alpha_star", "alpha_star and sigma_init must be > 0"
        )
        require(self.loss in ("sum", "mean"), "model.loss", f"must be 'sum' or 'mean', got {self.loss!r}")

    @property
    def d(self) -> int:
        """Token dimension."""
        return self.D if self.reading == "A" else 1

    @property
    def n_params(self) -> int:
        return 3 + 2 * self.D * self.d

    def w_star(self) -> torch.Tensor:
        """The target's d × d IH_2 matrix."""
        if self.reading == "A":
            return self.w_star_scale * torch.eye(self.D) / self.D
        return torch.full((1, 1), self.w_star_scale**2)


def init_theta(cfg: HighDimConfig, n_runs: int, generator: torch.Generator) -> torch.Tensor:
    """(S, P): p = g = h = σ_init; W_Q, W_K Gaussian rescaled to Frobenius norm σ_init."""
    w = torch.randn(n_runs, 2, cfg.D * cfg.d, generator=generator)
    w = w / w.norm(dim=-1, keepdim=True) * cfg.sigma_init
    return torch.cat([torch.full((n_runs, 3), cfg.sigma_init), w.flatten(1)], 1)


def unpack(cfg: HighDimConfig, theta: torch.Tensor) -> dict[str, torch.Tensor]:
    """Views of θ (S, P): p, g, h (S,), W_Q, W_K (S, r, d)."""
    S, r, d = theta.shape[0], cfg.D, cfg.d
    return {
        "p": theta[:, 0],
        "g": theta[:, 1],
        "h": theta[:, 2],
        "W_Q": theta[:, 3 : 3 + r * d].view(S, r, d),
        "W_K": theta[:, 3 + r * d :].view(S, r, d),
    }


def forward(cfg: HighDimConfig, theta: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The two output blocks at position L for tokens x (B, L, d): 4-gram head g Σ_s π_s y_s and IH head
    h Σ_s ρ_s x_s, each (S, B, d) (docs/conventions.md#wang-5-2, eq. 10 with y_s = x_{s−1})."""
    P = unpack(cfg, theta)
    L = x.shape[1]
    keys = x[:, : L - 2]  # y_s = x_{s−1}, s = 2..L−1
    lag = torch.arange(L - 3, -1, -1, dtype=x.dtype, device=x.device)  # L − 1 − s
    pi = torch.softmax(-P["p"][:, None] * lag, -1)  # (S, N)
    four_gram = P["g"][:, None, None] * torch.einsum("sn,bnd->sbd", pi, keys)
    query = torch.matmul(x[:, -1], P["W_Q"].transpose(1, 2) @ P["W_K"])  # x_Lᵀ W_Qᵀ W_K: (S, B, d)
    return four_gram, P["h"][:, None, None] * _copy(query, x)


def _copy(query: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Σ_s ρ_s x_s with ρ = softmax_s(query · x_{s−1}) over the keys s = 2..L−1: (S, B, d) for queries (S, B, d)."""
    L = x.shape[1]
    rho = torch.softmax(torch.einsum("sbd,bnd->sbn", query, x[:, : L - 2]), -1)
    return torch.einsum("sbn,bnd->sbd", rho, x[:, 1 : L - 1])


def target(cfg: HighDimConfig, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mixed target's blocks (B, d) each for tokens x (B, L, d): α*/(1+α*) x_{L−2} and IH_2(X; W*)/(1+α*)
    (docs/conventions.md#wang-6-3), the latter by the IH head's own computation at W_Qᵀ W_K = W* — one pass over
    the keys; the same numbers as :func:`inductionlab.tasks.induction.lifted_target` up to rounding."""
    a, w_star = cfg.alpha_star, cfg.w_star().to(x.device, x.dtype)
    return a / (1 + a) * x[:, -3], _copy(torch.matmul(x[:, -1], w_star)[None], x)[0] / (1 + a)


def partial_losses(
    cfg: HighDimConfig, theta: torch.Tensor, x: torch.Tensor, want: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """L_G4 and L_IH2 (S,): ½ E‖block − target‖² per block against the target blocks ``want`` (B, d) each
    (:func:`target`); loss (3), averaged over the d coordinates (``cfg.loss="mean"``,
    docs/conventions.md#wang-6-3) or summed over them (``"sum"``)."""
    out = forward(cfg, theta, x)
    per = [0.5 * (o - w).square() for o, w in zip(out, want)]  # (S, B, d) each
    loss_g4, loss_ih2 = (p.sum(-1).mean(-1) if cfg.loss == "sum" else p.mean(-1).mean(-1) for p in per)
    return loss_g4, loss_ih2


def kq_product(cfg: HighDimConfig, theta: torch.Tensor) -> torch.Tensor:
    """‖W_Qᵀ W_K − W*‖_F relative to ‖W*‖_F, per run (S,)."""
    P = unpack(cfg, theta)
    w_star = cfg.w_star().to(theta.device, theta.dtype)
    return (P["W_Q"].transpose(1, 2) @ P["W_K"] - w_star).flatten(1).norm(dim=1) / w_star.norm()
