"""A plug-in never ends or bends a command unseen: one that exits, fails, defines an ``EXPERIMENT`` that is none,
or takes a name already held (another plug-in's, the toolkit's own) stops the command with exit 2 and one line
naming the file and what it did, before any run directory exists; a ``--plugin`` path is one path, commas and
colons included, and ``$INDUCTIONLAB_PLUGINS`` splits on ``os.pathsep`` only."""

import os
import subprocess
import sys
import textwrap

import pytest

from inductionlab import experiments
from inductionlab.cli import main
from inductionlab.experiments import registry

COIN = textwrap.dedent(
    """
    from dataclasses import dataclass

    import pandas as pd

    import inductionlab as il


    @dataclass(frozen=True)
    class Config:
        seeds: tuple[int, ...] = (0,)
        p: float = 0.5


    def run(cfg, ctx):
        return il.Results({"metrics": pd.DataFrame({"seed": [0], "heads": [cfg.p]})}, {"heads": cfg.p})


    EXPERIMENT = il.Experiment(name="NAME", description="a coin", config=Config(), presets={"smoke": {}}, run=run)
    """
)


@pytest.fixture(autouse=True)
def isolated(monkeypatch):
    """No plug-in of one test reaches another: the plug-in variables, the registry and the loaded set restored."""
    monkeypatch.setenv(experiments.PLUGINS_ENV, "")
    monkeypatch.setenv(experiments.PLUGIN_ARGS_ENV, "")
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    monkeypatch.setattr(registry, "_origin", dict(registry._origin))
    monkeypatch.setattr(registry, "_loaded", set(registry._loaded))


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


FILES = {  # case → {file: its text}; the command loads each with --plugin, in this order
    "exit-0": {"x.py": "import sys\nsys.exit(0)\n"},
    "exit-message": {"bye.py": "import sys\nsys.exit('bye')\n"},
    "raises": {"boom.py": "raise RuntimeError('boom at import')\n"},
    "experiment-int": {"num.py": "EXPERIMENT = 42\n"},
    "experiment-str": {"word.py": "EXPERIMENT = 'coin'\n"},
    "two-files-one-name": {"first.py": COIN.replace("NAME", "coin"), "second.py": COIN.replace("NAME", "coin")},
    "builtin-name": {"clash.py": COIN.replace("NAME", "probe")},
    "builtin-name-registered": {"reg.py": COIN.replace("NAME", "probe") + "il.register_experiment(EXPERIMENT)\n"},
    "missing-file": {},
}
CASES = [  # (case, extra --plugin values, words the message must hold)
    ("exit-0", [], ["x.py", "ended the process", "sys.exit(0)"]),
    ("exit-message", [], ["bye.py", "sys.exit('bye')"]),
    ("raises", [], ["boom.py", "RuntimeError", "boom at import"]),
    ("experiment-int", [], ["num.py", "EXPERIMENT", "int", "42"]),
    ("experiment-str", [], ["word.py", "EXPERIMENT", "str"]),
    ("two-files-one-name", [], ["'coin'", "first.py", "second.py"]),
    ("builtin-name", [], ["'probe'", "clash.py", "toolkit's own"]),
    ("builtin-name-registered", [], ["'probe'", "reg.py", "toolkit's own"]),
    ("missing-file", ["{tmp}/nothere.py"], ["--plugin", "nothere.py", "no such file"]),
]


@pytest.mark.parametrize("case, extra, words", CASES, ids=[c[0] for c in CASES])
def test_a_bad_plugin_stops_the_command_naming_the_file(case, extra, words, tmp_path, capsys):
    paths = [str(_write(tmp_path / name, text)) for name, text in FILES[case].items()]
    paths += [e.replace("{tmp}", str(tmp_path)) for e in extra]
    out = tmp_path / "o"
    argv = [a for p in paths for a in ("--plugin", p)] + ["run", "probe", "--preset", "smoke", "--out", str(out)]
    assert main(argv) == 2, case
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 2, err
    for word in words:
        assert word in err, (case, word, err)
    assert not out.exists()  # refused before any work: no run directory


def test_a_plugin_that_exits_is_refused_by_the_installed_command(tmp_path):
    plugin = _write(tmp_path / "x.py", "import sys\nsys.exit(0)\n")
    env = {k: v for k, v in os.environ.items() if k not in (experiments.PLUGINS_ENV, experiments.PLUGIN_ARGS_ENV)}
    argv = ["--plugin", str(plugin), "run", "probe", "--preset", "smoke", "--out", str(tmp_path / "o")]
    done = subprocess.run(
        [sys.executable, "-m", "inductionlab", *argv], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 2, done.stderr
    assert "x.py" in done.stderr and "sys.exit(0)" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()


PATHS = ["dir/a,b.py", "d:x/c.py", "sp ace,/e:f,g.py"]


@pytest.mark.parametrize("relative", PATHS, ids=["comma", "colon", "both"])
def test_a_plugin_path_is_never_split(relative, tmp_path, capsys):
    name = f"coin-{PATHS.index(relative)}"
    plugin = _write(tmp_path / relative, COIN.replace("NAME", name))
    assert main(["--plugin", str(plugin), "list", "--keys", name]) == 0, capsys.readouterr().err
    assert "--p 0.5" in capsys.readouterr().out


def test_two_plugins_by_repeating_the_option_and_the_variable_split_on_pathsep(tmp_path, monkeypatch, capsys):
    a, b, c = (_write(tmp_path / f"m,{k}.py", COIN.replace("NAME", f"coin-{k}")) for k in "abc")
    monkeypatch.setenv(experiments.PLUGINS_ENV, f"{a}{os.pathsep}{b}")
    assert main(["--plugin", str(c), "list"]) == 0, capsys.readouterr().err
    listed = capsys.readouterr().out
    assert all(f"coin-{k}" in listed for k in "abc"), listed


def test_a_plugin_loaded_twice_from_one_file_is_one_registration(tmp_path, capsys):
    plugin = _write(tmp_path / "coin.py", COIN.replace("NAME", "coin-once") + "il.register_experiment(EXPERIMENT)\n")
    argv = ["--plugin", str(plugin), "--plugin", str(plugin), "run", "coin-once", "--out", str(tmp_path / "o")]
    assert main([*argv, "--no-progress"]) == 0, capsys.readouterr().err
    assert (tmp_path / "o" / "summary.json").exists()
