"""How many torch threads a run uses: ``--threads``, then $OMP_NUM_THREADS, then $SLURM_CPUS_PER_TASK, then the
cores this process may use (runner.thread_budget); the count reaches the training loop and summary.json; bad values
fail before any work, naming where they came from."""

import json
import os

import pytest
import torch

from inductionlab.cli import main, resolve
from inductionlab.config import ConfigError
from inductionlab.runner import run_experiment, thread_budget
from inductionlab.train.loop import Hook


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_the_budget_takes_the_option_then_omp_then_slurm_then_the_affinity(clean_env):
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert thread_budget() == (cores, "CPU affinity")
    clean_env.setenv("SLURM_CPUS_PER_TASK", "5")
    assert thread_budget() == (5, "SLURM_CPUS_PER_TASK")
    clean_env.setenv("OMP_NUM_THREADS", "3,1")  # one count per nesting level: the first is the run's
    assert thread_budget() == (3, "OMP_NUM_THREADS")
    assert thread_budget(2) == (2, "--threads")


@pytest.mark.parametrize(
    "var, value, threads, field",
    [("OMP_NUM_THREADS", "four", None, "OMP_NUM_THREADS"), ("SLURM_CPUS_PER_TASK", "0", None, "SLURM_CPUS_PER_TASK")]
    + [("OMP_NUM_THREADS", "2", 0, "--threads"), ("OMP_NUM_THREADS", "2", True, "--threads")],
)
def test_a_bad_count_fails_naming_its_source(clean_env, var, value, threads, field):
    clean_env.setenv(var, value)
    with pytest.raises(ConfigError, match=field):
        thread_budget(threads)


class _Threads(Hook):
    def __init__(self):
        self.seen = set()

    def after_step(self, state):
        self.seen.add(torch.get_num_threads())


@pytest.mark.parametrize(
    "env, threads, want",
    [({"OMP_NUM_THREADS": "3"}, None, (3, "OMP_NUM_THREADS"))]
    + [
        ({"SLURM_CPUS_PER_TASK": "2"}, None, (2, "SLURM_CPUS_PER_TASK")),
        ({"OMP_NUM_THREADS": "3"}, 1, (1, "--threads")),
    ],
)
def test_the_training_loop_runs_on_the_chosen_threads(clean_env, tmp_path, env, threads, want):
    for var, value in env.items():
        clean_env.setenv(var, value)
    hook, before = _Threads(), torch.get_num_threads()
    run_dir = run_experiment(
        "heads-dims",
        resolve("heads-dims", "smoke", {"heads": "2", "dims": "2"}),
        tmp_path / "run",
        threads=threads,
        hooks=(hook,),
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert hook.seen == {want[0]}
    assert (summary["threads"], summary["threads_from"]) == want
    assert torch.get_num_threads() == before  # the caller's setting is restored


ARGS = {
    "run": ["run", "heads-dims", "--preset", "smoke"],
    "sweep": ["sweep", "heads-dims", "--preset", "smoke"],
    "reproduce": ["reproduce", "--paper", "wang", "--budget", "smoke"],
}


@pytest.mark.parametrize("command", list(ARGS))
def test_the_commands_refuse_a_bad_thread_count_before_any_work(clean_env, tmp_path, capsys, command):
    out = tmp_path / "out"
    assert main([*ARGS[command], "--out", str(out), "--threads", "0"]) != 0
    assert "--threads" in capsys.readouterr().err
    clean_env.setenv("OMP_NUM_THREADS", "lots")
    assert main([*ARGS[command], "--out", str(out)]) != 0
    assert "OMP_NUM_THREADS" in capsys.readouterr().err
    assert not out.exists()
