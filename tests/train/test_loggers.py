"""TensorBoard and Weights & Biases loggers on the loop's evaluation hook (the ``log`` extra; skipped without it)."""

import pytest
import torch

from inductionlab.cli import main
from inductionlab.train.autograd import TrainConfig, train


def _train(hooks):
    return train(
        TrainConfig(optimizer="sgd", lr=0.1, steps=30, eval_every=10, eval_log_points=0),
        torch.zeros(2, 3),
        lambda th, x: (th - x).square().sum(-1),
        lambda g: torch.ones(3),
        lambda th, s: {"c0": th[:, 0].numpy().copy()},
        hooks=hooks,
    )[1]


def test_tensorboard_gets_each_evaluation_mean_over_runs(tmp_path):
    pytest.importorskip("tensorboard", reason="the log extra is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from inductionlab.train.hooks import TensorBoardLogger

    metrics = _train([TensorBoardLogger(tmp_path / "tb")])
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    scalars = events.Scalars("train/c0")
    assert [e.step for e in scalars] == [0, 10, 20, 30]
    assert [e.value for e in scalars] == pytest.approx(metrics.groupby("step").c0.mean().tolist(), rel=1e-6)


def test_the_cli_writes_tensorboard_events_and_says_what_is_missing(tmp_path, capsys):
    pytest.importorskip("tensorboard", reason="the log extra is not installed")
    argv = ["run", "lazy-to-rich", "--preset", "smoke", "--no-progress", "--log.tensorboard", str(tmp_path / "tb")]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    assert not (tmp_path / "run" / "tb").exists()


def test_wandb_offline_run_logs_each_evaluation(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="the log extra is not installed")
    from inductionlab.train.hooks import WandbLogger

    for key, value in {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"}.items():
        monkeypatch.setenv(key, value)
    logger = WandbLogger("inductionlab-test", config={"lr": 0.1})
    metrics = _train([logger])
    summary = dict(logger.run.summary)
    logger.run.finish()
    assert summary["train/c0"] == pytest.approx(float(metrics.c0.iloc[-2:].mean()))
    assert summary["step_in_stage"] == 30
    assert list(tmp_path.glob("wandb/offline-run-*"))


def test_a_logger_gets_each_evaluation_as_step_stage_and_the_means_over_runs():
    from inductionlab.train.hooks import Logger

    class Rows(Logger):
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def log(self, step, stage, row, stage_index=0) -> None:
            self.calls.append((step, stage, row, stage_index))

    rows = Rows()
    metrics = _train([rows])
    means = metrics.groupby("step").c0.mean()
    assert rows.calls == [(int(s), "train", {"c0": pytest.approx(float(means[s]))}, 0) for s in means.index]
