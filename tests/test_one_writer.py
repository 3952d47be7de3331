"""One writer per run directory, and a finished run has all it promises: a run, ``--resume``, ``--force``, a sweep
or ``reproduce`` aimed at a directory another live process writes exits 2 naming its PID; a lock left by a dead
process is taken over; ``reproduce`` never removes a run it did not write; a failure after the tables leaves the
run unfinished for ``--resume``; a full disk names the file and keeps the last good checkpoint; ``--resume``
removes the temporary files a kill left."""

import dataclasses
import json
import os
import subprocess
import sys
import time

import matplotlib.figure
import pytest
import torch

from inductionlab import experiments, run_experiment
from inductionlab.cli import main, resolve
from inductionlab.runs import LOCK, lock_dir

MI = ["markov-mi", "--preset", "smoke", "--no-progress"]
LIVE = {  # each command aimed at a directory whose lock another writer holds
    "run": ["run", *MI, "--out", "{d}"],
    "resume": ["run", *MI, "--out", "{d}", "--resume"],
    "force": ["run", *MI, "--out", "{d}", "--force"],
    "sweep": ["sweep", *MI, "--out", "{d}"],
    "reproduce": ["reproduce", "--paper", "chen", "--budget", "smoke", "--out", "{d}"],
}


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", list(LIVE))
def test_a_live_directory_is_refused_naming_the_pid(command, tmp_path, capsys):
    d = tmp_path / "live"
    with lock_dir(d):  # this process stands for the live writer: a second open of the lock file conflicts
        (d / "config.json").write_text(json.dumps({"experiment": "markov-mi"}))
        argv = [a.replace("{d}", str(d)) for a in LIVE[command]]
        assert main(argv) == 2
        err = _error(capsys)
        assert f"process {os.getpid()}" in err and str(d) in err, err
        assert sorted(p.name for p in d.iterdir()) == [LOCK, "config.json"]  # nothing written beside the writer


def test_force_while_another_process_writes_is_refused_and_nothing_is_mixed(tmp_path, capsys):
    d = tmp_path / "probe"
    argv = ["probe", "--preset", "smoke", "--train.steps", "100000", "--train.checkpoint_every", "20", "--out", str(d)]
    writer = subprocess.Popen([sys.executable, "-m", "inductionlab", "run", *argv, "--no-progress"])
    try:
        deadline = time.monotonic() + 300  # generous: a loaded machine starts the writer late
        while not (d / "checkpoints" / "ckpt.pt").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (d / "checkpoints" / "ckpt.pt").exists(), "the writer never checkpointed"
        assert main(["run", *argv, "--train.steps", "300", "--train.lr", "0.02", "--force", "--no-progress"]) == 2
        assert f"process {writer.pid}" in _error(capsys)
        assert main(["run", *argv, "--resume", "--no-progress"]) == 2  # the advice a loser once got
        assert json.loads((d / "config.json").read_text())["train"]["steps"] == 100000
    finally:
        writer.kill()
        writer.wait()


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    d = tmp_path / "dead"
    d.mkdir()
    (d / LOCK).write_text("999999\n")  # no process holds it
    assert main(["run", *MI, "--out", str(d)]) == 0
    assert (d / "summary.json").exists() and (d / LOCK).read_text().strip() == str(os.getpid())


def test_reproduce_never_removes_a_run_it_did_not_write(tmp_path, caplog):
    mine = tmp_path / "X" / "scb-convergence"
    assert main(["run", "scb-convergence", "--preset", "smoke", "--train.eta1", "0.05", "--out", str(mine)]) == 0
    before = {p.name: p.read_bytes() for p in mine.iterdir() if p.is_file()}
    main(["reproduce", "--paper", "ren", "--budget", "smoke", "--out", str(tmp_path / "X")])
    assert {p.name: p.read_bytes() for p in mine.iterdir() if p.is_file()} == before
    assert "left alone" in caplog.text and str(mine) in caplog.text
    info = json.loads((tmp_path / "X" / "reproduce.json").read_text())
    moved = tmp_path / "X" / info["dirs"]["scb-convergence"]
    assert moved != mine and (moved / "summary.json").exists()


def test_a_failure_after_the_tables_leaves_the_run_for_resume_to_finish(tmp_path, monkeypatch):
    """A run that fails in its figures is unfinished (no summary) and ``--resume`` completes it: one with checkpoints,
    and one without any whose tables were written (nothing that was computed is deleted)."""
    for name, overrides, kept in (("markov-stages", {"degrees": "2", "losses": "ce"}, True), ("markov-mi", {}, True)):
        exp, out = experiments.get(name), tmp_path / name
        cfg = resolve(name, "smoke", overrides)

        def broken(results, out_dir):
            raise RuntimeError("the figure failed")

        monkeypatch.setitem(experiments.REGISTRY, name, dataclasses.replace(exp, plot=broken))
        with pytest.raises(RuntimeError, match="the figure failed"):
            run_experiment(name, cfg, out)
        assert (out / "config.json").exists() == kept and not (out / "summary.json").exists()
        monkeypatch.setitem(experiments.REGISTRY, name, exp)
        run_experiment(name, cfg, out, resume=kept)
        assert (out / "summary.json").exists() and list(out.glob("*.png"))


TOY = ["run", "lazy-to-rich", "--preset", "smoke", "--gf", "none", "--no-progress"]


def test_a_full_disk_at_a_checkpoint_names_the_file_and_keeps_the_last_good_one(tmp_path, monkeypatch, capsys):
    out = tmp_path / "toy"
    save, calls = torch.save, []

    def full_disk(obj, f, *args, **kwargs):
        calls.append(f)
        if len(calls) > 1:
            raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 128 vs 0")
        return save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    argv = [*TOY, "--train.stage2_steps", "2000", "--train.checkpoint_every", "500", "--out", str(out)]
    assert main(argv) == 2
    err = _error(capsys)
    assert str(out / "checkpoints" / "ckpt.pt") in err and "last good checkpoint" in err, err
    good = torch.load(out / "checkpoints" / "ckpt.pt", weights_only=False)
    assert good["step"] > 0 and not list((out / "checkpoints").glob(".*.tmp"))


def test_a_full_disk_at_a_figure_names_the_file(tmp_path, monkeypatch, capsys):
    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full_disk)
    assert main(["run", *MI, "--out", str(tmp_path / "mi")]) == 2
    err = _error(capsys)
    assert "No space left on device" in err and ".png" in err and str(tmp_path / "mi") in err, err
    assert not (tmp_path / "mi" / "summary.json").exists()  # unfinished: --resume completes it


def test_resume_removes_the_temporary_files_a_kill_left(tmp_path):
    out = tmp_path / "toy"
    assert main([*TOY, "--out", str(out)]) == 0
    (out / "summary.json").unlink()  # as if killed before the end
    stray = [out / "checkpoints" / ".ckpt.pt.x1y2z3_a.tmp", out / ".metrics.parquet.abcdefgh.tmp"]
    for path in stray:
        path.write_bytes(b"half")
    assert main([*TOY, "--out", str(out), "--resume"]) == 0
    assert not any(path.exists() for path in stray) and (out / "summary.json").exists()


SHARED = {  # (what the directory holds, the command aimed at it)
    "run-into-sweep": ("sweep.json", ["run", *MI]),
    "run-into-reproduce": ("reproduce.json", ["run", *MI]),
    "sweep-into-run": ("config.json", ["sweep", *MI]),
    "sweep-into-reproduce": ("reproduce.json", ["sweep", *MI]),
    "reproduce-into-run": ("config.json", ["reproduce", "--paper", "ren", "--budget", "smoke"]),
    "reproduce-into-sweep": ("sweep.json", ["reproduce", "--paper", "ren", "--budget", "smoke"]),
}


@pytest.mark.parametrize("case", list(SHARED))
def test_runs_sweeps_and_reproduce_never_share_a_directory(case, tmp_path, capsys):
    mark, argv = SHARED[case]
    d = tmp_path / "d"
    d.mkdir()
    (d / mark).write_text(json.dumps({"experiment": "markov-mi", "grid": []}))
    assert main([*argv, "--out", str(d)]) == 2
    err = _error(capsys)
    assert mark in err and str(d) in err, err
    assert sorted(p.name for p in d.iterdir()) == [mark]
