"""Every failure labelled *a finding about the paper* carries its evidence (docs/conventions.md#findings): the
paper's sentence, the in-regime run, and an independent re-implementation under ``tests/findings/`` that imports
nothing of the toolkit and tests something."""

import ast
from pathlib import Path

import pytest

from inductionlab import experiments
from inductionlab.analysis.claims import FINDING

ROOT = Path(__file__).parents[1]
FINDINGS = sorted((ROOT / "tests" / "findings").glob("test_*.py"))
CLAIMS = [c for e in experiments.REGISTRY.values() for c in e.claims]
WITH_EVIDENCE = [c for c in CLAIMS if c.evidence is not None]


def _imports(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0] if node.level == 0 else ".")
    return names


@pytest.mark.parametrize("claim", WITH_EVIDENCE, ids=lambda c: c.id)
def test_a_finding_names_an_independent_reimplementation_that_tests_the_number(claim):
    assert claim.kind == FINDING
    path = ROOT / claim.evidence.reimplementation
    assert path.is_file(), f"{claim.id}: {claim.evidence.reimplementation} is missing"
    text = path.read_text()
    tree = ast.parse(text)
    imported = _imports(tree)
    assert "inductionlab" not in imported and "." not in imported, f"{path.name} imports {imported}: not independent"
    assert imported <= {"math", "numpy", "torch", "scipy", "pytest", "itertools", "functools", "dataclasses"}
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    assert tests and any(isinstance(n, ast.Assert) for t in tests for n in ast.walk(t)), f"{path.name} asserts nothing"
    assert len(text.splitlines()) <= 200, f"{path.name}: a minimal re-implementation, ~150 lines"
    sentence = claim.evidence.sentence
    assert any(sentence.count(q) >= 2 for q in ('"', "'")) or "“" in sentence, "quote the paper's sentence"


def test_every_reimplementation_backs_a_registered_finding():
    named = {c.evidence.reimplementation for c in WITH_EVIDENCE}
    orphans = [p.name for p in FINDINGS if f"tests/findings/{p.name}" not in named]
    assert not orphans, f"re-implementations that no finding names: {orphans}"
