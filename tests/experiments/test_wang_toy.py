"""The toy-model experiments' literal-protocol comparison, the balance of Lemma 5.4, Theorem 5.5's phases against L
(Wang et al.; docs/conventions.md#wang-5-3, #wang-5-5) and the controls that break them."""

import math

import numpy as np
import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.config import ConfigError
from inductionlab.experiments.wang.lazy_to_rich.layerwise import Config, literal_summary
from inductionlab.experiments.wang.plateau_scaling.measures import phase1_fits
from inductionlab.runs import RunContext
from inductionlab.theory.mixed import ih_ratio_lazy
from inductionlab.train.flow import FlowProblem, solve_flow
from inductionlab.train.toy import ToyTrainConfig

BASE = {"L": 40, "alpha_star": 1.0, "w_star": 0.49, "sigma_init": 0.01}  # Fig. 1 of the dynamics paper


def _summary(name: str, **overrides) -> dict:
    cfg = experiments.configure(name, preset="smoke", overrides=overrides)
    return experiments.get(name).run(cfg, RunContext(threads=1, progress=False)).summary


@pytest.mark.parametrize("L", [40, 400])
def test_the_lazy_ih_ratio_is_the_closed_form_flow_at_t_i(L):
    prob = FlowProblem(L=L, t_end=1.0)
    t_i = solve_flow(FlowProblem(L=L, t_end=2000.0)).phases.T_I
    curve = solve_flow(FlowProblem(L=L, t_end=t_i), n_points=4).curve
    measured = curve.loss_IH2.iloc[-1] / curve.loss_IH2.iloc[0]
    assert ih_ratio_lazy(t_i, L, prob.alpha_star, prob.w_star, prob.sigma_init) == pytest.approx(measured, rel=0.02)
    assert ih_ratio_lazy(0.0, L, 1.0, 0.49, 0.01) == pytest.approx(1.0)


def _layer2(p_tilde: float, w_star: float = 0.49) -> pd.DataFrame:
    r = math.exp(-p_tilde)
    return pd.DataFrame(
        {
            "run": [0, 0],
            "t": [0.0, 10.0],
            "loss_G4": [0.125, 0.125 * r**2],
            "w_V1": [0.01, 0.5 * (1 + r)],
            "w_KQ": [0.01, w_star * math.sqrt(1 + r)],
        }
    )


def test_the_literal_summary_divides_by_the_finite_p_tilde_fixed_point(monkeypatch):
    layer2 = _layer2(0.94)
    monkeypatch.setattr(
        "inductionlab.experiments.wang.lazy_to_rich.layerwise.summarise",
        lambda *a: {"final": {"w_KQ": float(layer2.w_KQ.iloc[-1])}},
    )
    out = literal_summary(layer2, [], Config(gf="none"), np.array([0.94]))
    for key in ("g4_end_over_floor", "w_V1_over_predicted", "w_KQ_over_predicted"):
        assert out[key] == pytest.approx(1.0)
    assert out["g4_end_over_start"] == pytest.approx(math.exp(-1.88))


def test_the_literal_comparison_needs_the_idealised_default():
    with pytest.raises(ConfigError):
        Config(literal=True, train=ToyTrainConfig(stage2_layer1="trained"))


def test_the_smoke_run_summarises_both_protocols_and_the_kick_breaks_the_balance():
    summary = _summary("lazy-to-rich")
    assert summary["balance_wq2_minus_wk2"] == 0.0
    assert summary["literal"]["stage2_layer1"] == "trained"
    assert summary["literal"]["p_tilde_after_stage1"] == pytest.approx(summary["p_tilde_after_stage1"])
    kicked = _summary("lazy-to-rich", **{"intervene.clamp": "w_Q=0.05@20:21"})
    assert kicked["balance_wq2_minus_wk2"] > 1e-3


def test_the_plateau_scaling_reports_the_phases_against_l():
    summary = _summary("plateau-scaling")
    phases, phase1 = summary["phases"], summary["phase1"]
    assert phases["L"] == [8, 12]
    assert len(phases["ih_ratio_T_I"]) == 2 and phases["wkq_rate_spread"] >= 1.0
    ratio = phase1["ih_ratio_at_L"]  # Phase I's bound fails at Fig. 1's L = 40, holds from L ≈ 3.8·10⁴
    assert ratio["40"] == pytest.approx(0.0717, abs=1e-3) and ratio["4000"] < 0.99 < ratio["40000"]
    assert phase1["one_minus_ratio_slope"] == pytest.approx(-1.0, abs=0.05)
    assert phase1["L_constant"] == pytest.approx(3.8, abs=0.1)


def test_a_missing_t_i_leaves_the_phase1_slope_undefined():
    phase1 = phase1_fits((40, 4_000, 40_000), BASE, t_end=100.0, slope_from=4_000)  # T_I ≈ 205 is past t_end
    assert math.isnan(phase1["T_I"][0]) and math.isnan(phase1["one_minus_ratio_slope"])


def test_freezing_layer_1_stops_joint_training_from_forming_the_induction_head():
    summary = _summary("joint-training", **{"intervene.freeze": "p_tilde"})
    assert summary["joint"]["final_p_tilde"] == pytest.approx(0.01)


def test_every_control_of_the_toy_experiments_is_used():
    for name in ("lazy-to-rich", "lazy-to-rich-boolean", "plateau-scaling", "joint-training"):
        module = experiments.get(name)
        used = {c.control for c in module.claims if c.control}
        assert used == {c.name for c in module.controls}
