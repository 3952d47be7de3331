"""A sweep through a real Slurm (``--executor slurm``, submitit) gives the rows of the same sweep run locally.

Needs a running Slurm: ``scripts/slurm-local.sh`` starts a one-node one on a Debian machine (as root); without
one the test skips."""

import json
import shutil
import subprocess

import pandas as pd
import pytest

from inductionlab import load_sweep
from inductionlab.cli import main

VOLATILE = ["dir", "wall_seconds", "profile"]  # the folder name and the timing differ between two runs of the same job


def _slurm_answers() -> bool:
    """Whether ``sinfo`` reaches a controller that has a node up (idle, mixed or allocated)."""
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    states = done.stdout.split()
    return done.returncode == 0 and any(s.rstrip("*~#").startswith(("idle", "mix", "alloc")) for s in states)


def _sweep(out, *executor: str) -> pd.DataFrame:
    argv = ["sweep", "lazy-to-rich", "--preset", "smoke", "--gf", "none", "--grid", "task.alpha_star=1,2"]
    assert main([*argv, "--n-seeds", "2", "--out", str(out), "--no-progress", *executor]) == 0
    table = load_sweep(out)
    return table.drop(columns=VOLATILE).sort_values("hash").reset_index(drop=True)


def test_slurm_sweep_gives_the_rows_of_a_local_sweep(tmp_path):
    if shutil.which("sbatch") is None or not _slurm_answers():
        pytest.skip("no sbatch: run scripts/slurm-local.sh to start a one-node Slurm")
    slurm = ["--executor", "slurm", "--slurm-timeout-min", "5"]  # the default partition
    on_slurm = _sweep(tmp_path / "slurm", *slurm)
    local = _sweep(tmp_path / "local", "--executor", "local")
    assert len(on_slurm) == 4 and sorted(set(on_slurm["seed"])) == [0, 1]
    assert len(list((tmp_path / "slurm" / "submitit").glob("*_result.pkl"))) == 4  # each job ran as a Slurm job
    pd.testing.assert_frame_equal(on_slurm, local, check_exact=True)


def test_slurm_reproduce_gives_the_summary_of_a_local_reproduce(tmp_path):
    if shutil.which("sbatch") is None or not _slurm_answers():
        pytest.skip("no sbatch: run scripts/slurm-local.sh to start a one-node Slurm")
    argv = ["reproduce", "--budget", "smoke", "--paper", "chen", "--only", "markov-mi"]
    summaries = []
    for name, executor in (("slurm", ["--executor", "slurm", "--slurm-timeout-min", "5"]), ("local", [])):
        assert main([*argv, "--out", str(tmp_path / name), *executor]) == 0
        summary = json.loads((tmp_path / name / "markov-mi" / "summary.json").read_text())
        summaries.append({k: v for k, v in summary.items() if k not in ("wall_seconds", "profile")})
    assert len(list((tmp_path / "slurm" / "submitit").glob("*_result.pkl"))) == 1  # the job ran as a Slurm job
    assert summaries[0] == summaries[1]
