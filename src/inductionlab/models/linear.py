"""The one-layer linear transformer of Ren, Wang, Lee 2024 (eq. 2; docs/conventions.md#ren-3) and its softmax variant
(docs/conventions.md#ren-9).

f(x; V, A) = V X A e_{x_{T+1}} = Σ_t A_{t, x_{T+1}} v_{x_t} ∈ ℝ^N, with V (N, N) the output layer and A (T, N)
the attention block (column a_k is used when the last token is k).  The softmax variant replaces A by the
column-wise softmax of logits W (T, N).

Run axis first: V (S, N, N), A (S, T, N); a batch is tokens (S, B, T), last (S, B), label (S, B) as drawn
by :func:`inductionlab.tasks.scb.sample`.  X a_k is built by a scatter-add over token indices — no dense
one-hot (B, N, T) tensor.
"""

from __future__ import annotations

import torch


def _flat_last(last: torch.Tensor, N: int) -> torch.Tensor:
    """Row indices (S·B,) of the columns a_{x_{T+1}} in Aᵀ flattened to (S·N, T)."""
    return (last + N * torch.arange(last.shape[0]).view(-1, 1)).view(-1)


def context(A: torch.Tensor, tokens: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """h = X a_{x_{T+1}} (S, B, N): the attention-weighted token counts."""
    S, B, T = tokens.shape
    weights = A.transpose(1, 2).reshape(-1, T).index_select(0, _flat_last(last, A.shape[-1])).view(S, B, T)
    return torch.zeros(S, B, A.shape[-1], dtype=A.dtype).scatter_add_(2, tokens, weights)


def forward(V: torch.Tensor, A: torch.Tensor, tokens: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """f = V X a_{x_{T+1}} (S, B, N)."""
    return torch.einsum("snk,sbk->sbn", V, context(A, tokens, last))


def softmax_attention(W: torch.Tensor) -> torch.Tensor:
    """The softmax model's attention block: column-wise softmax over positions of logits W (S, T, N)."""
    return torch.softmax(W, dim=-2)


def loss(
    V: torch.Tensor, A: torch.Tensor, tokens: torch.Tensor, last: torch.Tensor, label: torch.Tensor
) -> torch.Tensor:
    """Mini-batch mean of ℓ = ½‖e_{x_o} − V X a_{x_{T+1}}‖² (eq. 3), per run (S,)."""
    f = forward(V, A, tokens, last)
    err = f.square().sum(-1) - 2 * f.gather(2, label.unsqueeze(-1)).squeeze(-1) + 1
    return 0.5 * err.mean(-1)


def gradients(
    V: torch.Tensor, A: torch.Tensor, tokens: torch.Tensor, last: torch.Tensor, label: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw mini-batch gradients (G_V (S, N, N), G_A (S, T, N)) of the mean loss (docs/conventions.md#ren-4; our derivation):
    ∇_V ℓ = r (X a_k)ᵀ and ∇_A ℓ = Xᵀ Vᵀ r e_kᵀ with r = V X a_k − e_{x_o}, k = x_{T+1}."""
    S, B, T = tokens.shape
    N = A.shape[-1]
    h = context(A, tokens, last)
    r = torch.bmm(h, V.transpose(1, 2))
    r.scatter_add_(2, label.unsqueeze(-1), -torch.ones(S, B, 1, dtype=r.dtype))
    g_v = torch.bmm(r.transpose(1, 2), h) / B
    per_pos = torch.bmm(r, V).gather(2, tokens) / B  # (Xᵀ Vᵀ r)_t = (Vᵀ r)[x_t]  (S, B, T)
    g_a_t = torch.zeros(S * N, T, dtype=A.dtype).index_add_(0, _flat_last(last, N), per_pos.view(S * B, T))
    return g_v, g_a_t.view(S, N, T).transpose(1, 2)


def precondition(G: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """Π G D_μ⁻¹ (eq. 4): columns divided by μ, then rows centred (so column sums of the update are 0)."""
    G = G / mu.unsqueeze(-2)
    return G - G.mean(-2, keepdim=True)
