import math

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.models import chen
from inductionlab.runs import RunContext
from inductionlab.tasks.markov import MarkovConfig, datasets
from inductionlab.train.chen import StagedConfig, a_log_fit, train_staged


@pytest.fixture(scope="module")
def data():
    task = MarkovConfig(L=40)
    return task, *datasets(task, (0, 1), 500, 100)


def test_stages_move_only_their_groups_and_stage_one_selects_the_parents(data, tmp_path):
    task, tr, va = data
    model = chen.ChenConfig()
    cfg = StagedConfig(stages=("c", "w", "a"), lrs=(1.0, 1e4, 1.0), epochs=(60, 20, 30), eval_log_points=5)
    params, m = train_staged(model, cfg, task, tr, va, RunContext(tmp_path, threads=1))
    assert set(m.run) == {0, 1} and list(m.stage.unique()) == [0, 1, 2]
    end = {s: g[g.step == g.step.max()] for s, g in m.groupby("stage")}
    assert (end[0]["p_{1,2}"] > 0.9).all()  # Stage I alone picks {1,2}, the argmax of the modified χ² MI
    start = m[m.epoch == 0]
    assert (end[0].a.to_numpy() == start.a.to_numpy()).all()  # frozen in Stage I
    assert (end[0].w_h1_lag1.to_numpy() == start.w_h1_lag1.to_numpy()).all()
    assert np.allclose(end[1]["p_{1,2}"], end[0]["p_{1,2}"]) and (end[1].w_h1_lag1 > 3.0).all()
    assert np.allclose(end[2].w_h1_lag1, end[1].w_h1_lag1) and (end[2].a > 0.01).all()
    assert (end[2].val_loss < m[m.epoch == 0].val_loss.to_numpy()).all()
    again, m2 = train_staged(model, cfg, task, tr, va, RunContext(tmp_path, resume=True, threads=1))
    for k in params:  # finished stages are read back, not retrained
        torch.testing.assert_close(again[k], params[k])
    pd.testing.assert_frame_equal(m, m2)


def test_same_seed_same_numbers_and_runs_do_not_interact(data):
    task, tr, va = data
    cfg = StagedConfig(stages=("cwa",), lrs=(1.0,), epochs=(15,), eval_log_points=3)
    both, _ = train_staged(chen.ChenConfig(), cfg, task, tr, va)
    one, _ = train_staged(chen.ChenConfig(), cfg, task, tr[1:], va[1:])
    for k in both:
        torch.testing.assert_close(both[k][1:], one[k], rtol=1e-5, atol=1e-6)


def test_a_log_fit_recovers_a_logarithmic_law():
    t = np.unique(np.geomspace(1, 5000, 40).round())
    m = pd.DataFrame({"stage": 2, "stage_name": "a", "step": t, "a": 1.5 * np.log(t) + 0.3})
    slope, r2 = a_log_fit(m)
    assert slope == pytest.approx(1.5) and r2 == pytest.approx(1.0)
    assert math.isnan(a_log_fit(m.assign(stage_name="c"))[0])


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"stages": ("c", "x", "a")}, ["train.stages", "letters"]),
        ({"lrs": (1.0,)}, ["train.lrs", "one per stage"]),
        ({"lrs": (1.0, -1.0, 1.0)}, ["train.lrs", "> 0"]),
    ],
)
def test_bad_schedules_are_rejected(kw, words):
    with pytest.raises(ConfigError) as err:
        StagedConfig(**kw)
    assert all(w in str(err.value) for w in words)


def test_a_smaller_step_comes_closer_to_the_flow(data):
    """docs/conventions.md#flow-step: full-batch SGD is the Euler scheme of the gradient flow, so runs to the same
    time t = lr · epochs come closer to the small-step run as lr shrinks (global error O(lr))."""
    task, tr, va = data
    model = chen.ChenModelConfig(variant="full", norm="layernorm", w_plus=1.0, w_minus=0.01).build(task.vocab_size)

    def ends(epochs: int) -> np.ndarray:  # p_S and a at t = 0 and at flow time t = 1: (2, 8)
        cfg = StagedConfig(stages=("cwa",), lrs=(1.0 / epochs,), epochs=(epochs,), eval_log_points=2)
        _, m = train_staged(model, cfg, task, tr[:1, :300], va[:1, :50])
        rows = m[m.epoch.isin([0, epochs])].sort_values("epoch")
        return rows[[c for c in m.columns if c.startswith("p_")] + ["a"]].to_numpy(np.float64)

    def end(epochs: int) -> np.ndarray:
        return ends(epochs)[-1]

    start, ref = ends(1600)
    assert np.abs(ref - start).max() > 0.2  # the flow has moved by t = 1: the runs are not three initial points
    devs = [np.abs(end(e) - ref).max() for e in (25, 50, 200)]  # lr 0.04, 0.02, 0.005
    assert devs[0] > devs[1] > devs[2] and devs[2] < 1e-2, devs  # measured 0.18, 0.019, 0.0065
