"""Explicit transformer constructions of the approximation theorems (Wang et al., spec §4) as weights of
:mod:`inductionlab.models.transformer`, their theoretical bounds, and the approximation-error metric of
spec §3 (max and mean over random inputs, reported per L).

* Theorem 4.1 (IH_2): :func:`ih2_construction`, bound :func:`ih2_bound` = 4B³‖W*‖₂e^{−p} (spec §4.2 [D]).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from inductionlab.config import require
from inductionlab.models import transformer as tf


def ih2_construction(w_star: torch.Tensor, p: Sequence[float]) -> tuple[tf.TransformerConfig, tf.Params]:
    """Theorem 4.1: a two-layer, single-head transformer with D = 2d approximating IH_2 with matrix W*,
    one run per layer-1 slope in ``p`` (spec §4.2).

    Layer 1: RPE only, slope p, W_V copies block 1 (x) into block 2, with residual: z_s = (x_s; y_s),
    y_s ≈ x_{s−1}.  Layer 2: DP only (p = 0), no residual, W_Q = [I 0] → x_L, W_K = [0 W*ᵀ] → W* y_s,
    W_V = [I 0] → x_s, keys s = 2..L−1 (spec A1).  Readout: block 1 of the last position.
    """
    d = w_star.shape[0]
    require(tuple(w_star.shape) == (d, d), "w_star", f"must be square, got {tuple(w_star.shape)}")
    cfg = tf.TransformerConfig(d_in=d, d_model=2 * d, n_layers=2, n_heads=1, d_head=d, dp=((False,), (True,)),
                               rpe=((True,), (False,)), residual=(True, False), key_start=(1, 2), d_out=d)
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
    """4 B³ ‖W*‖₂ e^{−p}, valid for every L ≥ 3 (spec §4.2 [D]): ‖y_s − x_{s−1}‖ ≤ 2Be^{−p}, then the
    softmax Lipschitz bound (Lemma D.1)."""
    return 4 * token_bound**3 * float(torch.linalg.matrix_norm(w_star.double(), ord=2)) * math.exp(-p)


def approximation_errors(cfg: tf.TransformerConfig, params: tf.Params, target: Callable[[torch.Tensor], torch.Tensor],
                         x: torch.Tensor, chunk: int = 16) -> torch.Tensor:
    """‖H(X) − TF_{−1}(X)‖₂ for each run and sequence: (S, B), for tokens x (B, L, d) (spec §3, eq. 5).

    Runs and sequences go through the model in chunks, so L = 1000 fits in memory (layer 1 is O(L²))."""
    want = target(x)  # (B, d)
    S = next(iter(params.values())).shape[0]
    rows = []
    for r in range(S):
        one = {k: v[r : r + 1] for k, v in params.items()}
        got = torch.cat([tf.forward(cfg, one, x[i : i + chunk].unsqueeze(0))[0][0] for i in range(0, x.shape[0], chunk)])
        rows.append((got - want).norm(dim=-1))
    return torch.stack(rows)
