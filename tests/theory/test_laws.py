"""The laws a sweep report overlays (theory.laws) say what Theorem 5.5's formula says: each law's exponent is the
formula's local log-log slope in its grid key, and T_I's law is flat."""

import math

import numpy as np
import pytest

from inductionlab.theory.laws import THEOREM_5_5, Law, laws_for
from inductionlab.theory.mixed import predicted_plateau

BASE = {"L": 20, "alpha_star": 1.0, "w_star": 0.49, "sigma_init": 0.01}
ARGUMENT = {"task.L": "L", "task.alpha_star": "alpha_star", "task.w_star": "w_star", "model.sigma_init": "sigma_init"}


@pytest.mark.parametrize("law", [law for law in THEOREM_5_5 if law.exponent != 0], ids=lambda l: l.key)
def test_each_plateau_law_is_the_slope_of_predicted_plateau_in_its_variable(law):
    arg = ARGUMENT[law.key]
    x0 = BASE[arg]
    x1 = x0 * 2 if arg != "sigma_init" else x0**2  # σ_init → σ_init² doubles log(1/σ_init)
    ratio = predicted_plateau(**{**BASE, arg: x1}) / predicted_plateau(**BASE)
    u0, u1 = law.u([x0])[0], law.u([x1])[0]
    assert math.log(ratio) / math.log(u1 / u0) == pytest.approx(law.exponent, rel=1e-12)


def test_laws_are_looked_up_by_grid_key():
    assert set(laws_for(THEOREM_5_5, "task.L")) == {"T_II", "T_50", "T_III", "T_o", "T_I"}
    assert laws_for(THEOREM_5_5, "task.L")["T_I"].exponent == 0
    assert laws_for((), "task.L") == {} and laws_for(THEOREM_5_5, "train.lr") == {}
    assert np.isnan(laws_for(THEOREM_5_5, "model.sigma_init")["T_II"].u([1.5])[0])  # log(1/σ) < 0: undefined
    with pytest.raises(ValueError, match="Law.variable"):
        Law("task.L", ("T_II",), "L²", 1.0, "nowhere")


def test_a_law_reads_as_its_formula():
    assert Law("task.alpha_star", ("T_II", "T_50"), "1+α*", 2.0, "x").formula() == "T_II, T_50 ∝ (1+α*)^2"
    assert Law("task.w_star", ("T_II",), "w*", -2.0, "x").formula() == "T_II ∝ w*^-2"


def test_a_variable_of_ones_own_needs_its_transform():
    law = Law("n", ("T",), "n²", 0.5, "mine", transform=lambda x: x**2)
    assert law.u([3.0])[0] == 9.0 and law.formula() == "T ∝ n²^0.5"
    with pytest.raises(ValueError, match="give its transform"):
        Law("n", ("T",), "n", 1.0, "mine")
