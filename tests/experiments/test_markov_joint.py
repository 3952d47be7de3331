"""markov-joint's reads on the course of training (docs/chen.md#joint-seeds): p_S after ``select_epoch`` and the
heads' attention after ``sharpen_epoch`` epochs of the same run, exact (the parameters at that epoch, on the
evaluation grid or between two evaluations), kept across an interrupted and resumed run, null where the run ends
before them."""

import json
import os
import signal

import pytest
import torch

from inductionlab import experiments
from inductionlab.analysis.claims import measure
from inductionlab.analysis.verdicts import judge
from inductionlab.models import chen
from inductionlab.runner import run_experiment
from inductionlab.runs import RunContext
from inductionlab.train import loop
from tests.conftest import CtrlCAt

READS = ("selection", "sharpening", "p_selected_per_seed", "copier_attention_12_per_seed")


def _run(**overrides):
    cfg = experiments.configure("markov-joint", "smoke", overrides)
    return experiments.get("markov-joint").run(cfg, RunContext(threads=1))


def test_a_read_is_the_parameters_at_that_epoch_on_the_grid_or_between_evaluations():
    # smoke: 10 epochs, evaluations at 1, 2, 5, 10; select_epoch 5 (on the grid), sharpen_epoch 7 (between)
    one = _run(losses="softmax_of_probs")
    metrics = one.tables["metrics"]
    assert one.summary["selection"]["p_selected_per_seed"]["{1,2}"] == [
        pytest.approx(float(metrics[metrics.epoch == 5]["p_{1,2}"].iloc[0]), rel=1e-6)
    ]
    # split at epoch 7 (full-batch SGD: the same updates), where the split run evaluates at 7 itself
    split = _run(losses="softmax_of_probs", **{"train.stages": "cwa,cwa", "train.lrs": "1,1", "train.epochs": "7,3"})
    assert split.summary["sharpening"] == one.summary["sharpening"]
    assert split.summary["p_selected_per_seed"] == one.summary["p_selected_per_seed"]
    cfg = experiments.configure("markov-joint", "smoke")
    model = cfg.model.build(cfg.task.vocab_size)
    m = split.tables["metrics"]
    row = m[(m.epoch == 7) & (m.variant == m.variant.iloc[0])].iloc[0]
    w = torch.tensor([[row[f"w_h{h + 1}_lag{j + 1}"] for j in range(model.window)] for h in range(model.n_heads)])
    at_7 = float(chen.lag_attention(model, w)[:2].min())
    assert one.summary["sharpening"]["copier_attention_12_per_seed"] == [pytest.approx(at_7, rel=1e-6)]


def test_a_read_after_the_end_of_the_run_is_null_and_its_claim_undefined():
    summary = _run(losses="softmax_of_probs", sharpen_epoch=50).summary
    assert summary["sharpening"]["copier_attention_12_per_seed"] == [None]
    claim = next(c for c in experiments.get("markov-joint").claims if c.id == "chen-fig6-copiers-sharpen")
    assert measure(claim, summary) == [None]
    assert judge(claim, summary)["status"] == "undefined"


class _CtrlCInTraining(loop.Hook):
    """SIGINT after step ``step`` of stage 0 of the run's ``n``-th training (1-based)."""

    def __init__(self, n: int, step: int):
        self.n, self.step, self.trainings = n, step, 0

    def reset(self):
        self.trainings += 1

    def after_step(self, state):
        if self.trainings == self.n and (state.stage_index, state.step) == (0, self.step):
            os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("cut", [CtrlCAt(0, 8), _CtrlCInTraining(2, 3)], ids=["headline-after-reads", "second-arm"])
def test_the_reads_survive_an_interrupted_and_resumed_run(tmp_path, cut):
    cfg = experiments.configure("markov-joint", "smoke")  # the surrogate on 2024, then the cross-entropy on it
    whole = json.loads(
        (run_experiment("markov-joint", cfg, tmp_path / "whole", threads=1) / "summary.json").read_text()
    )
    with pytest.raises(KeyboardInterrupt):
        run_experiment("markov-joint", cfg, tmp_path / "cut", threads=1, hooks=(cut,))
    resumed = run_experiment("markov-joint", cfg, tmp_path / "cut", resume=True, threads=1)
    again = json.loads((resumed / "summary.json").read_text())
    assert {k: again[k] for k in READS} == {k: whole[k] for k in READS}
    assert whole["selection"]["p_selected_per_seed"]["{1,2}"][0] is not None


def test_the_per_seed_slopes_of_a_average_to_the_slope_of_the_mean():
    # the fit a ≈ slope·ln t + c is linear in a, so the claim's mean over seeds is the slope of the seeds' mean a
    summary = _run(
        losses="softmax_of_probs", seeds="0,1,2,3", **{"train.epochs": "60", "train.eval_log_points": 12}
    ).summary
    slopes = summary["a_log_slope_per_seed"]
    assert len(slopes) == 4 and all(s == s for s in slopes) and slopes[0] != slopes[1]
    assert sum(slopes) / 4 == pytest.approx(summary["a_log_slope"], rel=1e-9)
    claim = next(c for c in experiments.get("markov-joint").claims if c.id == "chen-fig6-a-log")
    assert measure(claim, summary) == slopes
    assert judge(claim, summary)["status"] in ("passed", "failed")  # judged on the seeds, not undefined
