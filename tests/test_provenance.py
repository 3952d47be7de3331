"""Which code made a run (docs/conventions.md#provenance): recorded, and a run of other code re-made, refused or
marked, never silently reused."""

import json

import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.cli import main
from inductionlab.reproduce import reproduce
from inductionlab.runner import RunDirError, run_experiment
from inductionlab.store import provenance

NAME = "approx-ih2"  # a smoke run of a second or so
OTHER = {"digest": "0123456789abcdef", "commit": "feedc0ffee00"}


def _made_by_other_code(run_dir):
    """Rewrite the run's record as if other code had made it."""
    for name in ("config.json", "summary.json"):
        path = run_dir / name
        if path.exists():
            path.write_text(json.dumps(json.loads(path.read_text()) | {"code": OTHER}))


def test_a_run_records_its_code_and_a_resume_across_code_versions_is_refused_naming_both(tmp_path):
    cfg = experiments.configure(NAME, preset="smoke")
    out = run_experiment(NAME, cfg, tmp_path / "r", threads=1)
    for name in ("config.json", "summary.json"):
        assert json.loads((out / name).read_text())["code"] == provenance.record(NAME)
    assert provenance.made_by(out) is None
    run_experiment(NAME, cfg, out, resume=True, threads=1)  # the same code: a finished run is left as it is
    _made_by_other_code(out)
    assert provenance.made_by(out) == OTHER
    for _finished_first in (True, False):
        with pytest.raises(RunDirError) as err:
            run_experiment(NAME, cfg, out, resume=True, threads=1)
        here = provenance.record(NAME)["digest"]
        assert OTHER["digest"] in str(err.value) and here in str(err.value), err.value
        (out / "summary.json").unlink(missing_ok=True)  # then the same for an unfinished run
    assert json.loads((out / "config.json").read_text())["code"] == OTHER  # refused: nothing rewritten


def test_reproduce_remakes_a_run_of_other_code_and_keeps_the_old_one_beside_it(tmp_path):
    out = tmp_path / "r"
    reproduce("wang", "smoke", out, only=(NAME,), threads=1)
    _made_by_other_code(out / NAME)
    before = json.loads((out / NAME / "summary.json").read_text())
    table = reproduce("wang", "smoke", out, only=(NAME,), threads=1)
    assert json.loads((out / NAME / "summary.json").read_text())["code"] == provenance.record(NAME)
    kept = out / f"{NAME}.made-by-{OTHER['digest'][:8]}"
    assert json.loads((kept / "summary.json").read_text()) == before  # nothing that trained is deleted
    assert set(table.made_by) == {""}
    page = (out / "report.html").read_text()
    assert "(kept with <code>--reuse-stale</code>): <b>0</b>" in page


def test_reuse_stale_keeps_a_finished_run_of_other_code_and_marks_its_rows(tmp_path, capsys):
    out = tmp_path / "r"
    reproduce("wang", "smoke", out, only=(NAME,), threads=1)
    _made_by_other_code(out / NAME)
    stamp = (out / NAME / "summary.json").stat().st_mtime_ns
    args = ["reproduce", "--budget", "smoke", "--paper", "wang", "--only", NAME, "--out", str(out), "--threads", "1"]
    assert main([*args, "--reuse-stale"]) == 0
    assert (out / NAME / "summary.json").stat().st_mtime_ns == stamp  # kept, not re-made
    table = pd.read_parquet(out / "claims.parquet")
    assert set(table.made_by) == {f"{NAME} made by {provenance.describe(OTHER)}"}
    page = (out / "report.html").read_text()
    assert "made by code 0123456789abcdef (commit feedc0ffee00)" in page
    assert "(kept with <code>--reuse-stale</code>): <b>1</b>" in page
    (out / NAME / "summary.json").unlink()  # an unfinished run of other code is made again even so
    assert main([*args, "--reuse-stale"]) == 0
    assert json.loads((out / NAME / "summary.json").read_text())["code"] == provenance.record(NAME)
