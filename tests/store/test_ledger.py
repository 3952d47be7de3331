"""The results ledger (docs/conventions.md#ledger): entries only from committed code, damaged ones named and kept,
the page rendered from it alone — byte for byte the same twice, re-judged by a threshold with nothing re-run — and
``report --ledger --check`` holding the committed page to this commit's keys."""

import dataclasses
import json
import os
import shutil
import subprocess

import pytest

from inductionlab import experiments, ledger_page
from inductionlab.analysis.claims import Between
from inductionlab.cli import main
from inductionlab.runner import run_experiment
from inductionlab.store import closure, key
from inductionlab.store.ledger import FORMAT, Ledger, LedgerError

NAME = "approx-ih2"  # a smoke run of a second or so


def _git(where, *args):
    subprocess.run(
        ["git", "-C", str(where), *args], check=True, capture_output=True, timeout=600
    )  # a generous deadline: a busy machine


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A git checkout holding a copy of the package, committed."""
    repo = tmp_path_factory.mktemp("repo")
    shutil.copytree(
        closure.PACKAGE, repo / "src" / "inductionlab", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the package")
    return repo / "src" / "inductionlab"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return run_experiment(NAME, experiments.configure(NAME, preset="smoke"), tmp_path_factory.mktemp("r") / NAME)


def test_an_entry_comes_only_from_committed_code(checkout, finished, tmp_path):
    ledger = Ledger(tmp_path / "results", package=checkout)
    (path,) = ledger.add(NAME, [NAME], finished, "smoke")
    entry = json.loads(path.read_text())
    assert entry["format"] == FORMAT and entry["key"] == key.of_job(NAME, entry_config(finished)).as_dict()
    assert entry["summary"]["max_error_over_bound"] is not None and "code" not in entry["summary"]
    assert len(entry["commit"]) == 12 and entry["cpu"]["kind"] and entry["core_minutes"] >= 0
    assert entry["figures"] and all((tmp_path / "results" / NAME / "figures" / f).exists() for f in entry["figures"])
    (checkout / "cli.py").write_text((checkout / "cli.py").read_text() + "\n_EDITED = 1\n")  # outside the closure
    ledger.add(NAME, [NAME], finished, "smoke")
    model = checkout / "models" / "transformer.py"
    model.write_text(model.read_text() + "\n_EDITED = 1\n")
    with pytest.raises(LedgerError, match="models/transformer.py"):
        ledger.add(NAME, [NAME], finished, "smoke")
    (checkout / "rng_new.py").write_text("")  # an untracked file of no closure changes nothing
    _git(checkout, "checkout", "--", ".")


def entry_config(run_dir):
    saved = json.loads((run_dir / "config.json").read_text())
    return {k: v for k, v in saved.items() if k not in ("experiment", "plugins", "code")}


def test_a_damaged_entry_is_named_and_kept(checkout, finished, tmp_path):
    ledger = Ledger(tmp_path / "results", package=checkout)
    (path,) = ledger.add(NAME, [NAME], finished, "smoke")
    path.write_text('{"format": 1, "key": ')
    with pytest.raises(LedgerError, match=str(path)):
        ledger.read(NAME, NAME)
    (status,) = ledger.status([(NAME, NAME, entry_config(finished))])
    assert status.state == "missing" and str(path) in status.why
    ledger.add(NAME, [NAME], finished, "smoke")
    assert path.with_name(path.name + ".damaged").read_text() == '{"format": 1, "key": '  # nothing lost
    assert ledger.status([(NAME, NAME, entry_config(finished))])[0].state == "current"


def _fake_ledger(root, finished):
    """A ledger whose approx-ih2 jobs hold the smoke run's summary under the full page's keys."""
    summary = json.loads((finished / "summary.json").read_text())
    for experiment, job, config in ledger_page.planned(os.environ["INDUCTIONLAB_DATA"]):
        if experiment == NAME:
            entry = {
                "format": FORMAT,
                "job": job,
                "experiment": experiment,
                "key": key.of_job(experiment, config).as_dict(),
                "config": config,
                "commit": "0123456789ab",
                "cpu": {"kind": "test CPU"},
                "core_minutes": 0.5,
                "finished": "2026-12-01T00:00:00+00:00",
                "summary": summary,
            }
            (root / experiment).mkdir(parents=True, exist_ok=True)
            (root / experiment / f"{job}.json").write_text(json.dumps(entry))
    return Ledger(root)


def test_the_page_is_rendered_from_the_ledger_alone_and_the_same_twice(finished, tmp_path, monkeypatch):
    ledger = _fake_ledger(tmp_path / "results", finished)
    data = os.environ["INDUCTIONLAB_DATA"]
    table = ledger_page.render(ledger.root, tmp_path / "a.html", data)
    ledger_page.render(ledger.root, tmp_path / "b.html", data)
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    page = (tmp_path / "a.html").read_text()
    planned = ledger_page.planned(data)
    mine = sum(e == NAME for e, _, _ in planned)
    assert f"<b>{mine} of {len(planned)} jobs current</b>" in page and f"test CPU {0.5 * mine:.1f}" in page
    row = table.set_index("id").loc["wang-thm4.1-bound"]
    assert row.status in ("passed", "failed", "unearned")
    claims = experiments.get(NAME).claims
    flipped = tuple(dataclasses.replace(c, test=Between(lo=1e9)) if c.id == row.name else c for c in claims)
    monkeypatch.setitem(experiments.REGISTRY, NAME, dataclasses.replace(experiments.get(NAME), claims=flipped))
    again = ledger_page.render(ledger.root, tmp_path / "c.html", data).set_index("id").loc[row.name]
    assert again.status == "failed" and ledger_page.check(ledger.root, tmp_path / "c.html", data)[0]["current"] == mine


def test_check_fails_when_the_page_says_more_jobs_are_current_than_are(finished, tmp_path, capsys):
    ledger = _fake_ledger(tmp_path / "results", finished)
    data = os.environ["INDUCTIONLAB_DATA"]
    page = tmp_path / "report.html"
    args = ["report", "--ledger", str(ledger.root), "--page", str(page), "--data", data]
    assert main(args) == 0
    assert main([*args, "--check"]) == 0
    said = capsys.readouterr().out
    assert "current at HEAD" in said and "says" in said
    entry = ledger.root / NAME / f"{NAME}.json"
    record = json.loads(entry.read_text())
    record["key"]["files"]["inductionlab/models/transformer.py"] = "0" * 16
    record["key"]["id"] = "0" * 16
    entry.write_text(json.dumps(record))
    assert main([*args, "--check"]) == 1  # the page says one more is current than is
    assert "models/transformer.py changed" in ledger.status([(NAME, NAME, record["config"])])[0].why


def test_an_audit_re_makes_entries_and_names_one_altered_by_hand(checkout, finished, tmp_path, capsys):
    from inductionlab.reproduce import audit

    ledger = Ledger(tmp_path / "results", package=checkout)
    (path,) = ledger.add(NAME, [NAME], finished, "smoke")
    data = os.environ["INDUCTIONLAB_DATA"]
    ((job, differ, exact),) = audit(ledger.root, 1, out=tmp_path / "w", data=data, budget="smoke")
    assert (job, differ, exact) == (NAME, [], True)  # this CPU, these threads: bit for bit
    record = json.loads(path.read_text())
    record["summary"]["max_error_over_bound"] *= 1.001
    path.write_text(json.dumps(record))
    ((job, differ, _),) = audit(ledger.root, 1, out=tmp_path / "w", data=data, budget="smoke")
    assert job == NAME and len(differ) == 1 and differ[0].startswith("max_error_over_bound: committed"), differ
    said = json.loads((ledger.root / ledger_page.AUDIT).read_text())
    assert said["entries"] == 1 and said["agreed"] == 0 and said["cpu"] == record["cpu"]["kind"]
    with pytest.raises(Exception, match="--audit 2"):
        audit(ledger.root, 2, out=tmp_path / "w", data=data, budget="smoke")


def test_fill_runs_the_missing_jobs_within_its_minutes_and_adds_each_to_the_ledger(checkout, tmp_path):
    from inductionlab.reproduce import fill

    ledger = Ledger(tmp_path / "results", package=checkout)
    data = os.environ["INDUCTIONLAB_DATA"]
    args = dict(out=tmp_path / "w", data=data, only=(NAME,), page=tmp_path / "page.html", budget="smoke")
    fill(ledger, minutes=1e-9, **args)  # the first job starts; none after it, its minutes spent
    assert len(ledger.entries()) == 1
    assert (tmp_path / "page.html").exists()
    fill(ledger, **args)
    assert sorted(e["job"] for e in ledger.entries()) == [NAME, f"{NAME}.calibration"]
    stamps = {p: p.stat().st_mtime_ns for p in ledger.root.rglob("*.json")}
    fill(ledger, **args)  # every job current: nothing runs, nothing is rewritten
    assert {p: p.stat().st_mtime_ns for p in ledger.root.rglob("*.json")} == stamps


def test_jobs_of_one_key_are_one_run(checkout, tmp_path):
    from inductionlab.config import config_hash, to_dict
    from inductionlab.jobs import Job
    from inductionlab.reproduce import _todo

    cfg = experiments.configure(NAME, preset="smoke")
    a = Job(NAME, to_dict(cfg), {"budget": "smoke"}, config_hash(cfg), str(tmp_path / NAME))
    b = Job(NAME, to_dict(cfg), {"budget": "smoke", "draw": "1"}, config_hash(cfg), str(tmp_path / f"{NAME}.draw-1"))
    todo, same = _todo(Ledger(tmp_path / "results", package=checkout), [a, b])
    assert list(todo) == [NAME] and same == {NAME: [NAME, f"{NAME}.draw-1"]}
