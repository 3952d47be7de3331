"""Which jobs an edit makes stale (docs/conventions.md#provenance), on a scratch copy of the package: exactly those
whose closure holds the edited file — a monitor module, the training loop, a C kernel, a plug-in's own file —,
none for a claim's threshold, every one for another torch."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from inductionlab import experiments
from inductionlab.config import to_dict
from inductionlab.store import closure, key
from inductionlab.store.plan import plan

TOY = {"lazy-to-rich", "lazy-to-rich-boolean", "plateau-scaling", "joint-training"}  # Wang's toy model


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp("pkg") / "inductionlab"
    shutil.copytree(closure.PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return root


def _digests(root):
    closure._read.cache_clear()
    return {e.name: closure.of(*key.starts(e.name), root=root).digest for e in experiments.BUILTIN}


def _stale_after(root, rel, edit):
    """The experiments whose closure digest an edit of ``root/rel`` changes (the file restored after)."""
    path = root / rel
    text = path.read_text()
    before = _digests(root)
    path.write_text(edit(text))
    try:
        after = _digests(root)
    finally:
        path.write_text(text)
    return {n for n in before if before[n] != after[n]}


def _holding(root, rel):
    closure._read.cache_clear()
    return {
        e.name for e in experiments.BUILTIN if f"inductionlab/{rel}" in closure.of(*key.starts(e.name), root=root).files
    }


def _ran(traced, rel):
    return {name for name, calls in traced.items() if any(label == f"inductionlab/{rel}" for label, _ in calls)}


def _code(text):
    return text + "\n_EDITED = 1\n"


def test_a_monitor_module_makes_stale_only_the_experiments_that_monitor(scratch, tmp_path):
    stale = _stale_after(scratch, "monitor/core.py", _code)
    assert stale == _holding(scratch, "monitor/core.py") == {"fast-induction", "hf-induction"}, stale
    jobs = Counter(j.experiment for j in plan("all", "full", tmp_path, os.environ["INDUCTIONLAB_DATA"])[0])
    assert sum(jobs[n] for n in stale) < sum(jobs.values()) / 4  # few of the page's jobs
    assert not stale & TOY


def test_a_docstring_edit_anywhere_makes_nothing_stale(scratch):
    for rel in ("monitor/core.py", "train/loop.py", "cli.py", "models/transformer.py"):
        assert not _stale_after(scratch, rel, lambda t: t.replace('"""', '"""Edited. ', 1)), rel


def test_the_command_line_and_the_report_are_in_no_closure(scratch):
    for rel in ("cli.py", "cli_report.py", "claims_report.py", "reproduce.py", "sweep.py", "runner.py"):
        assert not _stale_after(scratch, rel, _code), rel


def test_a_claims_threshold_makes_nothing_stale(scratch):
    path = scratch / "experiments/wang/claims/probe.py"
    assert "Between(hi=0.2)" in path.read_text()
    assert not _stale_after(scratch, "experiments/wang/claims/probe.py", lambda t: t.replace("hi=0.2", "hi=0.3", 1))


def test_the_training_loop_makes_stale_every_experiment_that_trains_through_it(scratch, traced):
    stale = _stale_after(scratch, "train/loop.py", _code)
    assert stale == _holding(scratch, "train/loop.py")
    assert _ran(traced, "train/loop.py") <= stale
    assert len(stale) >= 15


def test_a_c_kernel_makes_stale_the_experiments_that_compile_it(scratch, traced):
    stale = _stale_after(scratch, "models/chen_fused.c", lambda t: t + "\n/* edited */\n")
    assert stale == _holding(scratch, "models/chen_fused.c") == _ran(traced, "models/chen_fused.py"), stale
    assert "lazy-to-rich" not in stale and "wikitext" not in stale


def test_another_torch_makes_every_job_stale(monkeypatch):
    configs = {e.name: to_dict(e.config) for e in experiments.BUILTIN}
    before = {n: key.of_job(n, c).id for n, c in configs.items()}
    monkeypatch.setattr(key, "_version", lambda dist: "9.9.9" if dist == "torch" else key.metadata.version(dist))
    key._providers.cache_clear()
    after = {n: key.of_job(n, c).id for n, c in configs.items()}
    assert all(before[n] != after[n] for n in before)
    change = key.changes(
        key.of_job("probe", configs["probe"]).as_dict() | {"software": {"torch": "2.0"}},
        key.of_job("probe", configs["probe"]),
    )
    assert any(c.startswith("torch 2.0 → 9.9.9") for c in change), change


COIN = textwrap.dedent(
    """
    from dataclasses import dataclass

    import pandas as pd
    import torch

    import inductionlab as il


    @dataclass(frozen=True)
    class Config:
        seeds: tuple[int, ...] = (0, 1)
        flips: int = 4000
        p: float = 0.5


    def run(cfg, ctx):
        rows = []
        for seed in cfg.seeds:
            g = il.rng.generator(seed)
            rows.append({"seed": seed, "heads": (torch.rand(cfg.flips, generator=g) < cfg.p).double().mean().item()})
        table = pd.DataFrame(rows)
        return il.Results({"metrics": table}, {"heads": float(table.heads.mean())})


    EXPERIMENT = il.Experiment(
        name="coin",
        description="a coin's heads rate",
        config=Config(),
        presets={"smoke": {"flips": 400}, "quick": {"flips": 2000}},
        run=run,
        claims=(
            il.Claim(id="coin-fair", paper="coins", where="folklore", statement="the coin is fair", key="heads",
                     expected="0.5", test=il.Near(0.5, atol=0.05), control="biased"),
        ),
        controls=(il.Control(name="biased", breaks="p = 0.9", overrides={"p": 0.9}, preset="smoke"),),
    )
    """
)


def _reproduce_coin(folder):
    args = ["reproduce", "--plugin", "coin.py", "--only", "coin", "--budget", "quick", "--paper", "coins"]
    done = subprocess.run(
        [sys.executable, "-m", "inductionlab", *args, "--out", "r", "--threads", "1"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_plugins_own_file_makes_its_jobs_stale(tmp_path):
    (tmp_path / "coin.py").write_text(COIN)
    code, said = _reproduce_coin(tmp_path)
    assert code == 0 and "1 passed" in said, said
    first = json.loads((tmp_path / "r" / "coin" / "config.json").read_text())["code"]["digest"]
    (tmp_path / "coin.py").write_text(COIN.replace("< cfg.p", "< 0.99"))  # heads come up 0.99
    code, said = _reproduce_coin(tmp_path)
    assert code == 1 and "1 failed" in said, said
    assert json.loads((tmp_path / "r" / "coin" / "config.json").read_text())["code"]["digest"] != first
    assert (tmp_path / "r" / f"coin.made-by-{first[:8]}").is_dir()  # the first run kept beside it


def _run(folder, *args):
    env = {**os.environ, "PYTHONPATH": str(folder.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "inductionlab", *args],
        cwd=folder.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout + done.stderr


def test_resume_continues_after_an_edit_outside_the_closure_and_refuses_one_inside(tmp_path):
    root = tmp_path / "inductionlab"
    shutil.copytree(closure.PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    out = str(tmp_path / "run")
    assert _run(root, "run", "approx-ih2", "--preset", "smoke", "--out", out, "--threads", "1")[0] == 0
    (root / "cli.py").write_text(_code((root / "cli.py").read_text()))  # outside: the command line
    (root / "monitor" / "core.py").write_text(_code((root / "monitor" / "core.py").read_text()))
    code, said = _run(root, "run", "approx-ih2", "--out", out, "--resume")
    assert code == 0, said
    (root / "models" / "transformer.py").write_text(_code((root / "models" / "transformer.py").read_text()))
    code, said = _run(root, "run", "approx-ih2", "--out", out, "--resume")
    assert code == 2 and "inductionlab/models/transformer.py changed" in said, said
