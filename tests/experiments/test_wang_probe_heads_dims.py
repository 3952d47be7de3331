"""Fig. 3 (`probe`) and Fig. 4 (`heads-dims`): the plateau, escape step and late loss their learned preconditions
read (docs/conventions.md#learned), one value per seed where the claims hold one, and the claims judged only on the
seeds whose (8, 8) model learned."""

import math

import numpy as np
import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.analysis.claims import DID_NOT_LEARN
from inductionlab.analysis.verdicts import judge
from inductionlab.experiments.wang._learning import learning
from inductionlab.experiments.wang.heads_dims import _summary as heads_dims_summary
from inductionlab.runs import RunContext

STEPS = np.array([0, 100, 200, 400, 800, 1600, 3200])


def test_learning_reads_the_plateau_in_its_window_and_the_first_halving():
    loss = np.array([0.07, 0.06, 0.05, 0.05, 0.04, 0.02, 0.005])
    out = learning(STEPS, loss, (100, 800), late=2)
    assert out["plateau"] == pytest.approx(0.05)  # the median of 0.06, 0.05, 0.05, 0.04
    assert out["escape_step"] == pytest.approx(800 + 800 * (0.04 - 0.025) / (0.04 - 0.02))
    assert out["late_over_plateau"] == pytest.approx((0.02 + 0.005) / 2 / 0.05)


def test_a_loss_that_never_halves_has_never_escaped_and_a_short_run_no_plateau():
    stuck = learning(STEPS, np.full(len(STEPS), 0.05), (100, 800), late=2)
    assert stuck["escape_step"] == math.inf and stuck["late_over_plateau"] == pytest.approx(1.0)
    assert math.isnan(learning(STEPS[:2], np.array([0.07, 0.06]), (200, 800), late=1)["plateau"])


def _metrics(late_8x8: list[float]) -> pd.DataFrame:
    """Two pairs, one row per (seed, step): every curve sits at 0.05 and ends at its late value."""
    rows = [
        (pair, seed, int(step), 0.05 if step < 3200 else (end if pair == "8x8" else 0.049))
        for pair in ("2x2", "8x8")
        for seed, end in enumerate(late_8x8)
        for step in STEPS
    ]
    return pd.DataFrame(rows, columns=["pair", "seed", "step", "loss"])


def test_heads_dims_gives_each_seed_its_plateau_escape_and_late_loss():
    summary = heads_dims_summary(_metrics([0.005, 0.05]), late=1, plateau=(100, 800))
    assert summary["plateau_loss"]["8x8"] == pytest.approx([0.05, 0.05])
    assert summary["late_over_plateau"]["8x8"] == pytest.approx([0.1, 1.0])
    assert summary["escape_step"]["8x8"][0] < 3200 and summary["escape_step"]["8x8"][1] == math.inf


def test_the_fig4_claims_are_judged_on_the_seeds_whose_8x8_model_learned():
    claims = {c.id: c for c in experiments.get("heads-dims").claims}
    three = heads_dims_summary(_metrics([0.004, 0.005, 0.006, 0.05]), late=1, plateau=(100, 800))
    row = judge(claims["wang-fig4-heads-dims"], three)
    assert row["status"] == "passed" and row["n_seeds"] == 3 and "3 of 4 seeds learned" in row["learned"]
    assert judge(claims["wang-fig4-small-fails"], three)["status"] == "passed"
    two = heads_dims_summary(_metrics([0.004, 0.005, 0.05, 0.05]), late=1, plateau=(100, 800))
    assert judge(claims["wang-fig4-heads-dims"], two)["status"] == DID_NOT_LEARN
    alike = {**three, "late_loss": {"8x8": [0.049] * 4, "2x2": [0.049] * 4}}
    assert judge(claims["wang-fig4-heads-dims"], alike)["status"] == "failed"


def test_the_probe_claim_skips_a_draw_that_did_not_learn_and_shows_its_escape_step():
    claim = experiments.get("probe").claims[0]

    def draw(ratio: float, late: float, escape: float) -> dict:
        return {
            "probe_distance_final": ratio,
            "probe_distance_initial": 1.0,
            "loss_late_over_plateau": late,
            "escape_step": escape,
        }

    row = judge(
        claim, draw(0.05, 0.1, 1500), draws=[draw(0.04, 0.1, 2000), draw(0.9, 0.95, 11_000), draw(0.03, 0.1, 900)]
    )
    assert row["status"] == "passed" and row["n_seeds"] == 3
    assert "did not learn: 0.95 (escape_step 11000)" in row["learned"]


def _run(name: str, **overrides) -> pd.DataFrame:
    cfg = experiments.configure(name, preset="smoke", overrides=overrides)
    return experiments.get(name).run(cfg, RunContext(threads=1, progress=False)).tables["metrics"]


def test_probe_seed_s_is_the_heads_dims_8x8_model_of_seed_s():
    """One calibration serves both figures: a probe draw trains the same (8, 8) model on the same batches."""
    same = {"seeds": (3,), "task.L": 10, "train.batch_size": 8, "train.steps": 10, "train.eval_every": 5}
    probe = _run("probe", eval_size=16, **same)
    fig4 = _run("heads-dims", heads=(8,), dims=(8,), **same)
    np.testing.assert_array_equal(probe.loss.to_numpy(), fig4.loss.to_numpy())
