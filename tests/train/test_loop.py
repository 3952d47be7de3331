"""The one loop, through every trainer family: exact resume after Ctrl-C, the NaN/inf stop, hooks."""

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import inductionlab
from inductionlab.models import chen, toy
from inductionlab.runs import RunContext, load_checkpoint
from inductionlab.tasks.markov import MarkovConfig, datasets
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.tasks.scb import SCBConfig, random_instance
from inductionlab.train import loop
from inductionlab.train.autograd import TrainConfig, train
from inductionlab.train.chen import StagedConfig, train_staged
from inductionlab.train.hooks import FreezeColumns, JsonlLogger
from inductionlab.train.proximal import SCBTrainConfig, train_scb
from inductionlab.train.toy import ToyTrainConfig, train_toy
from tests.conftest import CtrlCAt


def _scb(ctx, hooks=(), **kw):
    inst = random_instance(SCBConfig(N=4, Q=2, T=6), 2, np.random.default_rng(0))
    cfg = SCBTrainConfig(
        **{"steps": 120, "stage1_steps": 40, "eta1": 0.3, "eta2": 0.03, "eval_every": 10, "checkpoint_every": 25, **kw}
    )
    return train_scb(cfg, inst, 2, ctx, hooks=hooks)


def _chen(ctx, hooks=(), lrs=(1.0, 1e4, 1.0)):
    task = MarkovConfig(L=30)
    tr, va = datasets(task, (0,), 200, 50)
    cfg = StagedConfig(lrs=lrs, epochs=(30, 20, 20), eval_log_points=4, checkpoint_every=7)
    return train_staged(chen.ChenConfig(), cfg, task, tr, va, ctx, hooks=hooks)


def test_scb_resumes_exactly_after_ctrl_c(tmp_path):
    V, A, full = _scb(RunContext(threads=1))
    ctx = RunContext(tmp_path, threads=1)
    with pytest.raises(loop.Interrupted, match="--resume"):
        _scb(ctx, hooks=[CtrlCAt(0, 60)])
    assert load_checkpoint(ctx.checkpoint)["step"] == 61  # at the step boundary after the signal
    V2, A2, resumed = _scb(ctx.child(resume=True))
    assert torch.equal(V, V2) and torch.equal(A, A2) and resumed.equals(full)


def test_chen_resumes_exactly_inside_a_stage(tmp_path):
    params, full = _chen(RunContext(threads=1))
    ctx = RunContext(tmp_path, threads=1)
    with pytest.raises(loop.Interrupted):
        _chen(ctx, hooks=[CtrlCAt(1, 9)])
    assert load_checkpoint(ctx.checkpoint)["stage"] == 1
    again, resumed = _chen(ctx.child(resume=True))
    for k in params:
        assert torch.equal(params[k], again[k]), k
    assert resumed.equals(full)


def test_chen_and_scb_stop_on_nan_and_say_what_is_kept(tmp_path):
    with pytest.raises(loop.NonFiniteError, match="NaN/inf.*no checkpoint was configured.*Lower train.lr"):
        _chen(RunContext(threads=1), lrs=(1e30, 1e30, 1e30))
    with pytest.raises(loop.NonFiniteError, match="NaN/inf.*checkpoint.*eta1"):
        _scb(RunContext(tmp_path, threads=1), method="raw_sgd", eta1=1e12, stage1_steps=0)


def test_hooks_log_and_freeze_on_the_toy_and_the_autograd_families(tmp_path):
    target = MixedTarget.per_run([1.0], [0.49], 8)
    cfg = ToyTrainConfig(
        stage1_steps=20, stage2_steps=60, batch_size=32, eval_size=256, eval_every=20, eval_log_points=0
    )
    freeze = FreezeColumns([toy.W_V1], steps=range(10, 40), stage="II")
    free = train_toy(cfg, target, toy.init_params(0.3, 1), [0], RunContext(threads=1))
    out = train_toy(
        cfg,
        target,
        toy.init_params(0.3, 1),
        [0],
        RunContext(threads=1),
        hooks=[JsonlLogger(tmp_path / "toy.jsonl"), freeze],
    )
    m = out.metrics[out.metrics.stage == "II"].set_index("step").w_V1
    assert m[20] == m[40] and m[20] != free.metrics[free.metrics.stage == "II"].set_index("step").w_V1[20]
    lines = [json.loads(x) for x in (tmp_path / "toy.jsonl").read_text().splitlines()]
    assert [(x["stage"], x["step"]) for x in lines] == [
        (s, k) for s in ("I", "II") for k in ((0, 20) if s == "I" else (0, 20, 40, 60))
    ]
    assert lines[-1]["loss"] == pytest.approx(float(out.metrics.loss.iloc[-1]))

    theta0 = torch.zeros(2, 3)
    loss = lambda th, x: (th - x).square().sum(-1)
    theta, metrics = train(
        TrainConfig(optimizer="sgd", lr=0.1, steps=30, eval_every=10, eval_log_points=0),
        theta0,
        loss,
        lambda g: torch.ones(3),
        lambda th, s: {"c0": th[:, 0].numpy().copy()},
        hooks=[FreezeColumns([0]), JsonlLogger(tmp_path / "ag.jsonl")],
    )
    assert torch.equal(theta[:, 0], theta0[:, 0]) and bool((theta[:, 1:] > 0.9).all())
    assert len((tmp_path / "ag.jsonl").read_text().splitlines()) == len(metrics.step.unique()) == 4


def test_only_the_loop_checkpoints_catches_ctrl_c_or_stops_on_nan():
    src = Path(inductionlab.__file__).parent
    names = {"save_checkpoint", "StopFlag", "NonFiniteError", "check_finite", "SIGINT"}
    for path in src.rglob("*.py"):
        if (
            path.name in ("loop.py", "runs.py", "_runtime.py", "cli.py", "cli_errors.py")
            or "experiments" in path.relative_to(src).parts
        ):
            continue  # the loop; the format and the flag it uses; where the CLI and experiments catch its errors
        used = {n.id for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Name)}
        used |= {n.attr for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)}
        assert not used & names, f"{path.relative_to(src)} uses {used & names}: leave that to train/loop.py"


def test_the_progress_bar_says_what_it_trains():
    """The run directory, the training within the run (its checkpoint's name, unless the default) and the trainer's
    description (unless the default "train")."""
    run = RunContext(Path("runs/lazy-to-rich"))
    assert loop._label("train", run) == "lazy-to-rich"
    assert loop._label("train", run.child("literal")) == "lazy-to-rich literal"
    assert loop._label("H=8 D=8 seed 0", run.child("h8")) == "lazy-to-rich h8 H=8 D=8 seed 0"
    assert loop._label("train", RunContext()) == "train"
