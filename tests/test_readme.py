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
