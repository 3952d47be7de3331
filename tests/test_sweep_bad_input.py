"""What an adversarial user does to ``sweep`` (and to ``run``, ``reproduce``, ``report`` and ``list`` around it)
ends in the right exit status and one line naming the option or the file, never a traceback; and nothing is run
twice, mixed or lost: each case also checks the manifest and the directories."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from inductionlab import jobs, load_sweep, sweep
from inductionlab.cli import main
from inductionlab.sweep_report import is_sweep

MI = ["markov-mi", "--preset", "smoke", "--no-progress"]
TOY = ["lazy-to-rich", "--preset", "smoke", "--train.stage2_steps", "5000", "--train.checkpoint_every", "500"]
LONG = "x" * 300  # one path component over the 255 bytes file systems allow


def _statuses(out: Path) -> list[tuple[str, str]]:
    lines = (out / "manifest.jsonl").read_text().splitlines()
    return [(e["dir"], e["status"]) for e in map(json.loads, lines) if e["status"] != "submitted"]


def duplicate_points(tmp, capsys, monkeypatch):
    """0.01, 0.010 and 1e-2 are one config: one job, one directory, one row — even with two workers."""
    out = tmp / "s"
    code = main(["sweep", *MI, "--grid", "a=0.01,0.010,1e-2", "--workers", "2", "--out", str(out)])
    assert len(load_sweep(out)) == 1 and len([p for p in out.iterdir() if p.is_dir()]) == 1
    assert [s for _, s in _statuses(out)] == ["done"]
    return code, capsys.readouterr().err


def repeated_grid_key(tmp, capsys, monkeypatch):
    out = tmp / "s"
    code = main(["sweep", *MI, "--grid", "a=0.01", "--grid", "a=0.02,0.01", "--out", str(out)])
    assert sorted(load_sweep(out)["a"]) == [0.01, 0.02]
    assert sweep.parse_grid(["task.L=8,9", "task.L=10"]) == {"task.L": ["8", "9", "10"]}
    return code, capsys.readouterr().err


def seeds_twice(tmp, capsys, monkeypatch):
    code = main(["sweep", *MI, "--grid", "seeds=0,1", "--n-seeds", "2", "--out", str(tmp / "s")])
    assert not (tmp / "s").exists()
    return code, capsys.readouterr().err


def _refused_at_once(argv, tmp, capsys):
    code = main([*argv, "--out", str(tmp / "s")])
    assert not (tmp / "s").exists()  # refused before any work: nothing was written, whatever the machine's speed
    return code, capsys.readouterr().err


def million_seeds(tmp, capsys, monkeypatch):
    return _refused_at_once(["sweep", *MI, "--n-seeds", "1000000"], tmp, capsys)


def thousand_points(tmp, capsys, monkeypatch):
    values = ",".join(str(0.001 * (i + 1)) for i in range(1000))
    return _refused_at_once(["sweep", *MI, "--grid", f"a={values}"], tmp, capsys)


def _children_running_jobs() -> list[int]:
    """The pids of this process's pool workers."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                if b"spawn_main" in (stat.parent / "cmdline").read_bytes():
                    pids.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _kill_a_worker_once_both_run(out: Path) -> None:
    deadline = time.monotonic() + 300  # a generous deadline: on a loaded machine the workers start late
    while time.monotonic() < deadline and len(list(out.glob("*/config.json"))) < 2:
        time.sleep(0.05)
    os.kill(_children_running_jobs()[0], signal.SIGKILL)


def killed_worker(tmp, capsys, monkeypatch):
    """SIGKILL of one of two busy workers fails its job only; the other finishes; re-running finishes the first."""
    if not Path("/proc").exists():
        pytest.skip("needs /proc to find the worker processes")
    out = tmp / "s"
    argv = ["sweep", *TOY, "--gf", "none", "--grid", "task.alpha_star=1,2", "--workers", "2", "--out", str(out)]
    killer = threading.Thread(target=_kill_a_worker_once_both_run, args=(out,))
    killer.start()
    code = main([*argv, "--no-progress"])
    killer.join()
    err = capsys.readouterr().err
    statuses = _statuses(out)
    assert sorted(s for _, s in statuses) == ["done", "failed"] and "1 of 2 jobs failed" in err
    failed = next(d for d, s in statuses if s == "failed")
    assert not (out / failed / "summary.json").exists()
    assert main([*argv, "--no-progress"]) == 0
    table = load_sweep(out)
    assert len(table) == 2 and table["task.alpha_star"].is_unique
    assert sorted(s for _, s in _statuses(out)) == ["done", "done", "failed"]  # only the killed job ran again
    metrics = pd.read_parquet(out / failed / "metrics.parquet")
    assert not metrics.duplicated(["run", "stage", "step"]).any()
    return code, err


def ctrl_c(tmp, capsys, monkeypatch):
    """Ctrl-C during the second job: exit 130, saying how to go on; the first job is kept, not run again."""
    real, calls = jobs.run_job, []

    def interrupted_second(job):
        calls.append(job)
        if len(calls) == 2:  # Ctrl-C as the second job starts: what the default SIGINT handler raises, at once
            raise KeyboardInterrupt
        return real(job)

    out = tmp / "s"
    argv = ["sweep", *MI, "--grid", "a=0.01,0.02", "--out", str(out)]
    monkeypatch.setattr(jobs, "run_job", interrupted_second)
    code, err = main(argv), capsys.readouterr().err
    assert [s for _, s in _statuses(out)] == ["done"]
    monkeypatch.setattr(jobs, "run_job", real)
    assert main(argv) == 0 and [s for _, s in _statuses(out)] == ["done", "done"]
    return code, err


def sweep_into_a_run(tmp, capsys, monkeypatch):
    run = tmp / "run"
    assert main(["run", *MI, "--out", str(run)]) == 0
    assert main(["sweep", *MI, "--out", str(tmp / "s")]) == 0 and is_sweep(tmp / "s") and not is_sweep(run)
    before = sorted(p.name for p in run.iterdir())
    capsys.readouterr()
    code = main(["sweep", *MI, "--out", str(run)])
    assert sorted(p.name for p in run.iterdir()) == before
    return code, capsys.readouterr().err


def sweep_into_another_sweep(tmp, capsys, monkeypatch):
    out = tmp / "s"
    out.mkdir()
    (out / "sweep.json").write_text('{"experiment": "lazy-to-rich", "grid": []}')
    (out / "manifest.jsonl").write_text("")
    code = main(["sweep", *MI, "--out", str(out)])
    assert json.loads((out / "sweep.json").read_text())["experiment"] == "lazy-to-rich"
    assert (out / "manifest.jsonl").read_text() == ""
    return code, capsys.readouterr().err


def reproduce_missing_data(tmp, capsys, monkeypatch):
    code = main(["reproduce", "--budget", "smoke", "--data", str(tmp / "missing"), "--out", str(tmp / "r")])
    assert not (tmp / "r").exists()
    return code, capsys.readouterr().err


def _damaged_sweep_json(text):
    def case(tmp, capsys, monkeypatch):
        (tmp / "s").mkdir()
        (tmp / "s" / "sweep.json").write_text(text)
        (tmp / "s" / "manifest.jsonl").write_text("")
        return main(["report", str(tmp / "s")]), capsys.readouterr().err

    return case


def _long_out(command):
    def case(tmp, capsys, monkeypatch):
        argv = ["run", *MI] if command == "run" else ["sweep", *MI] if command == "sweep" else [command]
        return main([*argv, "--out", str(tmp / LONG)]), capsys.readouterr().err

    return case


def slurm_option_with_the_local_executor(tmp, capsys, monkeypatch):
    """A --slurm-* option acts only with the executor that uses it: refused before any job, not ignored."""
    return _refused_at_once(["sweep", *MI, "--slurm-cpus", "4"], tmp, capsys)


def broken_pipe(tmp, capsys, monkeypatch):
    """`inductionlab list --keys lazy-to-rich | head -1`: the reader goes before the listing is written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "inductionlab", "list", "--keys", "lazy-to-rich"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(), err


# case: (its function, the exit status, words the error must hold)
CASES = {
    "1-duplicate-points": (duplicate_points, 0, ["sweep: 1 job on 2 workers: about", "wall:"]),
    "2-repeated-grid-key": (repeated_grid_key, 0, ["sweep: 2 jobs on 1 worker"]),
    "3-grid-seeds-and-n-seeds": (seeds_twice, 2, ["--n-seeds 2", "--grid seeds"]),
    "4-million-seeds": (million_seeds, 2, ["--yes", "1000000 jobs", "add --yes"]),
    "4-thousand-points": (thousand_points, 2, ["--yes", "1000 jobs", "about"]),
    "5-killed-worker": (killed_worker, 1, ["1 of 2 jobs failed", "killed by SIGKILL", "task.alpha_star="]),
    "6-ctrl-c": (ctrl_c, 130, ["interrupted", "re-run the same command"]),
    "7-sweep-into-a-run": (sweep_into_a_run, 2, ["--out", "holds a run", "config.json"]),
    "7-sweep-into-another-sweep": (sweep_into_another_sweep, 2, ["--out", "holds a sweep of lazy-to-rich"]),
    "8-reproduce-missing-data": (reproduce_missing_data, 2, ["--data", "missing", "no such"]),
    "9-sweep-json-garbage": (_damaged_sweep_json("{not json"), 2, ["sweep.json", "is damaged", "re-run the sweep"]),
    "9-sweep-json-wrong-shape": (_damaged_sweep_json('{"experiment": ["x"]}'), 2, ["sweep.json", "expected"]),
    "10-long-name-run": (_long_out("run"), 2, [LONG, "longer than"]),
    "10-long-name-sweep": (_long_out("sweep"), 2, [LONG, "longer than"]),
    "10-long-name-reproduce": (_long_out("reproduce"), 2, [LONG, "longer than"]),
    "11-broken-pipe": (broken_pipe, 141, []),
    "12-slurm-option-local": (slurm_option_with_the_local_executor, 2, ["--slurm-cpus", "--executor slurm"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_abuse_gives_its_exit_status_and_one_clear_line(case, tmp_path, capsys, monkeypatch):
    run, expected, words = CASES[case]
    code, err = run(tmp_path, capsys, monkeypatch)
    assert code == expected, (case, err)
    assert "Traceback" not in err, err
    for word in words:
        assert word in err, (case, word, err)
