"""Every key is refused under the name the user typed, before any work, where its value is out of bounds: sizes that
would not fit, learning rates that diverge, a JSON bool for a number, a Slurm time limit below a minute, a
scb-convergence run without Stage 2 (exit 2, one line, no traceback, no run directory).  Any evaluation period works
for scb-convergence (Stage 1 ends where the config says), and a full disk says what it left."""

import errno
import json

import pytest
import torch

from inductionlab import experiments, load_run
from inductionlab.cli import main
from inductionlab.config import ConfigError
from inductionlab.sweep import run_sweep

HF = ["run", "hf-induction", "--preset", "smoke", "--no-progress"]
SCB = ["run", "scb-convergence", "--preset", "smoke", "--no-progress"]
SWEEP = ["sweep", "markov-mi", "--preset", "smoke", "--executor", "submitit-local", "--no-progress"]

CASES = [  # (case, argv, words the message must hold, words it must not)
    ("hf-steps-huge", [*HF, "--hf.steps", "1e18"], ["hf.steps", "1,000,000"], []),
    ("hf-own-momentum", [*HF, "--own.momentum", "-3"], ["own.momentum", "[0, 1)"], ["train."]),
    ("hf-own-clip", [*HF, "--own.clip_norm", "-1"], ["own.clip_norm"], ["train."]),
    ("hf-lr-huge", [*HF, "--hf.lr", "1e300"], ["hf.lr", "learning rate"], ["NaN"]),
    ("hf-own-lr-huge", [*HF, "--own.lr", "1e300"], ["own.lr", "learning rate"], ["train."]),
    ("hf-batch-huge", [*HF, "--batch_size", "1e15"], ["batch_size", "out of memory"], []),
    ("hf-layers-huge", [*HF, "--model.n_layer", "1e15"], ["model.n_layer", "out of memory"], []),
    ("hf-heads-huge", [*HF, "--model.n_head", "1e6"], ["model.n_head"], []),
    (
        "toy-lr-huge",
        ["run", "lazy-to-rich", "--preset", "smoke", "--train.lr", "1e300"],
        ["train.lr", "(0, 1e+06]"],
        [],
    ),
    ("gd-lr-huge", ["run", "adam-vs-gd-highdim", "--preset", "smoke", "--gd_lr", "1e9"], ["gd_lr"], []),
    ("scb-eta-huge", [*SCB, "--train.eta1", "1e300"], ["train.eta1", "learning rate"], []),
    ("probe-lr-zero", ["run", "probe", "--preset", "smoke", "--train.lr", "0"], ["train.lr"], []),
    ("scb-no-stage2", [*SCB, "--train.stage1_steps", "60"], ["train.stage1_steps", "Stage 2"], []),
    ("slurm-timeout-zero", [*SWEEP, "--slurm-timeout-min", "0"], ["--slurm-timeout-min", "≥ 1"], []),
    ("slurm-timeout-negative", [*SWEEP, "--slurm-timeout-min", "-5"], ["--slurm-timeout-min", "≥ 1"], []),
    ("json-true-int", ["run", "--config", "{tmp}/int.json"], ["train.stage2_steps", "bool"], []),
    ("json-true-float", ["run", "--config", "{tmp}/float.json"], ["task.alpha_star", "bool"], []),
    ("json-false-count", ["run", "--config", "{tmp}/count.json"], ["n_draws", "bool"], []),
]
FILES = {
    "int.json": {"experiment": "lazy-to-rich", "train": {"stage2_steps": True}},
    "float.json": {"experiment": "lazy-to-rich", "task": {"alpha_star": True}},
    "count.json": {"experiment": "markov-mi", "n_draws": False},
}


@pytest.mark.parametrize("case, argv, words, absent", CASES, ids=[c[0] for c in CASES])
def test_a_bad_key_is_refused_by_its_own_name_before_any_work(case, argv, words, absent, tmp_path, capsys):
    for name, data in FILES.items():
        (tmp_path / name).write_text(json.dumps(data))
    out = tmp_path / "o"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main([*argv, "--out", str(out)]) == 2, case
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 2, err
    for word in words:
        assert word in err, (case, word, err)
    for word in absent:
        assert word not in err, (case, word, err)
    assert not out.exists()  # refused before any work


def test_the_sweep_api_refuses_a_time_limit_below_a_minute(tmp_path):
    cfg = experiments.configure("markov-mi", "smoke")
    with pytest.raises(ConfigError, match="--slurm-timeout-min"):
        run_sweep("markov-mi", cfg, {}, tmp_path / "s", executor="submitit-local", slurm={"timeout_min": 0})
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("every", [1000, 7, 20])
def test_scb_convergence_runs_at_any_evaluation_period(every, tmp_path, capsys):
    out = tmp_path / "o"
    assert main([*SCB, "--train.eval_every", str(every), "--out", str(out)]) == 0, capsys.readouterr().err
    run = load_run(out)
    m = run.tables["metrics"]
    prox = m[m.method == "proximal"]
    assert 20 in set(prox.step) and prox.step.max() == 60  # evaluated where Stage 1 ends and at the last step
    assert prox[prox.step > 20].stage.eq(2).all() and prox[prox.step <= 20].stage.eq(1).all()
    assert run.summary["prox"]["zeroed_fraction"] is not None


DISKS = [  # (case, argv, checkpoint writes that succeed, words the message must hold, words it must not)
    ("hf-first-checkpoint", HF, 0, ["own.pt", "No space left", "nothing of the run is left"], ["kept"]),
    ("toy-first-checkpoint", ["run", "lazy-to-rich", "--preset", "smoke", "--gf", "none", "--no-progress"], 0,
     ["ckpt.pt", "nothing of the run is left"], ["kept"]),
    ("toy-later-checkpoint", ["run", "lazy-to-rich", "--preset", "smoke", "--gf", "none", "--no-progress"], 1,
     ["ckpt.pt", "last good checkpoint", "--resume"], ["nothing"]),
]  # fmt: skip


@pytest.mark.parametrize("case, argv, good, words, absent", DISKS, ids=[c[0] for c in DISKS])
def test_a_full_disk_says_what_it_left(case, argv, good, words, absent, tmp_path, monkeypatch, capsys):
    save, written = torch.save, []

    def full_disk(obj, f, *args, **kwargs):
        if "/checkpoints/" in str(f):  # the toolkit's checkpoints (not the Trainer's checkpoint-* folders)
            if len(written) >= good:
                raise OSError(errno.ENOSPC, "No space left on device")
            written.append(f)
        return save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    out = tmp_path / "o"
    extra = ["--train.stage2_steps", "2000", "--train.checkpoint_every", "500"] if "toy" in case else []
    assert main([*argv, *extra, "--out", str(out)]) == 2, case
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 2, err
    for word in words:
        assert word in err, (case, word, err)
    for word in absent:
        assert word not in err, (case, word, err)
    assert not (out / "summary.json").exists()  # nothing looks finished
    assert out.exists() == bool(good)  # a checkpoint kept keeps its run; none: the run is gone, as the line says
