"""The repository's size budgets (docs/conventions.md): every module of ``src/inductionlab`` is at most 400 lines
and every function or method at most 60, measured as the before-stop check measures them (a file's
``splitlines()``; a function from its ``def`` line to its last line, ``end_lineno - lineno + 1``)."""

import ast
from pathlib import Path

import inductionlab

SRC = Path(inductionlab.__file__).parent
FILE_LINES, FUNCTION_LINES = 400, 60


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))  # globbed, not listed: modules move between packages


def _where(path: Path, line: int | None = None) -> str:
    name = path.relative_to(SRC.parents[1])  # src/inductionlab/...
    return f"{name}:{line}" if line else str(name)


def test_every_module_is_at_most_400_lines():
    over = []
    for path in _modules():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > FILE_LINES:
            over.append(f"{_where(path)} ({n} lines)")
    assert not over, f"modules over {FILE_LINES} lines (split by responsibility):\n  " + "\n  ".join(over)


def test_every_function_is_at_most_60_lines():
    over = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    over.append(f"{_where(path, node.lineno)} {node.name} ({length} lines)")
    assert not over, f"functions over {FUNCTION_LINES} lines (extract the steps):\n  " + "\n  ".join(over)
