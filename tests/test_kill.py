"""SIGKILL at any moment loses nothing: a killed run resumed with ``--resume`` ends with the same metrics and summary
as an uninterrupted one (toy, autograd and Chen trainers), and a killed sweep leaves no worker behind and re-runs
to one row per job."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from inductionlab import load_sweep
from inductionlab.cli import main

RUNS = {
    "toy": [
        "lazy-to-rich",
        "--preset",
        "smoke",
        "--train.stage2_steps",
        "3000",
        "--train.checkpoint_every",
        "250",
        "--gf",
        "none",
    ],
    "autograd": ["probe", "--preset", "smoke", "--train.steps", "400", "--train.checkpoint_every", "40"],
    "chen": [
        "markov-stages",
        "--preset",
        "smoke",
        "--train.epochs",
        "150,150,150",
        "--train.checkpoint_every",
        "15",
        "--degrees",
        "2",
        "--losses",
        "ce",
    ],
}


def _start(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "inductionlab", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _summary(out: Path) -> dict:
    s = json.loads((out / "summary.json").read_text())
    return {k: v for k, v in s.items() if k not in ("wall_seconds", "wall_seconds_segments", "profile", "versions")}


@pytest.mark.parametrize("family", sorted(RUNS))
def test_sigkill_then_resume_equals_an_uninterrupted_run(family, tmp_path):
    argv = ["run", *RUNS[family], "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    full = pd.read_parquet(tmp_path / "full" / "metrics.parquet")
    stages = {  # killed once each state is reached (waited for, never timed: a loaded machine is slow to start)
        "config written": lambda out: (out / "config.json").exists(),
        "first checkpoint": lambda out: any(out.glob("**/*.pt")),
        "a later checkpoint": lambda out: _checkpointed_twice(out),
    }
    for when, reached in stages.items():
        out = tmp_path / f"killed_{when.replace(' ', '_')}"
        proc = _start([*argv, "--out", str(out)])
        _wait_for(lambda: reached(out) or proc.poll() is not None)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # the same arguments: a kill before config.json was written leaves no saved config to read them from
        assert main([*argv, "--out", str(out), "--resume"]) == 0, when
        resumed = pd.read_parquet(out / "metrics.parquet")
        assert resumed.equals(full), when
        assert _summary(out) == _summary(tmp_path / "full"), when


def test_sigterm_checkpoints_says_resume_and_the_resumed_run_equals_an_uninterrupted_one(tmp_path):
    """`timeout` and schedulers stop a run with SIGTERM: it must end like Ctrl-C, not like SIGKILL."""
    argv = ["run", *RUNS["autograd"], "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    out = tmp_path / "stopped"
    proc = subprocess.Popen(
        [sys.executable, "-m", "inductionlab", *argv, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert _wait_for(lambda: any(out.glob("**/*.pt"))), "the run never checkpointed"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130 and "--resume" in err, err
    assert not (out / "summary.json").exists()
    assert main([*argv, "--out", str(out), "--resume"]) == 0
    assert pd.read_parquet(out / "metrics.parquet").equals(pd.read_parquet(tmp_path / "full" / "metrics.parquet"))
    assert _summary(out) == _summary(tmp_path / "full")


_FIRST_CHECKPOINT: dict[Path, int] = {}


def _checkpointed_twice(out: Path) -> bool:
    """True once a checkpoint of ``out`` has been rewritten since this was first asked and saw one."""
    stamps = []
    for path in out.glob("**/*.pt"):
        try:
            stamps.append(path.stat().st_mtime_ns)
        except FileNotFoundError:  # replaced by an atomic write between the listing and the stat
            continue
    if not stamps:
        return False
    first = _FIRST_CHECKPOINT.setdefault(out, max(stamps))
    return max(stamps) != first


def _wait_for(condition, deadline: float = 300.0) -> bool:
    """Poll ``condition`` until it holds or ``deadline`` seconds pass (a loaded machine may be slow: the test waits
    for the state it needs, never for a fixed time)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


def _saved_lr(out: Path) -> float | None:
    """The learning rate in ``out``'s config.json, None while there is none (or it is being written)."""
    try:
        return json.loads((out / "config.json").read_text())["train"]["lr"]
    except (OSError, ValueError, KeyError):
        return None


def _children(pid: int) -> set[int]:
    kids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.add(int(stat.parent.name))
    return kids


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


@pytest.mark.skipif(not Path("/proc").exists(), reason="needs /proc to find the worker processes")
def test_a_killed_sweep_leaves_no_worker_and_reruns_each_job_once(tmp_path):
    out = tmp_path / "sweep"
    argv = [
        "sweep",
        *RUNS["toy"],
        "--grid",
        "task.alpha_star=1,2,3,4",
        "--workers",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = _start(argv)
    workers: set[int] = set()

    def both_started() -> bool:
        workers.update({w for c in _children(proc.pid) for w in _children(c) | {c}} - {proc.pid})
        return len(workers) >= 2

    assert _wait_for(both_started), "the sweep never started its two workers"
    assert _wait_for(lambda: any(out.glob("*/checkpoints/*")) or any(out.glob("*/metrics.parquet")))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _wait_for(lambda: not _alive(workers)), "worker processes outlived the killed sweep"
    assert main(argv) == 0
    table = load_sweep(out)
    assert len(table) == 4 and table["task.alpha_star"].is_unique
    for d in table.dir:
        metrics = pd.read_parquet(out / d / "metrics.parquet")
        assert not metrics.duplicated(["run", "stage", "step"]).any()


def test_an_interrupted_force_never_leaves_the_old_results_under_the_new_config(tmp_path):
    out = tmp_path / "d"
    assert main(["run", "lazy-to-rich", "--preset", "smoke", "--out", str(out), "--no-progress"]) == 0
    new = [
        "run",
        "lazy-to-rich",
        "--preset",
        "smoke",
        "--train.lr",
        "0.05",
        "--train.stage1_steps",
        "20000",
        "--train.checkpoint_every",
        "10000",
        "--train.compile",
        "off",
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = _start([*new, "--force"])
    # kill it once it has claimed the directory and cleared the old run: its new config is written
    assert _wait_for(lambda: _saved_lr(out) == 0.05), "the --force run never wrote its config"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "summary.json").exists() and not (out / "metrics.parquet").exists()  # the old run is gone
    assert main([*new, "--resume"]) == 0
    config = json.loads((out / "config.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    metrics = pd.read_parquet(out / "metrics.parquet")
    assert (
        config["train"]["lr"] == 0.05
        and summary["config_hash"] != ""
        and metrics[metrics.stage == "I"].step.max() == 20000
    )
    from inductionlab.cli import resolve
    from inductionlab.config import config_hash

    assert summary["config_hash"] == config_hash(
        resolve(
            "lazy-to-rich",
            "smoke",
            {
                "train.lr": "0.05",
                "train.stage1_steps": "20000",
                "train.checkpoint_every": "10000",
                "train.compile": "off",
            },
        )
    )
