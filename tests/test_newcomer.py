"""What a new user does: interrupt a run and resume it without repeating anything, fix a bad command and run it
again, share results, ask for help."""

import os
import signal
import stat
import subprocess
import sys

import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.cli import main
from inductionlab.train import optim

OVERRIDES = [
    "--preset",
    "smoke",
    "--train.stage2_steps",
    "300",
    "--train.checkpoint_every",
    "40",
    "--gf",
    "none",
    "--no-progress",
]


def test_interrupt_then_resume_with_no_overrides_finishes_like_an_uninterrupted_run(tmp_path, monkeypatch, capsys):
    assert main(["run", "lazy-to-rich", "--out", str(tmp_path / "full"), *OVERRIDES]) == 0
    real, calls = optim.step, [0]

    def step_then_ctrl_c(*args):
        calls[0] += 1
        if calls[0] == 150:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(optim, "step", step_then_ctrl_c)
    out = tmp_path / "cut"
    assert main(["run", "lazy-to-rich", "--out", str(out), *OVERRIDES]) == 130
    monkeypatch.setattr(optim, "step", real)
    assert "--resume" in capsys.readouterr().err
    assert main(["run", "lazy-to-rich", "--out", str(out), "--resume", "--no-progress"]) == 0
    full, resumed = (pd.read_parquet(d / "metrics.parquet") for d in (tmp_path / "full", out))
    assert resumed.equals(full)
    assert main(["run", "lazy-to-rich", "--out", str(out), "--resume", "--train.lr", "0.2"]) == 2
    err = capsys.readouterr().err
    assert "train.lr: 0.1 in the saved run, 0.2 here" in err


def test_a_failed_start_does_not_block_the_corrected_command(tmp_path, capsys):
    out = tmp_path / "w"
    assert (
        main(
            [
                "run",
                "wikitext",
                "--preset",
                "smoke",
                "--data.path",
                str(tmp_path / "nowhere"),
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )
    assert "--data.path" in capsys.readouterr().err and not out.exists()
    assert main(["run", "wikitext", "--preset", "smoke", "--out", str(out), "--no-progress"]) == 0


def test_files_get_the_permissions_the_umask_gives(tmp_path):
    old = os.umask(0o022)
    try:
        assert main(["run", "markov-mi", "--preset", "smoke", "--out", str(tmp_path / "m"), "--no-progress"]) == 0
    finally:
        os.umask(old)
    for f in (tmp_path / "m").iterdir():
        if f.is_file():
            assert stat.S_IMODE(f.stat().st_mode) == 0o644, f.name


def test_options_go_before_or_after_the_name_and_config_reruns_a_saved_run(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", "--preset", "smoke", "--task.L", "12", "--seed", "3", "markov-mi", "--out", str(a)]) == 0
    assert "markov-mi in" in capsys.readouterr().out
    assert main(["run", "--config", str(a / "config.json"), "--out", str(b)]) == 0
    assert (a / "config.json").read_text() == (b / "config.json").read_text()
    assert (a / "summary.json").read_text().split('"wall_seconds"')[0] == (b / "summary.json").read_text().split(
        '"wall_seconds"'
    )[0]


def test_help_and_version_import_nothing_heavy():
    code = (
        "import sys; from inductionlab.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("False False")
    version = subprocess.run([sys.executable, "-m", "inductionlab", "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"inductionlab {experiments.__name__ and __import__('inductionlab').__version__}"


@pytest.mark.parametrize("name", sorted(experiments.REGISTRY))
def test_every_experiment_has_smoke_quick_and_says_what_it_reproduces(name):
    exp = experiments.get(name)
    assert {"smoke", "quick"} <= set(exp.presets), name
    assert exp.figure and exp.wall.startswith("~"), name


def test_one_device_switch_with_clear_refusals(tmp_path, capsys):
    import torch

    if not torch.cuda.is_available():
        assert main(["run", "probe", "--preset", "smoke", "--device", "cuda", "--out", str(tmp_path / "p")]) == 2
        assert "no CUDA GPU" in capsys.readouterr().err
    assert main(["run", "lazy-to-rich", "--preset", "smoke", "--device", "cuda", "--out", str(tmp_path / "l")]) == 2
    err = capsys.readouterr().err
    assert "CPU only" in err and "probe" in err and "wikitext" in err
    assert (
        main(["run", "probe", "--preset", "smoke", "--device", "cpu", "--out", str(tmp_path / "c"), "--no-progress"])
        == 0
    )
    assert main(["run", "markov-mi", "--preset", "smoke", "--device", "cpu", "--out", str(tmp_path / "m")]) == 0
