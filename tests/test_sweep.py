import json

import pandas as pd
import pytest

from inductionlab import experiments, load_sweep
from inductionlab.cli import main, resolve
from inductionlab.config import ConfigError
from inductionlab.sweep import count_jobs, parse_grid, plan, run_sweep
from inductionlab.sweep_report import estimate


def test_grid_and_seeds_plan_jobs_on_the_run_axis(tmp_path):
    cfg = resolve("lazy-to-rich", "smoke", {})
    jobs = plan("lazy-to-rich", cfg, parse_grid(["task.alpha_star=1,2", "model.sigma_init=0.01,0.1"]), 3, tmp_path)
    assert len(jobs) == 12 and sorted({tuple(j.config["seeds"]) for j in jobs}) == [(0,), (1,), (2,)]
    assert len({j.hash for j in jobs}) == 12 and len({j.dir for j in jobs}) == 12
    no_axis = plan("plateau-scaling", resolve("plateau-scaling", "smoke", {}), {}, 2, tmp_path)
    assert [j.config["seeds"] for j in no_axis] == [[0], [1]]
    tuple_axis = plan(
        "repeated-text", resolve("repeated-text", "smoke", {}), parse_grid(["train.lr=0.1,0.2"]), 2, tmp_path
    )
    assert [j.config["seeds"] for j in tuple_axis] == [[0], [1], [0], [1]] and tuple_axis[0].overrides["seed"] == "0"
    scb = plan("scb-convergence", resolve("scb-convergence", "smoke", {}), {}, 2, tmp_path)
    assert [j.config["seeds"] for j in scb] == [[0], [1]]


def test_jobs_are_counted_before_any_config_is_built_and_equal_configs_are_one_job(tmp_path):
    cfg = resolve("lazy-to-rich", "smoke", {})
    grid = parse_grid(["task.L=8,8.0,08", "task.alpha_star=1,2", "task.L=8,9"])
    assert grid["task.L"] == ["8", "8.0", "08", "9"]
    jobs = plan("lazy-to-rich", cfg, grid, 3, tmp_path)
    assert count_jobs(cfg, grid, 3) == 24 and len(jobs) == 12 == len({j.hash for j in jobs}) == len(
        {j.dir for j in jobs}
    )
    assert count_jobs(cfg, parse_grid(["seeds=0,1,2"]), 1) == 3
    with pytest.raises(ConfigError, match="--n-seeds 2 with --grid seeds"):
        plan("lazy-to-rich", cfg, parse_grid(["seeds=0,1"]), 2, tmp_path)
    assert estimate("markov-mi", 10, 2).startswith("10 jobs on 2 workers: about 5 s (~1 s a job, markov-mi's wall:")
    assert "about 5.0 h" in estimate("lazy-to-rich", 100, 1, "smoke")


def test_local_sweep_resumes_and_skips_finished_jobs(tmp_path, capsys):
    out = tmp_path / "sw"
    argv = [
        "sweep",
        "lazy-to-rich",
        "--preset",
        "smoke",
        "--grid",
        "task.alpha_star=1,2",
        "--out",
        str(out),
        "--no-progress",
        "--gf",
        "none",
    ]
    assert main(argv) == 0
    table_lines = (out / "manifest.jsonl").read_text().splitlines()
    assert sum(json.loads(x)["status"] == "done" for x in table_lines) == 2
    assert main(argv) == 0  # nothing left to do
    assert (out / "manifest.jsonl").read_text().splitlines() == table_lines
    table = pd.read_parquet(out / "sweep.parquet")
    assert sorted(table["task.alpha_star"]) == [1.0, 2.0] and "final.w_KQ" in table.columns


def test_process_pool_and_submitit_local_executors(tmp_path):
    cfg = resolve("lazy-to-rich", "smoke", {"gf": "none"})
    grid = parse_grid(["seeds=1,2"])
    pool = run_sweep("lazy-to-rich", cfg, grid, tmp_path / "pool", workers=2, progress=False)
    sub = run_sweep("lazy-to-rich", cfg, grid, tmp_path / "sub", executor="submitit-local", progress=False)
    assert len(pool) == len(sub) == 2
    assert sorted(pool["final.w_KQ"]) == sorted(sub["final.w_KQ"])


@pytest.mark.parametrize("name", sorted(experiments.REGISTRY))
def test_n_seeds_gives_every_experiment_consecutive_seeds(name, tmp_path):
    cfg = resolve(name, "smoke", {})
    jobs = plan(name, cfg, {}, 3, tmp_path)
    first = cfg.seeds[0]
    assert sorted(s for j in jobs for s in j.config["seeds"]) == [first, first + 1, first + 2], name
    assert len(jobs) == 3, name  # one job, one row, per seed


def test_cli_sweep_with_seed_and_n_seeds(tmp_path, capsys):
    out = tmp_path / "sw"
    argv = [
        "sweep",
        "approx-ih2",
        "--preset",
        "smoke",
        "--seed",
        "4",
        "--n-seeds",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    table = pd.read_parquet(out / "sweep.parquet")
    assert sorted(table["seed"]) == [4, 5]
    assert main(["sweep", "approx-ih2", "--n-seeds", "0", "--out", str(out)]) == 2
    assert "--n-seeds" in capsys.readouterr().err


def test_a_two_by_two_grid_with_two_seeds_gives_typed_rows_and_a_report(tmp_path, capsys):
    out = tmp_path / "grid"
    argv = [
        "sweep",
        "lazy-to-rich",
        "--preset",
        "smoke",
        "--gf",
        "none",
        "--grid",
        "task.alpha_star=1,2",
        "--grid",
        "model.sigma_init=0.01,0.05",
        "--n-seeds",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    table = load_sweep(out)
    assert len(table) == 8 and sorted(set(zip(table["task.alpha_star"], table["model.sigma_init"], table.seed))) == [
        (a, s, seed) for a in (1.0, 2.0) for s in (0.01, 0.05) for seed in (0, 1)
    ]
    assert all(pd.api.types.is_float_dtype(table[c]) for c in ("task.alpha_star", "model.sigma_init", "T_III"))
    assert (table["task.w_star"] == 0.49).all() and (table["train.lr"] > 0).all()  # the values that are not grid keys
    assert (
        all((out / d / "summary.json").exists() for d in table.dir) and table.dir.str.contains("task.alpha_star=").all()
    )
    assert main(["report", str(out)]) == 0
    assert (out / "sweep_table.md").read_text().count("\n|") >= 5 and (out / "sweep_table.csv").exists()
    for key in ("task_alpha_star", "model_sigma_init"):
        assert (out / f"sweep_{key}.png").stat().st_size > 10_000


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_point_lets_the_others_finish_and_the_sweep_exit_non_zero(workers, tmp_path, capsys):
    import os

    good, bad = os.environ["INDUCTIONLAB_DATA"], str(tmp_path / "nowhere")
    out = tmp_path / f"w{workers}"
    argv = [
        "sweep",
        "wikitext",
        "--preset",
        "smoke",
        "--grid",
        f"data.path={good},{bad}",
        "--workers",
        str(workers),
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "1 of 2 jobs failed" in err and "nowhere" in err
    assert len(load_sweep(out)) == 1
