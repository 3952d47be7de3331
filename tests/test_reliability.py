"""Runs that cannot lie: truthful NaN messages, checkpoints that know their run, damaged checkpoints reported."""

import pytest

from inductionlab.cli import main
from inductionlab.models import toy
from inductionlab.runs import RunContext
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.train import loop
from inductionlab.train.toy import ToyTrainConfig, train_toy
from tests.conftest import CtrlCAt

CFG = ToyTrainConfig(stage1_steps=0, stage2_steps=80, batch_size=32, eval_size=256, eval_every=20, checkpoint_every=20)


class StopAt(loop.Hook):
    def after_step(self, state):
        if state.step == 45:
            raise KeyboardInterrupt("stop here")


def _train(ctx, hooks=()):
    return train_toy(CFG, MixedTarget.per_run([1.0], [0.49], 8), toy.init_params(0.01, 1), [0], ctx, hooks=hooks)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "lazy-to-rich", "--preset", "smoke", "--train.lr", "1000"],
        ["run", "probe", "--preset", "smoke", "--train.optimizer", "sgd", "--train.lr", "1e6"],
    ],
)
def test_divergence_stops_with_a_true_message_and_no_traceback(argv, tmp_path, capsys):
    out = tmp_path / "d"
    assert main([*argv, "--out", str(out), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "NaN/inf" in err and "Traceback" not in err
    kept = list(out.glob("checkpoints/*.pt")) if out.exists() else []
    assert ("no checkpoint had been written yet" in err) == (not kept)


def test_a_checkpoint_of_another_config_is_refused(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _train(RunContext(tmp_path, threads=1, fingerprint="aaaa"), [StopAt()])
    with pytest.raises(loop.CheckpointError, match="another config"):
        _train(RunContext(tmp_path, resume=True, threads=1, fingerprint="bbbb"))
    resumed = _train(RunContext(tmp_path, resume=True, threads=1, fingerprint="aaaa"))
    assert resumed.metrics.equals(_train(RunContext(threads=1)).metrics)


def test_a_checkpoint_of_another_run_axis_is_refused(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _train(RunContext(tmp_path, threads=1), [StopAt()])
    with pytest.raises(loop.CheckpointError, match="shape"):
        train_toy(
            CFG,
            MixedTarget.per_run([1.0, 1.0], [0.49, 0.49], 8),
            toy.init_params(0.01, 2),
            [0, 1],
            RunContext(tmp_path, resume=True, threads=1),
        )


@pytest.mark.parametrize("content", [b"", b"garbage", None])
def test_a_damaged_checkpoint_is_reported_as_such(content, tmp_path, capsys):
    out = tmp_path / "r"
    args = ["run", "lazy-to-rich", "--preset", "smoke", "--gf", "none", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    ckpt = out / "checkpoints" / "ckpt.pt"
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[: len(data) // 2] if content is None else content)
    (out / "summary.json").unlink()  # as if killed before the end
    assert main([*args, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "damaged" in err and str(ckpt) in err and "Traceback" not in err


def test_a_checkpoint_copied_from_a_run_with_another_learning_rate_names_the_key(tmp_path, capsys):
    args = ["run", "lazy-to-rich", "--preset", "smoke", "--gf", "none", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "a"), "--train.lr", "0.05"]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    (tmp_path / "b" / "summary.json").unlink()  # b unfinished, with a's checkpoint copied in
    (tmp_path / "b" / "checkpoints" / "ckpt.pt").write_bytes((tmp_path / "a" / "checkpoints" / "ckpt.pt").read_bytes())
    assert main([*args, "--out", str(tmp_path / "b"), "--resume"]) == 2
    assert "train.lr: 0.05 in the saved run, 0.1 here" in capsys.readouterr().err


def test_a_resume_past_the_compile_threshold_runs_the_same_step_and_numbers(tmp_path):
    """A 20 000-step stage compiles its step ("auto"); resumed with 5 000 steps left it still does, so the numbers
    are bit for bit those of an uninterrupted run (an eager step would differ in the last bits)."""
    cfg = ToyTrainConfig(
        stage1_steps=0,
        stage2_steps=20_000,
        batch_size=16,
        eval_size=256,
        eval_every=5000,
        eval_log_points=0,
        checkpoint_every=1000,
    )
    target = MixedTarget.per_run([1.0], [0.49], 8)
    full = train_toy(cfg, target, toy.init_params(0.01, 1), [0], RunContext(threads=1))
    ctx = RunContext(tmp_path, threads=1)
    with pytest.raises(loop.Interrupted):  # stage index 1 is stage II (stage I has 0 steps)
        train_toy(cfg, target, toy.init_params(0.01, 1), [0], ctx, hooks=[CtrlCAt(1, 15_000)])
    resumed = train_toy(cfg, target, toy.init_params(0.01, 1), [0], ctx.child(resume=True))
    assert resumed.metrics.equals(full.metrics)


def test_a_summary_lists_its_never_reached_times_apart_from_unmeasured_values():
    import math

    from inductionlab.record import never_reached

    summary = {"T_I": 3.0, "joint": {"T_III": math.inf, "T_o": math.nan}, "gap": -math.inf, "n": 2}
    assert never_reached(summary) == ["joint.T_III"]
