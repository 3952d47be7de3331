"""A job's code closure (docs/conventions.md#provenance): measured by a static import graph, shown here unable to
miss a file that a run executes, and blind to edits that cannot change what runs."""

import textwrap

from inductionlab import experiments
from inductionlab.store import closure, key

LOCAL = ("<locals>", "<genexpr>", "<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<module>")


def _module_of(label: str) -> str:
    parts = label.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_closure_holds_every_file_a_run_executes(traced):
    """Every package or outside file with a function that ran inside an experiment's run is in its closure, or is
    bookkeeping and ran only the functions BOOKKEEPING names for it."""
    missed = []
    for name, calls in traced.items():
        files = key.experiment_closure(name).files
        for label, qualname in sorted(calls):
            if label in files:
                continue
            allowed = closure.BOOKKEEPING.get(_module_of(label))
            parts = {p for p in qualname.split(".") if p not in LOCAL}
            if allowed is None or not parts & allowed:
                missed.append(f"{name}: {label} {qualname}")
    assert not missed, "functions run outside the closure:\n" + "\n".join(missed)


def test_every_experiment_has_a_closure_and_the_trace_saw_it_run(traced):
    assert set(traced) == {e.name for e in experiments.BUILTIN}
    for name, calls in traced.items():
        files = key.experiment_closure(name).files
        assert any(label in files for label, _ in calls), name


def _package(tmp_path, files):
    root = tmp_path / "inductionlab"
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_the_graph_follows_each_kind_of_import_and_skips_type_checking_ones(tmp_path):
    root = _package(
        tmp_path,
        {
            "a.py": """
                from typing import TYPE_CHECKING
                import importlib
                from inductionlab import b
                from . import c
                import numpy
                if TYPE_CHECKING:
                    from inductionlab import never
                def later():
                    from inductionlab.pkg.d import thing
                    return importlib.import_module("inductionlab.e")
            """,
            "b.py": "",
            "c.py": "from pathlib import Path\nSOURCE = Path(__file__).with_name('k.c')\n",
            "k.c": "int f(void) { return 1; }\n",
            "pkg/__init__.py": "",
            "pkg/d.py": "thing = 1\n",
            "e.py": "import scipy.linalg\n",
            "never.py": "",
            "other.py": "",
        },
    )
    found = closure.of(["inductionlab.a"], root=root, stop=())
    names = {label.removeprefix("inductionlab/") for label in found.files}
    assert names == {"__init__.py", "a.py", "b.py", "c.py", "k.c", "pkg/__init__.py", "pkg/d.py", "e.py"}
    assert found.libraries == ("numpy", "scipy")
    stopped = closure.of(["inductionlab.a"], root=root, stop=("inductionlab.c",))
    assert "inductionlab/c.py" not in stopped.files and "inductionlab/k.c" not in stopped.files


def test_a_plugin_file_brings_its_neighbours_but_no_library(tmp_path):
    (tmp_path / "mine.py").write_text("import helper\nimport torch\nfrom inductionlab.rng import derive\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    found = closure.of([], [str(tmp_path / "mine.py")])
    assert str((tmp_path / "helper.py").resolve()) in found.files
    assert "inductionlab/rng.py" in found.files and "torch" in found.libraries


def test_a_docstring_comment_or_layout_edit_changes_no_digest_and_a_code_edit_does(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Doc."""\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n')
    first = closure.file_digest(path)
    path.write_text('"""Another doc."""\n\n\ndef f(x):\n    # a comment\n    return (\n        x + 1\n    )\n')
    assert closure.file_digest(path) == first
    path.write_text('"""Doc."""\n\ndef f(x):\n    return x + 2\n')
    assert closure.file_digest(path) != first
    c = tmp_path / "k.c"
    c.write_text("int f(void) { return 1; }\n")
    before = closure.file_digest(c)
    c.write_text("int f(void) { return 1; } /* a comment */\n")
    assert closure.file_digest(c) != before  # a C source by its bytes
