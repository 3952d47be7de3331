"""The laws a sweep report overlays (theory.laws) say what Theorem 5.5's formula says: each law's exponent is the
formula's local log-log slope in its grid key, and T_I's law is flat."""

import math

import numpy as np
import pytest

from inductionlab.theory.laws import LAWS, Law, laws_for
from inductionlab.theory.mixed import predicted_plateau

BASE = {"L": 20, "alpha_star": 1.0, "w_star": 0.49, "sigma_init": 0.01}
ARGUMENT = {"task.L": "L", "task.alpha_star": "alpha_star", "task.w_star": "w_star", "model.sigma_init": "sigma_init"}


@pytest.mark.parametrize("law", [law for law in LAWS["lazy-to-rich"] if law.exponent != 0], ids=lambda l: l.key)
def test_each_plateau_law_is_the_slope_of_predicted_plateau_in_its_variable(law):
    arg = ARGUMENT[law.key]
    x0 = BASE[arg]
    x1 = x0 * 2 if arg != "sigma_init" else x0**2  # σ_init → σ_init² doubles log(1/σ_init)
    ratio = predicted_plateau(**{**BASE, arg: x1}) / predicted_plateau(**BASE)
    u0, u1 = law.u([x0])[0], law.u([x1])[0]
    assert math.log(ratio) / math.log(u1 / u0) == pytest.approx(law.exponent, rel=1e-12)


def test_the_table_is_looked_up_by_experiment_and_key():
    assert set(laws_for("lazy-to-rich", "task.L")) == {"T_II", "T_50", "T_III", "T_o", "T_I"}
    assert laws_for("lazy-to-rich", "task.L")["T_I"].exponent == 0
    assert laws_for("lazy-to-rich-boolean", "task.L") == {} and laws_for("lazy-to-rich", "train.lr") == {}
    assert np.isnan(laws_for("lazy-to-rich", "model.sigma_init")["T_II"].u([1.5])[0])  # log(1/σ) < 0: undefined
    with pytest.raises(ValueError, match="Law.variable"):
        Law("task.L", ("T_II",), "L²", 1.0, "nowhere")
