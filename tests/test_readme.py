"""The README's Python example runs as written, importing from ``inductionlab`` alone."""

import re
import shlex
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def readme_commands() -> list[list[str]]:
    """The argv (without ``inductionlab``) of each line of the README's command-line block, comments dropped."""
    block = README.read_text().split("## Command line", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split("#")[0])[1:] for line in block.splitlines() if line.startswith("inductionlab")]


def options(argv: list[str]) -> dict[str, str]:
    """``--name value`` pairs of one command (flags without a value map to "")."""
    pairs = {}
    for i, arg in enumerate(argv):
        if arg.startswith("--"):
            value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else ""
            pairs[arg] = value
    return pairs


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
    """Each `inductionlab ...` line of the README's command-line section, in order, with its preset set to smoke
    (a `--resume` as written: it reads the saved config; text data from the tests' own corpus, not a path on this
    machine)."""
    from inductionlab.cli import main

    commands = readme_commands()
    assert len(commands) >= 8
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        if "--data.path" in argv:
            i = argv.index("--data.path")
            del argv[i : i + 2]
        if argv[0] in ("run", "sweep") and "--resume" not in argv:
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


def test_a_readme_resume_continues_an_earlier_command_with_its_own_values():
    """`--resume` refuses values that differ from the saved run's, so a resumed command repeats none that differ
    from the command that wrote its `--out` (the test above rewrites presets to smoke and cannot see this)."""
    commands = readme_commands()
    resumes = [argv for argv in commands if "--resume" in argv]
    assert resumes
    for resume in resumes:
        out = options(resume)["--out"]
        first = next(argv for argv in commands if "--resume" not in argv and options(argv).get("--out") == out)
        assert commands.index(first) < commands.index(resume), f"{out} is resumed before it is written"
        repeated = {k: v for k, v in options(resume).items() if k not in ("--out", "--resume")}
        differing = {k: v for k, v in repeated.items() if options(first).get(k) != v}
        assert not differing, f"--resume of {out} sets {differing}, unlike the run it continues: {first}"
