"""Closed forms of the Stage-II population losses of the toy model (Wang et al., dynamics paper,
appendix C.3, eqs. 7 and 10; docs/conventions.md#wang-5-4), with y_s = x_{s-1} and Gaussian tokens.

State (model parameters, not the reduced ŵ): p = p^(2,1), g = w_V1, h = w_V2, w_Q, w_K.

* 4-gram (eq. 7):  L_G4 = ½g*² + ½g² M(2p)/M(p)² − g* g / M(p),  M(p) = Σ_{k=0}^{L-3} e^{-pk}.
* Induction head with softmax replaced by exp(·)/(L−2) (Bai et al. 2023; eq. 10), v = w_Q w_K:
  L_IH2 = c(w*²,w*²)/(2(1+α*)²(L−2)) + h² c(v,v)/(2(L−2)) − h c(v,w*²)/((1+α*)(L−2)),
  c(a,b) = (1 − (a+b)²)^{-1/2}   (Lemma 7: E[e^{aXY}Z²] = (1−a²)^{-1/2}), valid for 2|v|, 2w*² < 1.

Gradients are with respect to the model's own parameters: ∂/∂w_Q = w_K ∂/∂v.  On the balanced manifold
w_Q = w_K = w this runs w at half the rate of the printed ŵ ODE (docs/conventions.md#wang-a6) — the printed ODE treats w²
as if w were one parameter.  Scalar functions use ``math`` (they sit inside ODE right-hand sides).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from inductionlab.config import require

SMALL_P = 1e-4  # below this, M and m are summed term by term (the closed forms lose ~ε/p)


def M(p: float, L: int) -> float:
    """M(p) = Σ_{k=0}^{L-3} e^{-pk} = (1 − e^{-p(L-2)}) / (1 − e^{-p}) (written with expm1: no cancellation)."""
    if abs(p) < SMALL_P:
        return math.fsum(math.exp(-p * k) for k in range(L - 2))
    return math.expm1(-p * (L - 2)) / math.expm1(-p)


def m(p: float, L: int) -> float:
    """m(p) = −M'(p) = Σ_{k=1}^{L-3} k e^{-pk} = q (1 − n q^{n−1} + (n−1) q^n) / (1−q)², q = e^{-p}, n = L−2."""
    if abs(p) < SMALL_P:
        return math.fsum(k * math.exp(-p * k) for k in range(1, L - 2))
    n, q, one_minus_q = L - 2, math.exp(-p), -math.expm1(-p)
    numerator = -math.expm1(-p * (n - 1)) - (n - 1) * q ** (n - 1) * one_minus_q
    return q * numerator / (one_minus_q * one_minus_q)


def g_star(alpha_star: float) -> float:
    return alpha_star / (1 + alpha_star)


def h_star(alpha_star: float) -> float:
    return 1 / (1 + alpha_star)


def loss_grad_g4(p: float, g: float, alpha_star: float, L: int) -> tuple[float, float, float]:
    """(L_G4, ∂L_G4/∂p, ∂L_G4/∂g), eq. (7); −gradient is the printed (ṗ, ġ) of appendix C.3.1."""
    gs, mp, m1, m2p, m22 = g_star(alpha_star), M(p, L), m(p, L), M(2 * p, L), m(2 * p, L)
    loss = 0.5 * gs * gs + 0.5 * g * g * m2p / (mp * mp) - gs * g / mp
    d_p = (-gs * g * m1 + g * g * m1 * m2p / mp - g * g * m22) / (mp * mp)
    d_g = -(gs - g * m2p / mp) / mp
    return loss, d_p, d_g


def _c(a: float, b: float) -> float:
    return (1 - (a + b) ** 2) ** -0.5


def check_ih_domain(w_star: float, v: float = 0.0) -> None:
    """The exp-simplified closed form needs 2w*² < 1 and 2|w_Q w_K| < 1."""
    if 2 * w_star**2 < 1 and 2 * abs(v) < 1:
        return
    require(2 * w_star**2 < 1, "task.w_star", f"the closed form (eq. 10) needs w* < 1/√2 ≈ 0.7071, got {w_star}")
    require(2 * abs(v) < 1, "w_Q·w_K", f"the closed form (eq. 10) needs |w_Q w_K| < 1/2, got {v}")


def loss_grad_ih2(
    wq: float, wk: float, h: float, alpha_star: float, w_star: float, L: int
) -> tuple[float, float, float, float]:
    """(L_IH2, ∂/∂w_Q, ∂/∂w_K, ∂/∂h) of the exp-simplified eq. (10), with v = w_Q w_K."""
    v, vs, n, a1 = wq * wk, w_star**2, L - 2, 1 + alpha_star
    check_ih_domain(w_star, v)
    c_vv, c_vs = _c(v, v), _c(v, vs)
    loss = _c(vs, vs) / (2 * a1 * a1 * n) + h * h * c_vv / (2 * n) - h * c_vs / (a1 * n)
    d_v = h * h * 4 * v * c_vv**3 / (2 * n) - h * (v + vs) * c_vs**3 / (a1 * n)
    return loss, wk * d_v, wq * d_v, h * c_vv / n - c_vs / (a1 * n)


def predicted_plateau(L: int, alpha_star: float, w_star: float, sigma_init: float) -> float:
    """Theorem 5.5's scale of T_II and T_III: (1+α*)² L log(1/σ_init) / w*² (constants not given)."""
    return (1 + alpha_star) ** 2 * L * math.log(1 / sigma_init) / w_star**2


def h_turning_threshold(w_star: float) -> float:
    """w° of the proof: h starts to fall once w exceeds it (≈ 0.299 at w* = 0.49; docs/conventions.md#wang-5-5)."""
    a = 4 * w_star**4
    return math.sqrt((3 - a - math.sqrt((a - 3) ** 2 - 4 * a)) / (8 * w_star**2))


PHASE_NAMES = ("T_I", "T_o", "T_II", "T_III", "T_50", "T_w001", "T_whalf")


@dataclass(frozen=True)
class PhaseTimes:
    """The phase boundaries of Theorem 5.5 on a time axis t (definitions: :mod:`inductionlab.analysis.phases`)."""

    T_I: float
    T_o: float
    T_II: float
    T_III: float
    T_50: float
    T_w001: float
    T_whalf: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def ih_ratio_lazy(t: float, L: int, alpha_star: float, w_star: float, sigma_init: float) -> float:
    """L_IH2(t) / L_IH2(0) of eq. (10) while w_Q w_K stays at σ_init² (the IH head's lazy part, before w grows).

    With v frozen, ḣ = (B − A h)/(L−2), A = c(v,v), B = c(v,w*²)/(1+α*), so h − B/A decays like e^{−At/(L−2)}, and
    L_IH2 ∝ C − B²/A + A (h − B/A)², C = c(w*²,w*²)/(1+α*)²: the h-fit removes the fraction B²/(AC) of L_IH2(0)
    on the time scale L (docs/conventions.md#wang-5-5).  Theorem 5.5's L_IH2(T_I) ≥ 0.99 L_IH2(0) needs
    T_I ≪ L: this ratio at T_I says by how much."""
    v, a1, n = sigma_init**2, 1 + alpha_star, L - 2
    A, B, C = _c(v, v), _c(v, w_star**2) / a1, _c(w_star**2, w_star**2) / a1**2
    rest, gap0 = C - B * B / A, A * (sigma_init - B / A) ** 2
    return (rest + gap0 * math.exp(-2 * A * t / n)) / (rest + gap0)


def literal_fixed_point(p_tilde: np.ndarray, alpha_star: float, w_star: float) -> dict[str, np.ndarray]:
    """Where a finite p̃ moves Stage II's fixed point in the literal protocol (docs/conventions.md#wang-5-3).

    With r = e^{−p̃}, y_s = Σ_k (1−r) r^{k−1} x_{s−k} (eq. 5, long context), and E[x_{s−1} | y_s] = (1+r) y_s.
    The 4-gram head (positive softmax weights) fits g*x_{L−2} at best from y_{L−1} alone: g → g*(1+r), leaving the
    fraction ``g4_floor`` = r² of L_G4(0).  The induction head's logit w_KQ² x_L y_s best matches w*² x_L x_{s−1}
    at ``w_KQ`` ≈ w* √(1+r); ``w_V1`` = g*(α*)(1+r)."""
    r = np.exp(-np.asarray(p_tilde, dtype=float))
    return {"g4_floor": r**2, "w_V1": g_star(alpha_star) * (1 + r), "w_KQ": w_star * np.sqrt(1 + r)}
