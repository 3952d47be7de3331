import math

import numpy as np
import pandas as pd

from inductionlab.analysis.phases import balance, first_crossing, kicked_gap_change, phase_times
from inductionlab.analysis.scaling import linear_fit, power_law_exponent


def test_phase_times_of_a_synthetic_curve_with_known_boundaries():
    t = np.linspace(0, 1000, 10_001)
    g4 = np.exp(-t / 10)  # ≤ 1% at t = 10 ln 100
    h = 0.5 * (1 - np.exp(-t / 50)) * 1.2  # crosses h* = 0.5 at t = 50 ln 6
    t_o = 50 * math.log(6)
    ih = np.where(t < 400, 1.0, np.exp(-(t - 400) / 20))  # plateau then drop at 400
    w = 0.49 / (1 + np.exp(-(t - 380) / 10))
    p = phase_times(t, g4, ih, h, w, alpha_star=1.0, w_star=0.49)
    assert abs(p.T_I - 10 * math.log(100)) < 0.1
    assert abs(p.T_o - t_o) < 0.1
    assert abs(p.T_II - (400 + 20 * math.log(1 / 0.99))) < 0.1
    assert abs(p.T_50 - (400 + 20 * math.log(2))) < 0.1
    assert abs(p.T_III - (400 + 20 * math.log(100))) < 0.1
    assert abs(p.T_whalf - 380) < 0.1


def test_never_reached_is_inf_unmeasurable_is_nan_and_interpolation_is_linear():
    assert first_crossing([0, 1, 2], [3, 2, 1], 0.5, "down") == math.inf  # later than every sample
    assert math.isnan(first_crossing([0, 1, 2], [3, 2, 1], math.nan, "down"))  # no level to cross
    assert first_crossing([0, 1, 2], [3, 2, 1], 1.5, "down") == 1.5


def test_phase_times_after_a_missing_t_o_are_never_reached():
    t = np.linspace(0, 10, 11)
    flat = np.ones_like(t)
    p = phase_times(t, flat, flat, 0 * t, 0 * t, alpha_star=1.0, w_star=0.5)  # no T_o: h never reaches 1/2
    assert p.T_o == math.inf and p.T_II == p.T_III == p.T_50 == math.inf


def test_fits():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    assert abs(power_law_exponent(x, 3 * x**-2) + 2) < 1e-12
    slope, intercept, r2 = linear_fit(x, 2 * x + 1)
    assert abs(slope - 2) < 1e-12 and abs(r2 - 1) < 1e-12


def test_plateau_finds_the_flat_stretch_between_two_drops():
    from inductionlab.analysis.phases import plateau

    t = np.arange(0, 101, 5.0)
    y = np.where(t < 20, 5 - 0.2 * t, np.where(t <= 60, 1.0, 1.0 - 0.02 * (t - 60)))
    start, end = plateau(t, y)
    assert start == 20 and 60 <= end <= 70  # within 5% of the range of the plateau level
    assert np.isnan(plateau(t, 5 - 0.04 * t)[0])  # a steady decline has no plateau
    assert plateau(t, np.where(t < 30, 5 - 0.1 * t, 2.0)) == (30.0, 100.0)  # still going on at the end


def test_balance_is_zero_only_on_the_balanced_manifold():
    df = pd.DataFrame({"w_Q": [0.01, 0.3], "w_K": [0.01, 0.3]})
    assert balance(df) == 0.0
    assert balance(df.assign(w_Q=[0.05, 0.3])) > 1e-3


def test_the_kicked_gap_change_is_relative_to_the_gap_at_the_start():
    companion = pd.DataFrame({"w_Q": [0.05, 0.2, 0.3], "w_K": [0.01, 0.19, 0.295]})
    gap = companion.w_Q**2 - companion.w_K**2
    assert kicked_gap_change(companion) == (gap - gap[0]).abs().max() / abs(gap[0])
    assert kicked_gap_change(companion.iloc[:0]) is None and kicked_gap_change(companion.assign(w_Q=0.01)) is None
