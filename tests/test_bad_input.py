"""Every bad invocation a careless user (or a crashed machine) produces ends in one line that names the option or
the file and says what to do: exit 2, no traceback."""

import json
import shutil

import pytest

from inductionlab.cli import main

MI = ["run", "markov-mi", "--preset", "smoke", "--no-progress"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished markov-mi run and a finished one-job sweep to damage."""
    root = tmp_path_factory.mktemp("bad")
    assert main([*MI, "--out", str(root / "done")]) == 0
    assert main(["sweep", "markov-mi", "--preset", "smoke", "--out", str(root / "sweep"), "--no-progress"]) == 0
    return root


def _copy(finished, tmp_path, name="done"):
    shutil.copytree(finished / name, tmp_path / name)
    return tmp_path / name


def _setup(case, finished, tmp_path):
    """Prepare what the case needs; returns the argv with {tmp} and {run} filled in."""
    run = tmp_path / "done"
    if case in (
        "summary-garbage",
        "summary-empty",
        "table-truncated",
        "table-deleted",
        "other-experiment",
        "force-foreign",
        "resume-contradicting",
        "exists-no-flag",
    ):
        run = _copy(finished, tmp_path)
    if case == "summary-garbage":
        (run / "summary.json").write_text("{not json")
    elif case == "summary-empty":
        (run / "summary.json").write_text("")
    elif case == "table-truncated":
        data = (run / "mi.parquet").read_bytes()
        (run / "mi.parquet").write_bytes(data[: len(data) // 3])
    elif case == "table-deleted":
        (run / "mi.parquet").unlink()
    elif case == "other-experiment":
        cfg = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps({**cfg, "experiment": "lazy-to-rich"}))
    elif case == "force-foreign":
        (run / "my_notes.txt").write_text("mine")
    elif case == "config-not-json":
        run.mkdir()
        (run / "config.json").write_text("hello")
    elif case == "out-is-file":
        (tmp_path / "afile").write_text("x")
    return run


CASES = [  # (case, argv, words the message must contain)
    ("unknown-experiment", ["run", "lazy-to-poor"], ["unknown experiment"]),
    ("unknown-key", [*MI, "--task.alpha_", "1"], ["unknown key", "task.alpha"]),
    ("bad-type", [*MI, "--n_draws", "many"], ["n_draws", "int"]),
    ("bad-preset", ["run", "markov-mi", "--preset", "huge"], ["--preset", "smoke"]),
    ("missing-value", [*MI, "--n_draws"], ["--n_draws", "missing value"]),
    ("seed-negative", [*MI, "--seed", "-1"], ["seeds", "0..2^31"]),
    ("seeds-duplicate", [*MI, "--seeds", "0,0"], ["seeds", "distinct"]),
    ("seeds-empty", [*MI, "--seeds", "[]"], ["seeds", "at least one"]),
    ("out-empty", [*MI, "--out", ""], ["--out"]),
    ("out-is-file", [*MI, "--out", "{tmp}/afile"], ["afile", "is a file"]),
    ("out-under-sys", [*MI, "--out", "/sys/inductionlab-test/run"], ["/sys/inductionlab-test"]),
    ("out-under-proc", [*MI, "--out", "/proc/inductionlab-test"], ["/proc/inductionlab-test"]),
    ("config-not-json", [*MI, "--out", "{run}"], ["config.json", "is damaged", "another --out"]),
    ("exists-no-flag", [*MI, "--out", "{run}"], ["--resume", "--force"]),
    ("resume-contradicting", [*MI, "--out", "{run}", "--resume", "--n_draws", "7"], ["n_draws", "saved run"]),
    ("force-foreign", [*MI, "--out", "{run}", "--force"], ["my_notes.txt", "did not write"]),
    ("config-missing", ["run", "--config", "{tmp}/nothing/config.json"], ["--config", "no such file"]),
    ("report-missing", ["report", "{tmp}/nothing"], ["not a run directory"]),
    ("summary-garbage", ["report", "{run}"], ["summary.json", "is damaged or not a run's summary"]),
    ("summary-empty", ["report", "{run}"], ["summary.json"]),
    ("table-truncated", ["report", "{run}"], ["mi.parquet", "damaged"]),
    ("table-deleted", ["report", "{run}"], ["do not fit", "--force"]),
    ("other-experiment", ["report", "{run}"], ["do not fit a lazy-to-rich run"]),
    (
        "batch-huge",
        [
            "run",
            "lazy-to-rich",
            "--preset",
            "smoke",
            "--train.batch_size",
            "1000000000000",
            "--out",
            "{tmp}/huge",
            "--no-progress",
        ],
        ["out of memory", "batch size"],
    ),
    ("scb-rho-nan", ["run", "scb-convergence", "--preset", "smoke", "--train.rho", "nan"], ["train.rho", "finite"]),
    (
        "scb-threshold-negative",
        ["run", "scb-convergence", "--preset", "smoke", "--train.threshold_C", "-1"],
        ["train.threshold_C", "> 0"],
    ),
    ("device-cpu-only", [*MI, "--device", "cuda"], ["--device", "CPU only"]),
    ("grid-empty", ["sweep", "markov-mi", "--grid", "task.L=,", "--out", "{tmp}/s"], ["--grid", "no values"]),
    ("grid-unknown-key", ["sweep", "markov-mi", "--grid", "task.LL=1,2", "--out", "{tmp}/s"], ["task.LL", "unknown"]),
    ("n-seeds-zero", ["sweep", "markov-mi", "--n-seeds", "0"], ["--n-seeds", "≥ 1"]),
    ("workers-zero", ["sweep", "markov-mi", "--workers", "0"], ["--workers", "≥ 1"]),
    ("sweep-out-is-file", ["sweep", "markov-mi", "--preset", "smoke", "--out", "{tmp}/afile"], ["afile", "is a file"]),
    ("slurm-absent", ["sweep", "markov-mi", "--executor", "slurm"], ["Slurm", "local"]),
    ("list-unknown", ["list", "--keys", "lazy-to-poor"], ["unknown experiment"]),
]


@pytest.mark.parametrize("case, argv, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line(case, argv, words, finished, tmp_path, capsys):
    if case == "sweep-out-is-file":
        (tmp_path / "afile").write_text("x")
    if case == "slurm-absent" and shutil.which("sbatch"):
        pytest.skip("Slurm is installed here")
    run = _setup(case, finished, tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{run}", str(run)) for a in argv]
    assert main(argv) == 2, case
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 8, err
    for word in words:
        assert word in err, (case, word, err)


def test_there_are_at_least_31_cases():
    assert len(CASES) >= 31


def test_a_truncated_manifest_line_is_skipped_and_the_sweep_goes_on(finished, tmp_path, caplog):
    sweep = _copy(finished, tmp_path, "sweep")
    with (sweep / "manifest.jsonl").open("a") as f:
        f.write('{"hash": "ab')
    assert main(["sweep", "markov-mi", "--preset", "smoke", "--out", str(sweep), "--no-progress"]) == 0
    assert "damaged" in caplog.text
