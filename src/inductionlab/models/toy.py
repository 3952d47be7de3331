"""The six-parameter reparameterised two-layer transformer (Wang et al., dynamics paper §3.1.2,
appendix C.1, eqs. 5–6; docs/conventions.md#wang-5-2).

Parameters, one row per run, columns in :data:`PARAMS` order:
``θ = (p̃ = p^(1,1), p = p^(2,1), w_V1 = w_V^(2,1), w_V2 = w_V^(2,2), w_Q = w_Q^(2,2), w_K = w_K^(2,2))``.

* Layer 1 (RPE only, residual): y_s = Σ_{τ<s} x_τ softmax_τ(−p̃ (s−1−τ))   (eq. 5); y_1 = 0 (docs/conventions.md#wang-a1).
  ``layer1="ideal"`` replaces it by its p̃ → ∞ limit y_s = x_{s−1} (the theory's Stage II).
* Head (2,1), 4-gram: w_V1 Σ_{s=2}^{L-1} π_s y_s with π = softmax(−p (L−1−s)), written to coordinate 1.
* Head (2,2), induction head: w_V2 Σ_{s=2}^{L-1} ρ_s x_s with ρ = softmax(w_Q w_K x_L y_s), written to
  coordinate 2 (docs/conventions.md#wang-a4: the paper prints row 1).  Keys s = 2..L−1 for both heads (docs/conventions.md#wang-a1).
* Loss (eq. 3): ½ E‖TF_{-1} − f*‖² = L_G4 + L_IH2 (one partial loss per coordinate), true softmaxes.
* Initialisation: every parameter σ_init (docs/conventions.md#wang-a5; zero is a fixed point).

Gradients are written out by hand (checked against autograd in the tests): the model is tiny, so the
time goes into Python overhead and element passes, and a hand-written backward needs far fewer of both.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass
from typing import Literal

import torch

from inductionlab import ops
from inductionlab.config import require
from inductionlab.ops import softmax_average

PARAMS = ("p_tilde", "p", "w_V1", "w_V2", "w_Q", "w_K")
P_TILDE, P, W_V1, W_V2, W_Q, W_K = range(6)
LAYER2 = (P, W_V1, W_V2, W_Q, W_K)

Layer1 = Literal["learned", "ideal"]


@dataclass(frozen=True)
class ToyConfig:
    """Toy-model settings: the initial value σ_init of every parameter (docs/conventions.md#wang-a5)."""

    sigma_init: float = 0.01  # σ_init: every toy parameter starts here, θ(0) = σ_init·1 (wang-a5)

    def __post_init__(self) -> None:
        require(
            self.sigma_init > 0 and math.isfinite(self.sigma_init),
            "model.sigma_init",
            f"must be a finite number > 0 (θ = 0 is a fixed point of gradient flow), got {self.sigma_init}",
        )


def init_params(sigma_init: torch.Tensor | float, n_runs: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """θ(0) = σ_init · 1 for each run: (S, 6).  ``sigma_init`` may be a scalar or a (S,) tensor."""
    sigma = torch.as_tensor(sigma_init, dtype=dtype).reshape(-1, 1)
    return sigma.expand(n_runs, len(PARAMS)).clone()


def rpe_weights(
    slope: torch.Tensor, distances: torch.Tensor, bias: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax of −slope·distance over the last axis (the ALiBi-type RPE φ(z; p) = −p(z−1), docs/conventions.md#wang-1-1),
    and its derivative with respect to the slope.

    slope (S,); distances (..., K) broadcast to (S, ..., K); ``bias`` (..., K) is 0 for allowed keys and
    −inf for masked ones (weight 0).
    """
    slope = slope.view((-1,) + (1,) * distances.dim())
    logits = torch.addcmul(bias, slope, distances, value=-1) if bias is not None else slope * -distances
    weights = torch.softmax(logits, dim=-1)
    mean_d = (weights * distances).sum(-1, keepdim=True)
    return weights, weights * (mean_d - distances)


def layer1_geometry(L: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Distances s−1−τ and the strictly causal −inf bias for rows s = 2..L−1, columns τ = 1..L."""
    s = torch.arange(2, L, dtype=dtype).view(-1, 1)  # 1-indexed positions
    tau = torch.arange(1, L + 1, dtype=dtype).view(1, -1)
    bias = torch.zeros(L - 2, L, dtype=dtype).masked_fill(tau >= s, -math.inf)
    return (s - 1 - tau).clamp(min=0), bias


_layer1_geometry = functools.cache(layer1_geometry)  # eager steps reuse it; compiled code builds it inline


def layer1_matrix(p_tilde: torch.Tensor, L: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Layer-1 attention rows of the key positions s = 2..L−1 (eq. 5): A (S, L−2, L) with y_s = Σ_τ A_sτ x_τ,
    and dA/dp̃.  (Row s = 1 has no keys, y_1 = 0, and no layer-2 head reads y_L.)"""
    return rpe_weights(p_tilde, *_layer1_geometry(L, p_tilde.dtype))


@functools.cache
def _four_gram_distances(L: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.arange(L - 3, -1, -1, dtype=dtype)  # L-1-s for s = 2..L-1


def four_gram_weights(p: torch.Tensor, L: int) -> torch.Tensor:
    """π_s = softmax(−p (L−1−s)) over s = 2..L−1 and dπ/dp = π (k̄ − k), stacked: (S, 2, L−2).

    The last result is memoised on the values of p: p is frozen in Stage I, so it is computed once there.
    """
    if p.requires_grad:
        return torch.stack(rpe_weights(p, _four_gram_distances(L, p.dtype)), 1)
    key = (tuple(p.tolist()), L, p.dtype)
    last = getattr(_LAST_4G, "entry", None)
    if last is None or last[0] != key:
        last = _LAST_4G.entry = (key, torch.stack(rpe_weights(p, _four_gram_distances(L, p.dtype)), 1))
    return last[1]


_LAST_4G = threading.local()  # per thread: training and a gradient-flow solve may run side by side


@dataclass
class ToyStep:
    """Partial losses (S, 2) = (L_G4, L_IH2) of one batch — or (S, 2, B) per sample — and, when asked
    for, the gradient (S, 6) of the total loss."""

    partial: torch.Tensor
    grad: torch.Tensor | None = None

    @property
    def loss_G4(self) -> torch.Tensor:
        return self.partial[:, 0]

    @property
    def loss_IH2(self) -> torch.Tensor:
        return self.partial[:, 1]

    @property
    def loss(self) -> torch.Tensor:
        return self.partial.sum(1)


@dataclass
class Batch:
    """Tokens and everything about them that does not depend on the trained parameters.

    x (S or 1, L, B); targets (S, 2, B); bound ≥ max|x|; keys = y_s and scores = x_L·y_s at the key
    positions s = 2..L−1, (S, L−2, B), when layer 1 is fixed (ideal, or frozen in Stage II), else None.
    Trainers build these for a block of future steps in one batched call
    (:func:`inductionlab.train.toy.make_batch`, with the targets of :mod:`inductionlab.tasks.mixed`).
    """

    x: torch.Tensor
    targets: torch.Tensor
    bound: float
    keys: torch.Tensor | None = None
    scores: torch.Tensor | None = None


def fixed_keys(
    x: torch.Tensor, layer1: Layer1, a: torch.Tensor | None = None
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The keys y_s and scores x_L·y_s (…, L−2, B) of tokens x (…, L, B) when layer 1 does not train: the ideal
    y_s = x_{s−1}, or ``a`` = frozen layer-1 rows (S, L−2, L); (None, None) when layer 1 learns.  x may carry
    extra leading block axes, (S, K, L, B)."""
    L = x.shape[-2]
    if layer1 == "ideal":
        keys = x[..., 0 : L - 2, :]
    elif a is not None:
        keys = torch.matmul(a.view(a.shape[:1] + (1,) * (x.dim() - 3) + a.shape[1:]), x)
    else:
        return None, None
    return keys, x[..., L - 1 : L, :] * keys


Wrt = Literal["all", "layer1", "layer2"]


@dataclass
class _Forward:
    """Intermediate values of one forward pass (shapes: runs S, key positions K = L−2, batch B)."""

    x: torch.Tensor  # (S or 1, L, B)
    keys: torch.Tensor  # y_s, (S or 1, K, B)
    scores: torch.Tensor  # x_L y_s, (S or 1, K, B)
    d_keys: torch.Tensor | None  # dy_s/dp̃, (S, K, B)
    weights_4g: torch.Tensor  # π and dπ/dp, (S, 2, K)
    u_du: torch.Tensor  # Σπy and Σ(dπ/dp)y, (S, 2, B)
    v: torch.Tensor  # Σρx, (S, B)
    e: torch.Tensor | None  # unnormalised ρ, (S, K, B)
    z: torch.Tensor  # Σe, (S, B)
    resid: torch.Tensor  # (r1, r2) = TF − f*, (S, 2, B)


def _forward(theta: torch.Tensor, batch: Batch, layer1: Layer1, need_dy: bool, keep_e: bool) -> _Forward:
    x, keys, scores = batch.x, batch.keys, batch.scores
    L = x.shape[1]
    values = x[:, 1 : L - 1]
    d_keys = None
    if layer1 == "learned" and (need_dy or keys is None):
        a, da = layer1_matrix(theta[:, P_TILDE], L)
        both = torch.matmul(torch.cat((a, da), 1) if need_dy else a, x)  # y_s (and dy_s/dp̃), s = 2..L-1
        keys, d_keys = both[:, : L - 2], (both[:, L - 2 :] if need_dy else None)
        scores = None
    elif keys is None:
        keys = x[:, 0 : L - 2]
    if scores is None:
        scores = x[:, L - 1 : L] * keys
    weights_4g = four_gram_weights(theta[:, P], L)
    u_du = torch.matmul(weights_4g, keys)
    v, e, z = softmax_average(
        theta[:, W_Q] * theta[:, W_K], scores, values, needs_shift(theta, batch.bound), keep_weights=keep_e
    )
    resid = theta[:, W_V1 : W_V2 + 1].unsqueeze(-1) * torch.stack((u_du[:, 0], v), 1) - batch.targets
    return _Forward(x, keys, scores, d_keys, weights_4g, u_du, v, e, z, resid)


def forward(theta: torch.Tensor, x: torch.Tensor, layer1: Layer1 = "learned") -> torch.Tensor:
    """The model's output TF_{−1}(X) = (w_V1 Σ_s π_s y_s, w_V2 Σ_s ρ_s x_s) (S, 2, B) — the 4-gram head's
    coordinate 1 and the induction head's coordinate 2 (eq. 6) — of tokens x (S or 1, L, B)."""
    batch = Batch(x, torch.zeros((), dtype=x.dtype), ops.abs_bound(x))
    return _forward(theta, batch, layer1, need_dy=False, keep_e=False).resid


def needs_shift(theta: torch.Tensor, bound: float) -> bool:
    """Whether the model's logits w_Q w_K x_L y_s (|y_s| ≤ max|x| ≤ bound) could overflow exp2 unshifted."""
    return ops.needs_shift(max(abs(r[W_Q] * r[W_K]) for r in theta.detach().tolist()) * bound * bound)


def loss_and_grad(
    theta: torch.Tensor,
    batch: Batch,
    layer1: Layer1 = "learned",
    need_grad: bool = True,
    wrt: Wrt = "all",
    per_sample: bool = False,
) -> ToyStep:
    """Forward pass, partial losses and the hand-written gradient of the toy model.

    Args:
        theta: (S, 6) parameters.
        batch: tokens (S or 1, L, B) with their targets (see :class:`Batch`).
        layer1: "learned" (eq. 5 with p̃) or "ideal" (y_s = x_{s-1}).
        need_grad: compute the gradient.
        wrt: which gradient entries to compute — "layer1" (p̃ only, Stage I), "layer2" (the five
            layer-2 parameters, Stage II) or "all"; the others are returned as 0.
        per_sample: return the partial losses per sample, (S, 2, B), instead of batch means.
    """
    x = batch.x
    S = theta.shape[0]
    require(theta.shape == (S, len(PARAMS)), "theta", f"expected shape (S, {len(PARAMS)}), got {tuple(theta.shape)}")
    require(x.shape[0] in (1, S), "x", f"expected ({S} or 1, L, B) tokens, got {tuple(x.shape)}")
    if per_sample or not need_grad:
        half_sq = 0.5 * _forward(theta, batch, layer1, need_dy=False, keep_e=False).resid.square()
        return ToyStep(half_sq if per_sample else half_sq.mean(-1))
    need_dy = wrt != "layer2" and layer1 == "learned"
    return ToyStep(*_gradient(theta, _forward(theta, batch, layer1, need_dy, keep_e=True), wrt))


def straight_step(
    theta: torch.Tensor,
    x: torch.Tensor,
    targets: torch.Tensor,
    shift: bool,
    keys: torch.Tensor | None = None,
    scores: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Partial losses (S, 2) and the gradient (S, 6): the maths of :func:`loss_and_grad`, written as one
    straight-line function of tensors (no host syncs) so that ``torch.compile`` fuses it into a few
    loops — the trainer compiles it on long stages.

    Without ``keys``: the learned layer 1, all six gradient entries (``wrt="all"``).  With ``keys`` y_s
    and ``scores`` x_L y_s precomputed, (S or 1, L−2, B): layer 1 fixed, the p̃ entry is 0 (Stage II).
    x (S or 1, L, B); targets (S, 2, B); ``shift``: subtract the per-column max of the logits, needed only
    when they could overflow (:func:`needs_shift`; compiled, that max costs more than the rest of the step).
    """
    L = x.shape[1]
    p_tilde, p, g, h, w_q, w_k = theta.unbind(1)
    values = x[:, 1 : L - 1]
    d_keys = None
    if keys is None:
        a, da = rpe_weights(p_tilde, *layer1_geometry(L, theta.dtype))
        y_dy = torch.matmul(torch.cat((a, da), 1), x)
        keys, d_keys = y_dy[:, : L - 2], y_dy[:, L - 2 :]  # y_s and dy_s/dp̃, (S, K, B)
        scores = x[:, L - 1 : L] * keys
    assert scores is not None  # computed above without keys, passed in with them
    dist = torch.arange(L - 3, -1, -1, dtype=theta.dtype)  # L−1−s for s = 2..L−1
    pi = torch.softmax(-p.unsqueeze(1) * dist, -1)  # (S, K)
    d_pi = pi * ((pi * dist).sum(-1, keepdim=True) - dist)  # dπ/dp
    u_du = torch.matmul(torch.stack((pi, d_pi), 1), keys)  # Σπy, Σ(dπ/dp)y: (S, 2, B)
    c = (w_q * w_k).view(-1, 1, 1)
    logits = c * scores
    e = torch.exp(logits - logits.amax(1, keepdim=True) if shift else logits)  # (S, K, B)
    z = e.sum(1)
    v = (e * values).sum(1) / z  # Σρx, (S, B)
    centred = e * (values - v.unsqueeze(1))
    dv = (centred * scores).sum(1) / z  # dv/d(w_Q w_K)
    resid = torch.stack((g.unsqueeze(1) * u_du[:, 0], h.unsqueeze(1) * v), 1) - targets  # (S, 2, B)
    r1, r2 = resid.unbind(1)
    if d_keys is None:
        dp_tilde = torch.zeros_like(p)
    else:
        u_dpt = torch.matmul(pi.unsqueeze(1), d_keys)[:, 0]  # du/dp̃
        v_dpt = c[:, 0] * x[:, L - 1] * (centred * d_keys).sum(1) / z  # dv/dp̃
        dp_tilde = (g.unsqueeze(1) * r1 * u_dpt + h.unsqueeze(1) * r2 * v_dpt).mean(-1)
    dc = h * (r2 * dv).mean(-1)
    grad = torch.stack(
        (dp_tilde, g * (r1 * u_du[:, 1]).mean(-1), (r1 * u_du[:, 0]).mean(-1), (r2 * v).mean(-1), w_k * dc, w_q * dc), 1
    )
    return 0.5 * resid.square().mean(-1), grad


def _gradient(theta: torch.Tensor, fwd: _Forward, wrt: Wrt) -> tuple[torch.Tensor, torch.Tensor]:
    """Every statistic the gradient needs is a batch mean of a product with r1 or r2, so the features
    are stacked and one bmm with the residuals gives them all (far fewer ops than term by term)."""
    S, L, B = theta.shape[0], fwd.x.shape[1], fwd.x.shape[2]
    _, _, g, h, wq, wk = theta.unbind(1)
    values, resid, e = fwd.x[:, 1 : L - 1], fwd.resid, fwd.e
    assert e is not None  # loss_and_grad runs _forward with keep_e=True before the gradient
    feats = [resid]
    if wrt != "layer1":  # u, du/dp, v, dv/dc
        feats += [fwd.u_du, fwd.v.unsqueeze(1), _centered_sum(e, fwd.scores, values, fwd.v, fwd.z)]
    if fwd.d_keys is not None:  # du/dp̃, dv/dp̃ (forward mode along p̃)
        dv = (wq * wk).unsqueeze(1) * fwd.x[:, L - 1] * _centered_sum(e, fwd.d_keys, values, fwd.v, fwd.z)[:, 0]
        feats += [torch.matmul(fwd.weights_4g[:, :1], fwd.d_keys), dv.unsqueeze(1)]
    prods = torch.bmm(torch.cat(feats, 1), resid.transpose(1, 2)).view(S, -1) / B  # (S, 2 × n_features)
    zero = torch.zeros_like(g)
    dp_tilde = g * prods[:, -4] + h * prods[:, -1] if fwd.d_keys is not None else zero
    if wrt == "layer1":
        grad = torch.stack((dp_tilde, zero, zero, zero, zero, zero), 1)
    else:
        r1u, r1du, r2v, r2dl = prods.index_select(1, _STAT_INDEX).unbind(1)
        dc = h * r2dl
        grad = torch.stack((dp_tilde, g * r1du, r1u, r2v, wk * dc, wq * dc), 1)
    return 0.5 * prods.index_select(1, _LOSS_INDEX), grad


_LOSS_INDEX = torch.tensor([0, 3])  # r1·r1, r2·r2 in `prods`
_STAT_INDEX = torch.tensor([4, 6, 9, 11])  # u·r1, du·r1, v·r2, (dv/dc)·r2 in `prods`


def _centered_sum(
    e: torch.Tensor, d: torch.Tensor, values: torch.Tensor, v: torch.Tensor, z: torch.Tensor
) -> torch.Tensor:
    """Σ_s ρ_s (x_s − v) d_s with ρ = e / z: the derivative of v = Σρx along logits moving by d, (S, 1, B)."""
    ed = e * d
    return ed.sum(1).mul_(v).neg_().add_(ed.mul_(values).sum(1)).div_(z).unsqueeze(1)


def w_kq(theta: torch.Tensor) -> torch.Tensor:
    """Effective w_KQ = sign(w_Q w_K)·sqrt|w_Q w_K| (equals w_Q = w_K on the balanced manifold, Lemma 5.4)."""
    c = theta[..., W_Q] * theta[..., W_K]
    return torch.sign(c) * c.abs().sqrt()
