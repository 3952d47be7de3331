"""The SCB sampler and the linear model's mini-batch gradient fused into one loop (``linear_fused.c``;
docs/conventions.md#scb-fused).

:func:`gradients` turns a batch's uniforms into examples — the tokens by the float32 μ-CDF, the position in the
support of q^{(x_{T+1})}, the label by P's column — and accumulates G_V = Σ r hᵀ and G_A[t, x_{T+1}] = Σ (Vᵀr)[x_t]
(h = X a_{x_{T+1}}, r = V h − e_label) sample by sample, the tokens in a per-sample buffer: no (S, B, T) tensor.
It equals :func:`inductionlab.models.linear.gradients` of the examples that ``tasks/scb.py``'s
``examples_from_uniforms`` draws from the same uniforms, up to the order of the float sums.

* Built on first use (:func:`inductionlab.native.build`, IEEE arithmetic: no fast-math), float32 and float64.
* Checked against the eager path at the first call of each configuration (N, dtype) on inputs of its own (a u equal
  to a CDF value among them); a disagreement logs one warning and turns it off for the process.
* Used for CPU tensors of one float type outside ``torch.compile`` and ``torch.func`` transforms, unless
  ``INDUCTIONLAB_FUSED`` is off or inside ``enabled(False)``; anywhere else the eager function passed in runs.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable
from pathlib import Path

import torch

from inductionlab import native, rng
from inductionlab._runtime import _disagreement

SOURCE = Path(__file__).with_name("linear_fused.c")
GATE = native.Gate("the fused SCB gradient disagrees with eager", logging.getLogger(__name__))
enabled = GATE.enabled  # within the block, the fused loop is used where usable (on) or never (the eager path)
# the uniforms and an instance's caches: (u_tok, u_pl, mu_cdf, q_positions, q_cdf, p_cdf) (gradient_sums)
Data = tuple[torch.Tensor, ...]
Eager = Callable[[Data, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]  # (data, V, A) → means


def _declare(lib: ctypes.CDLL) -> None:
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    for suffix in ("f32", "f64"):
        getattr(lib, f"scb_gradients_{suffix}").argtypes = [*[i64] * 6, *[ptr] * 15]


@functools.cache
def library() -> ctypes.CDLL | None:
    """The built loop, or None (logged once) when it cannot be built or loaded."""
    return native.build(SOURCE, ["-O3"], _declare, "scb", "the fused SCB gradient")


def _usable(*tensors: torch.Tensor) -> bool:
    return GATE.open(tensors, (torch.float32, torch.float64), library)


def gradient_sums(
    data: Data, V: torch.Tensor, A: torch.Tensor, *, with_tokens: bool = False
) -> dict[str, torch.Tensor]:
    """The kernel itself, unchecked: the SUMS over the B samples ``G_V`` (S, N, N) and ``G_A`` (S, T, N), the
    draws ``last`` and ``label`` (S, B) int64, and with ``with_tokens`` ``tokens`` (S, B, T) int64.  The data —
    u_tok (S_d, B, T + 1) float32, u_pl (S_d, B, 2), mu_cdf (S_d, N) (compared in float32), q_positions and q_cdf
    (S_d, N, m), p_cdf (S_d, N, N) — holds S_d = S runs, or one shared by the S runs of V (S, N, N), A (S, T, N)."""
    if not _fits(data, V, A):
        raise ValueError("linear_fused.gradient_sums: the shapes, the uniforms' dtype or the positions do not fit")
    u_tok, u_pl, mu_cdf, q_positions, q_cdf, p_cdf = data
    (S, T, N), (S_d, B, _), m = A.shape, u_tok.shape, q_cdf.shape[-1]
    dtype = V.dtype
    read = [  # as the kernel reads them
        u_tok.float().contiguous(),
        u_pl.to(dtype).contiguous(),
        mu_cdf.float().contiguous(),
        q_positions.to(torch.int64).contiguous(),
        *(t.to(dtype).contiguous() for t in (q_cdf, p_cdf, V, A)),
    ]
    tok, hrw = torch.empty(T, dtype=torch.int32), torch.empty(3 * N, dtype=dtype)
    last, label = torch.empty(S, B, dtype=torch.int64), torch.empty(S, B, dtype=torch.int64)
    tokens = torch.empty(S, B, T, dtype=torch.int32) if with_tokens else None
    G_V, G_A = torch.zeros(S, N, N, dtype=dtype), torch.zeros(S, T, N, dtype=dtype)
    outputs = [tok, hrw, last, label]
    entry = getattr(library(), f"scb_gradients_{'f64' if dtype == torch.float64 else 'f32'}")
    pointers = [t.data_ptr() for t in (*read, *outputs)]
    token_out = tokens.data_ptr() if tokens is not None else None
    entry(S, B, T, N, m, int(S_d == S), *pointers, token_out, G_V.data_ptr(), G_A.data_ptr())
    out = {"G_V": G_V, "G_A": G_A, "last": last, "label": label}
    if tokens is not None:
        out["tokens"] = tokens.long()
    return out


def gradients(data: Data, V: torch.Tensor, A: torch.Tensor, eager: Eager) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch means (G_V (S, N, N), G_A (S, T, N)) of the examples drawn from the uniforms (arguments as
    :func:`gradient_sums`) — fused where usable and checked (the kernel's sums divided by B), else ``eager`` of
    the same arguments."""
    key = (V.shape[-1], V.dtype)
    usable = _usable(V, A, data[1], *data[4:]) and _fits(data, V, A)
    if not usable or not GATE.passes(key, lambda: _check(key, eager)):
        return eager(data, V, A)
    out = gradient_sums(data, V, A)
    B = data[0].shape[1]
    return out["G_V"] / B, out["G_A"] / B


def _fits(data: Data, V: torch.Tensor, A: torch.Tensor) -> bool:
    """Whether the arguments are what the kernel reads (every index it takes in range): float32 CPU uniforms, the
    shapes of :func:`gradient_sums` with S_d ∈ {1, S}, and the support positions in 0..T−1."""
    if len(data) != 6 or A.dim() != 3 or data[0].dim() != 3 or data[4].dim() != 3:
        return False
    u_tok, u_pl, mu_cdf, q_positions, q_cdf, p_cdf = data
    (S, T, N), (S_d, B, _), m = A.shape, u_tok.shape, q_cdf.shape[-1]
    return (
        u_tok.dtype == torch.float32
        and all(t.device.type == "cpu" for t in (u_tok, mu_cdf, q_positions))
        and S_d in (1, S)
        and u_tok.shape == (S_d, B, T + 1)
        and u_pl.shape == (S_d, B, 2)
        and mu_cdf.shape == (S_d, N)
        and q_positions.shape == q_cdf.shape == (S_d, N, m)
        and m >= 1
        and p_cdf.shape == (S_d, N, N)
        and V.shape == (S, N, N)
        and not q_positions.is_floating_point()
        and bool(((q_positions >= 0) & (q_positions < T)).all())
    )


def check_inputs(N: int, dtype: torch.dtype) -> tuple[Data, torch.Tensor, torch.Tensor]:
    """The self-check's inputs (the data (u_tok, u_pl, mu_cdf, q_positions, q_cdf, p_cdf), V, A): 2 runs, 6 samples, T = 9,
    supports of 3 positions (one of 2, its third weight 0), A and V random (A not constant).  Run 1's sample 0 has
    every u equal to μ's first CDF value (all its tokens 1), its position and label u equal to CDF values too;
    run 0's sample 1 has its last token's u equal to μ's second CDF value (so x_{T+1} = 2 where N > 2)."""
    g = rng.generator(4, "check")
    S, B, T, m = 2, 6, 9, 3
    mu = torch.rand(S, N, generator=g, dtype=dtype) + 0.2
    mu_cdf = (mu / mu.sum(-1, keepdim=True)).cumsum(-1)
    positions = torch.stack([torch.randperm(T, generator=g)[:m] for _ in range(S * N)]).view(S, N, m)
    weights = torch.rand(S, N, m, generator=g, dtype=dtype) + 0.5
    weights[0, 0, 2] = 0.0
    q_cdf = (weights / weights.sum(-1, keepdim=True)).cumsum(-1)
    P = torch.rand(S, N, N, generator=g, dtype=dtype) + 0.1
    p_cdf = (P / P.sum(-1, keepdim=True)).cumsum(-1)
    u_tok = torch.rand(S, B, T + 1, generator=g)
    u_pl = torch.rand(S, B, 2, generator=g, dtype=dtype)
    cdf32 = mu_cdf.float()
    u_tok[1, 0] = cdf32[1, 0]
    u_pl[1, 0] = torch.stack([q_cdf[1, 1, 0], p_cdf[1, 1, 0]])
    u_tok[0, 1, T] = cdf32[0, min(1, N - 1)]
    V = torch.randn(S, N, N, generator=g, dtype=dtype)
    A = torch.randn(S, T, N, generator=g, dtype=dtype) / T
    return (u_tok, u_pl, mu_cdf, positions, q_cdf, p_cdf), V, A


def _check(key: tuple, eager: Eager) -> str | None:
    """The fused means against ``eager``'s on :func:`check_inputs`, each run's own data and run 0's shared."""
    N, dtype = key
    data, V, A = check_inputs(N, dtype)
    results = []
    for own in (data, tuple(t[:1] for t in data)):  # each run's own data, and run 0's shared by both
        out = gradient_sums(own, V, A)
        B = own[0].shape[1]
        results.append(((out["G_V"] / B, out["G_A"] / B), eager(own, V, A)))
    return _disagreement([r[0] for r in results], [r[1] for r in results], "(G_V, G_A)")
