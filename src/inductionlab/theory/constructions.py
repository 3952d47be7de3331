"""Explicit transformer constructions of the approximation theorems (Wang et al., docs/conventions.md#wang-4) as weights of
:mod:`inductionlab.models.transformer`, their theoretical bounds, and the approximation-error metric of
docs/conventions.md#wang-3 (max and mean over random inputs, reported per L).

* Theorem 4.1 (IH_2): :func:`ih2_construction`, bound :func:`ih2_bound` = 4B³‖W*‖₂e^{−p} (docs/conventions.md#wang-4-2; our derivation).
* Theorem 4.3 (IH_n): :func:`ihn_construction`, bound :func:`ihn_bound` from the kernels' ℓ1 errors.
* Theorem 4.4 (GIH_n): :func:`gihn_construction` — the layer-1 attention of 4.3, an FFN writing the K leading
  POD bases of g, and a DP layer 2 reassembling the truncated POD.

Finite prefixes (docs/conventions.md#wang-a9): the layer-1 heads of 4.3/4.4 undo the *infinite*-sequence softmax normaliser, so
keys near the start of a sequence keep an error that more heads do not remove.  The constructions take
``pad``: the caller left-pads each sequence with that many zero tokens (:func:`left_pad`); they count in the
layer-1 softmax but layer-2 keys start after them (key_start = pad + n) and the target ignores them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from inductionlab import rng
from inductionlab.config import require
from inductionlab.models import transformer as tf
from inductionlab.theory.approximation import POD, ExpKernel, as_tensor, exp_sum_kernel, fit_relu_features


def ih2_construction(w_star: torch.Tensor, p: Sequence[float]) -> tuple[tf.TransformerConfig, tf.Params]:
    """Theorem 4.1: a two-layer, single-head transformer with D = 2d approximating IH_2 with matrix W*,
    one run per layer-1 slope in ``p`` (docs/conventions.md#wang-4-2).

    Layer 1: RPE only, slope p, W_V copies block 1 (x) into block 2, with residual: z_s = (x_s; y_s),
    y_s ≈ x_{s−1}.  Layer 2: DP only (p = 0), no residual, W_Q = [I 0] → x_L, W_K = [0 W*ᵀ] → W* y_s,
    W_V = [I 0] → x_s, keys s = 2..L−1 (docs/conventions.md#wang-a1).  Readout: block 1 of the last position.
    """
    d = w_star.shape[0]
    require(tuple(w_star.shape) == (d, d), "w_star", f"must be square, got {tuple(w_star.shape)}")
    cfg = tf.TransformerConfig(
        d_in=d,
        d_model=2 * d,
        n_layers=2,
        n_heads=1,
        d_head=d,
        dp=((False,), (True,)),
        rpe=((True,), (False,)),
        residual=(True, False),
        key_start=(1, 2),
        d_out=d,
    )
    S, eye = len(p), torch.eye(d, dtype=torch.float64)
    P = tf.zero_params(cfg, S)
    P["embed.W_E"][:, :, :d] = eye
    P["blocks.0.attn.p"][:, 0] = torch.tensor(list(p), dtype=torch.float64)
    P["blocks.0.attn.W_V"][:, 0, :d] = eye
    P["blocks.0.attn.W_O"][:, 0, :, d:] = eye
    P["blocks.1.attn.W_Q"][:, 0, :d] = eye
    P["blocks.1.attn.W_K"][:, 0, d:] = w_star.double().T
    P["blocks.1.attn.W_V"][:, 0, :d] = eye
    P["blocks.1.attn.W_O"][:, 0, :, :d] = eye
    P["unembed.W_U"][:, :d] = eye
    return cfg, P


def ih2_bound(w_star: torch.Tensor, token_bound: float, p: float) -> float:
    """4 B³ ‖W*‖₂ e^{−p}, valid for every L ≥ 3 (docs/conventions.md#wang-4-2; our derivation): ‖y_s − x_{s−1}‖ ≤ 2Be^{−p}, then the
    softmax Lipschitz bound (Lemma D.1)."""
    return 4 * token_bound**3 * float(torch.linalg.matrix_norm(w_star.double(), ord=2)) * math.exp(-p)


def approximation_errors(
    cfg: tf.TransformerConfig,
    params: tf.Params,
    target: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    chunk: int = 16,
) -> torch.Tensor:
    """‖H(X) − TF_{−1}(X)‖₂ for each run and sequence: (S, B), for tokens x (B, L, d) (docs/conventions.md#wang-3, eq. 5).

    Runs and sequences go through the model in chunks, so L = 1000 fits in memory (layer 1 is O(L²))."""
    want = target(x)  # (B, d)
    S = next(iter(params.values())).shape[0]
    rows = []
    for r in range(S):
        one = {k: v[r : r + 1] for k, v in params.items()}
        got = torch.cat(
            [tf.forward(cfg, one, x[i : i + chunk].unsqueeze(0))[0][0] for i in range(0, x.shape[0], chunk)]
        )
        rows.append((got - want).norm(dim=-1))
    return torch.stack(rows)


def left_pad(x: torch.Tensor, pad: int) -> torch.Tensor:
    """Prepend ``pad`` zero tokens to x (..., L, d) (docs/conventions.md#wang-a9)."""
    return torch.cat([x.new_zeros(*x.shape[:-2], pad, x.shape[-1]), x], -2)


def shift_kernels(n: int, heads_per_group: int) -> list[ExpKernel]:
    """Lemma D.2 kernels φ_i ≈ 1{t = i}, i = 1..n−1, each with ``heads_per_group`` exponential terms."""
    return [exp_sum_kernel(i, heads_per_group) for i in range(1, n)]


def _shift_layer(P: tf.Params, kernels: list[ExpKernel], d: int) -> None:
    """Theorem 4.3 step 3: layer-1 head (i, k) has slope β_k and W_V = α_k/(1 − e^{−β_k}) on block 1, W_O
    writing into block i + 1, so block i + 1 of z_s is Σ_t φ_i(t) x_{s−t} ≈ x_{s−i} (with the residual)."""
    eye = torch.eye(d, dtype=torch.float64)
    m = len(kernels[0].alpha)
    for i, kernel in enumerate(kernels, start=1):
        for k, (alpha, beta) in enumerate(zip(kernel.alpha, kernel.beta)):
            h = (i - 1) * m + k
            P["blocks.0.attn.p"][:, h] = float(beta)
            P["blocks.0.attn.W_V"][:, h, :d, :d] = eye * float(alpha / -math.expm1(-beta))
            P["blocks.0.attn.W_O"][:, h, :d, i * d : (i + 1) * d] = eye


def _config(
    n: int, d: int, heads: int, d_model: int, d_head: int, pad: int, ffn_width: int = 0
) -> tf.TransformerConfig:
    layer2 = (True,) + (False,) * (heads - 1)
    return tf.TransformerConfig(
        d_in=d,
        d_model=d_model,
        n_layers=2,
        n_heads=heads,
        d_head=d_head,
        dp=((False,) * heads, layer2),
        rpe=((True,) * heads, (False,) * heads),
        residual=(True, False),
        ffn_width=(ffn_width, 0),
        key_start=(1, pad + n),
        d_out=d,
    )


def _readout(P: tf.Params, d: int) -> None:
    """Layer-2 head 1 reads x_s (block 1) and writes it to block 1, which the unembedding returns."""
    eye = torch.eye(d, dtype=torch.float64)
    P["embed.W_E"][:, :, :d] = eye
    P["blocks.1.attn.W_V"][:, 0, :d, :d] = eye
    P["blocks.1.attn.W_O"][:, 0, :d, :d] = eye
    P["unembed.W_U"][:, :d] = eye


def ihn_construction(
    w_star: torch.Tensor, n: int, d: int, heads_per_group: int, pad: int = 0
) -> tuple[tf.TransformerConfig, tf.Params, list[ExpKernel]]:
    """Theorem 4.3 (docs/conventions.md#wang-4-3): H = (n−1)·heads_per_group heads, D = n·d, no FFN.  Layer 2 (head 1, p = 0,
    no residual): W_Q reads blocks 1..n−1 = vec(X_{L−n+2:L}), W_K = blocks 2..n times W*ᵀ, so the score is
    vec(X_{L−n+2:L})ᵀ W* vec(X_{s−n+1:s−1}); W_V reads x_s; keys s ≥ n (after ``pad`` zero tokens)."""
    m = (n - 1) * d
    require(
        tuple(w_star.shape) == (m, m), "w_star", f"IH_{n} on d = {d} needs a {m}×{m} matrix, got {tuple(w_star.shape)}"
    )
    require(heads_per_group >= 1 and pad >= 0, "heads_per_group", "needs ≥ 1 head per group and pad ≥ 0")
    kernels = shift_kernels(n, heads_per_group)
    cfg = _config(n, d, (n - 1) * heads_per_group, n * d, m, pad)
    P = tf.zero_params(cfg)
    _shift_layer(P, kernels, d)
    _readout(P, d)
    P["blocks.1.attn.W_Q"][:, 0, :m, :m] = torch.eye(m, dtype=torch.float64)
    P["blocks.1.attn.W_K"][:, 0, d:, :m] = w_star.double().T
    return cfg, P, kernels


def ihn_bound(w_star: torch.Tensor, token_bound: float, kernels: list[ExpKernel]) -> float:
    """Our explicit form of the C/H^q bound of Theorem 4.3 (docs/conventions.md#wang-4-3; our derivation): each shifted block is off by
    ε ≤ B·max_i ‖φ_i − 1{· = i}‖_ℓ1, so query and key patches are off by ≤ √(n−1)·ε, the score by
    δ ≤ ‖W*‖₂(n−1)ε(2B + ε), and the output by ≤ 2Bδ (Lemma D.1; the values x_s are exact)."""
    n = len(kernels) + 1
    eps = token_bound * max(k.l1_error for k in kernels)
    delta = float(torch.linalg.matrix_norm(w_star.double(), ord=2)) * (n - 1) * eps * (2 * token_bound + eps)
    return 2 * token_bound * delta


def gihn_construction(
    decomposition: POD,
    K: int,
    width_per_basis: int,
    n: int,
    d: int,
    heads_per_group: int,
    radius: float,
    pad: int,
    generator: rng.AnyGenerator,
) -> tuple[tf.TransformerConfig, tf.Params]:
    """Theorem 4.4 (docs/conventions.md#wang-4-4): the layer-1 attention of Theorem 4.3; a layer-1 FFN of total width
    m = 2K·width_per_basis whose sub-networks write φ̂_k(query patch = blocks 1..n−1) and ψ̂_k(key patch =
    blocks 2..n) into 2K new coordinates (D = nd + 2K), each fitted on [−radius, radius]^{(n−1)d} (an
    enlarged token box, since layer 1 perturbs the patches); layer 2 DP with W_Q → σ_k φ̂_k and W_K → ψ̂_k,
    so the score is Σ_{k<K} σ_k φ̂_k ψ̂_k ≈ g."""
    m, w = (n - 1) * d, width_per_basis
    require(1 <= K <= len(decomposition.sigma), "K", f"must be in 1..{len(decomposition.sigma)}, got {K}")
    require(decomposition.nodes.shape[1] == m, "pod", f"the POD must be over (n−1)d = {m} dimensions")
    generator = rng.as_numpy(generator)  # one numpy stream for all the sub-networks
    kernels = shift_kernels(n, heads_per_group)
    cfg = _config(n, d, (n - 1) * heads_per_group, n * d + 2 * K, max(K, d), pad, ffn_width=2 * K * w)
    P = tf.zero_params(cfg)
    _shift_layer(P, kernels, d)
    _readout(P, d)
    f = "blocks.0.mlp."
    for side, (rows, basis) in enumerate(((slice(0, m), decomposition.phi), (slice(d, n * d), decomposition.psi))):
        for k in range(K):
            a, b, c, c0 = fit_relu_features(lambda u: basis(u, k + 1)[:, k], m, w, radius, generator)
            cols, out = slice((side * K + k) * w, (side * K + k + 1) * w), n * d + side * K + k
            P[f + "W_in"][:, rows, cols] = as_tensor(a)
            P[f + "b_in"][:, cols] = as_tensor(b)
            P[f + "W_out"][:, cols, out] = as_tensor(c)
            P[f + "b_out"][:, out] = float(c0)
    ks = torch.arange(K)
    P["blocks.1.attn.W_Q"][:, 0, n * d + ks, ks] = as_tensor(decomposition.sigma[:K])
    P["blocks.1.attn.W_K"][:, 0, n * d + K + ks, ks] = 1.0
    return cfg, P
