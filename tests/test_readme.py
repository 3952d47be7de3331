"""The README's Python example runs as written, importing from ``inductionlab`` alone."""

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_the_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    section = README.read_text().split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    imports = re.findall(r"^(?:from|import) (\S+)", code, re.M)
    assert set(imports) <= {"inductionlab", "torch"}, imports
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)
    assert (tmp_path / "runs" / "readme-l2r" / "summary.json").exists()
    lines = (tmp_path / "runs" / "readme-toy" / "evaluations.jsonl").read_text().count("\n")
    assert lines == ns["out"].metrics.groupby(["stage", "step"]).ngroups
    assert "T_III" in capsys.readouterr().out


def test_every_readme_command_runs_at_smoke_size(tmp_path, monkeypatch, capsys):
    """Each `inductionlab ...` line of the README's command-line section, with its preset set to smoke (text data
    from the tests' own corpus, not a path on this machine)."""
    import shlex

    from inductionlab.cli import main

    block = README.read_text().split("## Command line", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [shlex.split(line.split("#")[0]) for line in block.splitlines() if line.startswith("inductionlab")]
    assert len(commands) >= 8
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        argv = argv[1:]
        if "--data.path" in argv:
            i = argv.index("--data.path")
            del argv[i : i + 2]
        if argv[0] in ("run", "sweep"):
            if "--preset" in argv:
                argv[argv.index("--preset") + 1] = "smoke"
            else:
                argv += ["--preset", "smoke"]
            argv.append("--no-progress")
        if argv[0] == "reproduce":  # the whole smoke path runs in tests/test_reproduce.py; one paper here
            argv += ["--paper", "ren"]
        assert main(argv) == 0, argv
    assert (tmp_path / "sweeps" / "L" / "sweep_table.md").exists() and (
        tmp_path / "runs" / "a3" / "summary.json"
    ).exists()
