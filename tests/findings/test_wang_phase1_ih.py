"""Independent re-implementation (numpy only) of Wang, Yu, E & Wu, Theorem 4, Phase I (dynamics paper, §3.2):
"L_IH2(θ(T_I)) ⩾ 0.99 · L_IH2(θ(0))" at T_I, the first time L_G4 ≤ 0.01 · L_G4(θ(0)).

Written from the paper alone, App. C.3: the closed forms (7) and (10), the printed gradient flows of (p, g) in
C.3.1 and of (w, h) in C.3.2 (w = w_KQ as one parameter, the paper's own convention), and θ(0) = σ_init·1.  The
two heads are decoupled, so T_I comes from (p, g) and the ratio from (w, h).  Fixed-step RK4 in t, all L at once.

Finding: at Fig. 1's point (α* = 1, w* = 0.49, σ_init = 0.01) T_I ≈ 205 at every L, while w_V2 = h relaxes on
the time scale L − 2, so by T_I the h-fit has already removed most of L_IH2(0) unless L is huge: the ratio is
0.072 at L = 40 and passes 0.99 only near L ≈ 3.8·10⁴; 1 − ratio ≈ 2(B²/C) T_I/(L − 2) with
B²/C = (1 − 4w*⁴)^{1/2}/(1 − w*⁴) ≈ 0.93 at v = w² ≈ 0.
"""

import math

import numpy as np
import pytest

ALPHA, W_STAR, SIGMA = 1.0, 0.49, 0.01  # Fig. 1 of the dynamics paper (Fig. 2 of the summary paper)
G_STAR = ALPHA / (1 + ALPHA)  # g* of App. C.3
DT = 0.05


def big_m(p, L):
    """M(p) = (1 − e^{−p(L−2)}) / (1 − e^{−p})  (App. C.3.1)."""
    return -np.expm1(-p * (L - 2)) / -np.expm1(-p)


def small_m(p, L):
    """m(p) = (e^{−p} − (L−2) e^{−p(L−2)} + (L−3) e^{−p(L−1)}) / (1 − e^{−p})²  (App. C.3.1)."""
    num = np.exp(-p) - (L - 2) * np.exp(-p * (L - 2)) + (L - 3) * np.exp(-p * (L - 1))
    return num / np.expm1(-p) ** 2


def loss_g4(p, g, L):
    """Eq. (7)."""
    mp = big_m(p, L)
    return 0.5 * G_STAR**2 + 0.5 * g**2 * big_m(2 * p, L) / mp**2 - G_STAR * g / mp


def loss_ih2(w, h, L):
    """Eq. (10)."""
    n = L - 2
    first = (1 - 4 * W_STAR**4) ** -0.5 / (2 * (1 + ALPHA) ** 2 * n)
    return (
        first + 0.5 * h**2 / n * (1 - 4 * w**4) ** -0.5 - h * (1 - (w**2 + W_STAR**2) ** 2) ** -0.5 / ((1 + ALPHA) * n)
    )


def flow(state, L):
    """(dp, dg, dw, dh)/dt as printed in App. C.3.1 and C.3.2."""
    p, g, w, h = state
    n, mp, m1 = L - 2, big_m(p, L), small_m(p, L)
    ratio_mm = big_m(2 * p, L) / mp
    dp = m1 * g / mp**2 * (G_STAR - g * ratio_mm + g * small_m(2 * p, L) / m1)
    dg = (G_STAR - g * ratio_mm) / mp
    s = w**2 + W_STAR**2
    dw = h / ((1 + ALPHA) * n) * (1 - s**2) ** -1.5 * s * 2 * w - h**2 / n * (1 - 4 * w**4) ** -1.5 * 4 * w**3
    dh = (1 - s**2) ** -0.5 / ((1 + ALPHA) * n) - h / n * (1 - 4 * w**4) ** -0.5
    return np.array([dp, dg, dw, dh])


def phase1(L_values, eps_g=0.01, t_max=600.0):
    """(T_I, L_IH2(T_I)/L_IH2(0)) per L: RK4 until L_G4 ≤ eps_g·L_G4(0), crossing interpolated linearly."""
    L = np.asarray(L_values, dtype=float)
    y = np.full((4, len(L)), SIGMA)
    g4_0, ih_0 = loss_g4(y[0], y[1], L), loss_ih2(y[2], y[3], L)
    t_i, ratio = np.full(len(L), np.nan), np.full(len(L), np.nan)
    t, prev_g4, prev_ih = 0.0, g4_0, ih_0
    while np.isnan(t_i).any() and t < t_max:
        k1 = flow(y, L)
        k2 = flow(y + DT / 2 * k1, L)
        k3 = flow(y + DT / 2 * k2, L)
        k4 = flow(y + DT * k3, L)
        y, t = y + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + DT
        g4, ih = loss_g4(y[0], y[1], L), loss_ih2(y[2], y[3], L)
        hit = np.isnan(t_i) & (g4 <= eps_g * g4_0)
        frac = (prev_g4 - eps_g * g4_0) / (prev_g4 - g4)  # linear interpolation inside the step
        t_i = np.where(hit, t - DT + frac * DT, t_i)
        ratio = np.where(hit, (prev_ih + frac * (ih - prev_ih)) / ih_0, ratio)
        prev_g4, prev_ih = g4, ih
    return t_i, ratio


def test_at_fig1_length_the_phase1_bound_fails_and_the_ratio_is_0_07():
    t_i, ratio = phase1([40, 160, 400])
    assert np.allclose(t_i, 205, rtol=0.01), t_i  # T_I = O(1): the same at every L
    assert ratio[0] < 0.99  # the theorem's "⩾ 0.99 · L_IH2(θ(0))" fails at L = 40
    assert ratio == pytest.approx([0.0717, 0.1403, 0.402], abs=0.001), ratio


def test_the_ratio_reaches_0_99_only_near_l_4e4_and_one_minus_it_falls_like_1_over_l():
    L = np.array([4_000, 40_000, 400_000])
    t_i, ratio = phase1(L)
    assert ratio[1] == pytest.approx(0.9905, abs=0.001), ratio
    assert ratio[0] < 0.99 < ratio[1]
    slope = np.polyfit(np.log(L), np.log(1 - ratio), 1)[0]
    assert slope == pytest.approx(-1.0, abs=0.05), slope
    # the small-t expansion of the h-fit: 1 − ratio ≈ 2 (B²/C) T_I / (L − 2), v = σ⁴ ≈ 0
    b2_over_c = math.sqrt(1 - 4 * W_STAR**4) / (1 - W_STAR**4)
    assert 1 - ratio[2] == pytest.approx(2 * b2_over_c * t_i[2] / (L[2] - 2), rel=0.02)


def test_the_length_needed_is_about_3_8_over_eps_g_times_eps_ih():
    """T_I ∝ 1/ε_G (L_G4 = O(1/t), eq. 9) and 1 − ratio ∝ T_I/L, so L_needed ≈ 2(B²/C)·T_I·ε_G/(ε_G·ε_IH)."""
    eps = np.array([0.02, 0.01, 0.005])
    t_i = np.array([phase1([40_000], eps_g=e, t_max=1200.0)[0][0] for e in eps])
    c_g = t_i * eps  # T_I·ε_G, constant when L_G4 ∝ 1/t
    assert np.ptp(c_g) / c_g.mean() < 0.1, c_g
    b2_over_c = math.sqrt(1 - 4 * W_STAR**4) / (1 - W_STAR**4)
    assert 2 * b2_over_c * c_g[1] == pytest.approx(3.8, abs=0.1)
