"""The scripts in examples/ run, at their --smoke size."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(script, tmp_path):
    done = subprocess.run(
        [sys.executable, str(script), "--smoke"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
    assert not re.search(r"\bnan\b", done.stdout, re.I), done.stdout[-2000:]  # a number, or "not reached at this size"


def test_there_are_four_examples():
    assert len(EXAMPLES) == 4
