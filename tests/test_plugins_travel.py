"""Runs and sweeps remember their plug-in (docs/own_experiment.md#travel): config.json and sweep.json record it as
given and resolved, so that a later command without ``--plugin`` — ``report``, ``run --resume``, a sweep run again —
imports it; one that cannot be imported stops the command naming it.  ``--plugin`` goes anywhere on the line."""

import json
import shutil

import pytest

from inductionlab import experiments
from inductionlab.cli import main
from inductionlab.experiments import registry
from inductionlab.store import provenance
from tests.test_strict_plugins import COIN as STRICT_COIN

COIN = STRICT_COIN.replace("NAME", "coin")  # the same coin plug-in as the strict tests


def _new_command(monkeypatch):
    """What a new command knows: the toolkit's own experiments and no --plugin (the registry and the plug-in
    variables as a fresh process has them; the test's end restores them)."""
    monkeypatch.setenv(experiments.PLUGINS_ENV, "")
    monkeypatch.setenv(experiments.PLUGIN_ARGS_ENV, "")
    monkeypatch.setattr(registry, "REGISTRY", {e.name: e for e in experiments.BUILTIN})
    monkeypatch.setattr(registry, "_origin", {})
    monkeypatch.setattr(registry, "_loaded", set())
    monkeypatch.setattr(registry, "_plugin_of", {})


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A folder holding the plug-in ``a/coin.py``, the working directory of the commands."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "coin.py").write_text(COIN)
    monkeypatch.chdir(tmp_path)
    _new_command(monkeypatch)
    return tmp_path


def _run(*argv):
    return main([*argv, "--no-progress"] if argv[0] in ("run", "sweep") else list(argv))


def test_a_run_records_its_plugin_and_report_and_resume_find_it(here, monkeypatch, capsys):
    assert _run("run", "coin", "--preset", "smoke", "--out", "r", "--plugin", "a/coin.py") == 0  # after the name
    saved = json.loads((here / "r" / "config.json").read_text())
    resolved = str((here / "a" / "coin.py").resolve())
    assert saved == {
        "experiment": "coin",
        "seeds": [0],
        "p": 0.5,
        "plugins": [{"spec": "a/coin.py", "resolved": resolved}],
        "code": provenance.record("coin"),
    }

    _new_command(monkeypatch)
    capsys.readouterr()
    assert _run("report", "r") == 0 and "coin in r" in capsys.readouterr().out
    assert experiments.plugin_args() == saved["plugins"]  # worker processes would import it too

    (here / "r" / "summary.json").unlink()  # as if stopped before the end
    _new_command(monkeypatch)
    assert _run("run", "--out", "r", "--resume") == 0 and (here / "r" / "summary.json").exists()
    _new_command(monkeypatch)
    assert _run("run", "--config", "r/config.json", "--out", "r2") == 0  # the file's plug-in, recorded again
    assert json.loads((here / "r2" / "config.json").read_text()) == saved


def test_a_plugin_that_moved_is_named_and_given_anew(here, monkeypatch, capsys):
    assert _run("run", "--plugin=a/coin.py", "coin", "--preset", "smoke", "--out", "r") == 0  # between the words
    shutil.move(here / "a", here / "b")
    _new_command(monkeypatch)
    capsys.readouterr()
    assert _run("report", "r") == 2
    err = capsys.readouterr().err
    for word in ("r/config.json", "'coin'", "a/coin.py", "is gone", "--plugin"):
        assert word in err, (word, err)
    assert "Traceback" not in err and err.count("\n") == 1
    _new_command(monkeypatch)
    assert _run("report", "r", "--plugin", "b/coin.py") == 0  # the new place, after the directory


@pytest.mark.parametrize(
    "plugins, words",
    [
        (
            [{"spec": "no_such_coin_module", "resolved": "no_such_coin_module"}],
            ["no_such_coin_module", "ModuleNotFound"],
        ),
        (None, ["no plug-in is recorded", "--plugin"]),
    ],
    ids=["module-gone", "none-recorded"],
)
def test_a_recorded_plugin_that_cannot_be_imported_stops_report(here, monkeypatch, capsys, plugins, words):
    assert _run("--plugin", "a/coin.py", "run", "coin", "--preset", "smoke", "--out", "r") == 0
    saved = json.loads((here / "r" / "config.json").read_text())
    saved.pop("plugins")
    (here / "r" / "config.json").write_text(json.dumps({**saved, **({"plugins": plugins} if plugins else {})}))
    _new_command(monkeypatch)
    capsys.readouterr()
    assert _run("report", "r") == 2
    err = capsys.readouterr().err
    for word in ["r/config.json", "'coin'", *words]:
        assert word in err, (word, err)


def test_a_sweep_records_its_plugin_for_report_and_a_rerun(here, monkeypatch, capsys):
    argv = ["sweep", "coin", "--grid", "p=0.5,0.7", "--out", "s"]
    assert _run(*argv, "--plugin", "a/coin.py") == 0
    info = json.loads((here / "s" / "sweep.json").read_text())
    assert info["plugins"] == [{"spec": "a/coin.py", "resolved": str((here / "a" / "coin.py").resolve())}]
    assert all(json.loads(p.read_text())["plugins"] == info["plugins"] for p in here.glob("s/*/config.json"))
    _new_command(monkeypatch)
    capsys.readouterr()
    assert _run("report", "s") == 0 and "sweep_table.md" in capsys.readouterr().out
    _new_command(monkeypatch)
    assert _run(*argv) == 0  # the finished jobs are kept; no --plugin needed
    assert "2 finished runs" in capsys.readouterr().out


def test_a_toolkit_experiment_records_no_plugin():
    assert experiments.plugin_record("probe") == {}
