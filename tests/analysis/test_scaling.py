"""Power-law fits (analysis.scaling) against data with a known exponent, and the standard error against the
spread of the fitted exponent over repeated noise draws (Monte Carlo)."""

import numpy as np
import pytest

from inductionlab.analysis.scaling import law_constant, power_law_fit


def test_an_exact_power_law_gives_its_exponent_and_each_groups_constant():
    x = np.tile([2.0, 4.0, 8.0, 16.0], 2)
    groups = ["a"] * 4 + ["b"] * 4
    y = np.where(np.array(groups) == "a", 3.0, 5.0) * x**1.5
    fit = power_law_fit(x, y, groups)
    assert fit.exponent == pytest.approx(1.5, abs=1e-12) and fit.n == 8
    assert fit.intercepts == pytest.approx({"a": np.log(3.0), "b": np.log(5.0)}, abs=1e-12)
    assert fit.stderr == pytest.approx(0.0, abs=1e-9)
    assert law_constant(x[:4], y[:4], 1.5) == pytest.approx(np.log(3.0), abs=1e-12)


def test_points_that_are_not_positive_and_finite_are_dropped_and_one_x_has_no_fit():
    fit = power_law_fit([1.0, 2.0, 4.0, 8.0, 16.0], [1.0, 4.0, np.nan, -1.0, 256.0])
    assert fit.exponent == pytest.approx(2.0) and fit.n == 3
    assert np.isnan(power_law_fit([2.0, 2.0], [1.0, 3.0]).exponent)
    assert np.isnan(law_constant([np.nan], [1.0], 1.0))


def test_the_standard_error_matches_the_spread_of_the_exponent_over_noise_draws():
    gen = np.random.default_rng(np.random.SeedSequence(3))
    x = np.repeat([1.0, 2.0, 4.0, 8.0, 16.0], 3)
    fits = [power_law_fit(x, 2.0 * x**-2 * np.exp(0.1 * gen.standard_normal(x.size))) for _ in range(2000)]
    exponents = np.array([f.exponent for f in fits])
    assert exponents.mean() == pytest.approx(-2.0, abs=0.005)  # unbiased
    assert np.mean([f.stderr for f in fits]) == pytest.approx(exponents.std(), rel=0.1)
