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


def _plugin(op_size):
    """A toy-sized plug-in experiment (a few hundred additions), with ``op_size`` declared or not."""
    from dataclasses import dataclass

    import pandas as pd

    import inductionlab as il

    @dataclass(frozen=True)
    class Config:
        seeds: tuple[int, ...] = (0,)
        n: int = 300

    def run(cfg, ctx):
        x = torch.rand(cfg.n, generator=il.rng.generator(cfg.seeds[0]))
        return il.Results({"metrics": pd.DataFrame({"x": x.numpy()})}, {"mean": float(x.mean()), "threads": 0})

    return il.Experiment(name="toy-threads", description="a toy", config=Config(), run=run, op_size=op_size)


@pytest.mark.parametrize("op_size", [None, lambda c: c.n])
def test_the_default_gives_a_toy_sized_plugin_one_thread_and_records_why(clean_env, tmp_path, op_size, caplog):
    from inductionlab import experiments, runner

    clean_env.setattr(runner, "_cores", lambda: 4)  # a 4-core CPU set, so that the policy has a choice to make
    clean_env.setitem(experiments.REGISTRY, "toy-threads", _plugin(op_size))
    exp = experiments.get("toy-threads")
    n, why = runner.threads_for(exp, exp.config)
    assert n == 1 and why.startswith("policy: ") and "--threads" in why
    assert ("declares no op size" in why) == (op_size is None) and ("300 elements" in why) == (op_size is not None)
    run_dir = run_experiment("toy-threads", exp.config, tmp_path / "run")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["threads"], summary["threads_from"]) == (1, why)
    assert runner.threads_for(exp, exp.config, 3) == (3, "--threads")  # asked for: the policy stands aside
    clean_env.setenv("OMP_NUM_THREADS", "2")
    assert runner.threads_for(exp, exp.config) == (2, "OMP_NUM_THREADS")


def test_a_declared_large_op_keeps_the_cores(clean_env):
    from inductionlab import experiments, runner

    clean_env.setattr(runner, "_cores", lambda: 4)
    big = _plugin(lambda c: runner.GAINS_FROM)
    assert runner.threads_for(big, big.config) == (4, "CPU affinity")
    wikitext = experiments.get("wikitext")
    assert runner.threads_for(wikitext, wikitext.config) == (4, "CPU affinity")  # 32 × 200 × 2000 logits


def test_free_cores_counts_the_other_runnable_tasks():
    from inductionlab.runner import free_cores

    assert free_cores("0.50 0.40 0.30 1/123 4567", cores=2) == 2  # only the reader runs
    assert free_cores("1.90 1.80 1.70 3/140 4567", cores=2) == 0  # two others run
    assert free_cores("2.0 2.0 2.0 2/140 4567", cores=4) == 3
    assert free_cores("garbled", cores=2) is None
