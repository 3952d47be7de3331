"""One way to ask for an optional package (docs/conventions.md#extras): no module of ``src/`` imports one but
:mod:`inductionlab.extras`, whose table is pyproject.toml's extras; a version outside its range, or a package that
fails to import, is told apart from one not installed; every example names the extras it needs.  What each command
does without an extra: tests/test_extras_missing.py."""

import ast
import pickle
import re
import sys
import textwrap
import tomllib
import types
from pathlib import Path

import pytest

from inductionlab import extras
from inductionlab.extras import BROUGHT_BY, PACKAGES, MissingExtra, require

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src" / "inductionlab"


def _optional(name: str) -> bool:
    return name.split(".")[0] in PACKAGES or any(name == m or name.startswith(f"{m}.") for m in BROUGHT_BY)


def _importer(func: ast.expr) -> bool:
    """``importlib.import_module``, ``import_module`` or ``__import__``."""
    named = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return named in ("import_module", "__import__")


def optional_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of an optional package in ``source``: ``import``, ``from … import`` and
    ``importlib.import_module`` or ``__import__`` of a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [
                node.module,
                *(f"{node.module}.{a.name}" for a in node.names),
            ]  # from torch.utils import tensorboard
        elif isinstance(node, ast.Call) and _importer(node.func) and node.args:
            first = node.args[0]
            names = [first.value] if isinstance(first, ast.Constant) and isinstance(first.value, str) else []
        found += sorted({(node.lineno, n) for n in names if _optional(n)})
    return found


def test_no_module_but_the_helper_imports_an_optional_package():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted(SRC.rglob("*.py"))
        if path != SRC / "extras.py"
        for line, name in optional_imports(path.read_text())
    ]
    assert not found, "import these through inductionlab.extras.require:\n" + "\n".join(found)


def test_the_checker_sees_each_form_of_import():
    planted = textwrap.dedent(
        """
        import importlib, json
        import transformers.models.auto
        from torch.utils import tensorboard
        from torch.utils.tensorboard import SummaryWriter
        from lightning.pytorch import Callback
        from inductionlab.extras import require
        importlib.import_module("devinterp.slt.llc")
        __import__("wandb")
        importlib.import_module(name)
        """
    )
    assert [name for _, name in optional_imports(planted)] == [
        "transformers.models.auto",
        "torch.utils.tensorboard",
        "torch.utils.tensorboard",
        "torch.utils.tensorboard.SummaryWriter",
        "lightning.pytorch",
        "lightning.pytorch.Callback",
        "devinterp.slt.llc",
        "wandb",
    ]


def test_the_table_is_pyproject_tomls_extras():
    stated = {}
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, requirements in optional.items():
        if extra in ("test", "notebook"):  # the test suite's tools and JupyterLab: nothing in src/ imports them
            continue
        for requirement in requirements:
            dist, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", requirement).groups()
            stated[dist.lower()] = (extra, spec.replace(" ", ""))
    assert {dist: (extra, spec) for dist, extra, spec in PACKAGES.values()} == stated
    assert all(name.replace("_", "-") == dist for name, (dist, _, _) in PACKAGES.items())
    assert set(BROUGHT_BY.values()) <= set(PACKAGES)


def test_a_version_outside_pyprojects_range_is_refused(monkeypatch):
    for name, version in (("wandb", "0.15.9"), ("transformer_lens", "4.0.0")):
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(__version__=version))
    dist_range = r"wandb 0\.15\.9 is installed and the toolkit needs wandb>=0\.16: pip install 'inductionlab\[log\]'"
    with pytest.raises(MissingExtra, match=rf"^--log\.wandb needs wandb \(the log extra\), but {dist_range}"):
        require("wandb", "--log.wandb")
    with pytest.raises(MissingExtra, match=r"transformer-lens 4\.0\.0 is installed .* transformer-lens>=3\.9,<4"):
        require("transformer_lens", "to_hooked_transformer")
    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(__version__="0.16.0rc1"))
    assert require("wandb", "--log.wandb") is sys.modules["wandb"]
    assert extras.release("4.57.0.dev0") == (4, 57, 0) and extras.release("2.14rc1") == (2, 14)


def test_the_error_crosses_processes_whole():
    err = pickle.loads(pickle.dumps(MissingExtra("watch --llc needs devinterp", "devinterp", "llc")))
    assert isinstance(err, ImportError) and (str(err), err.package, err.extra) == (
        "watch --llc needs devinterp",
        "devinterp",
        "llc",
    )


def test_the_command_is_the_editable_one_in_a_source_checkout(monkeypatch):
    monkeypatch.setattr(extras, "source_checkout", lambda: None)
    assert extras.install_command("hf") == "pip install 'inductionlab[hf]'"
    monkeypatch.setattr(extras, "source_checkout", lambda: ROOT)
    assert (
        extras.install_command("hf")
        == f"pip install 'inductionlab[hf]' (in the source checkout {ROOT}: pip install -e '.[hf]')"
    )
    with pytest.raises(ValueError, match="no optional package"):
        require("numpy", "anything")


class _Broken:
    """A finder for which ``nnsight`` is present but fails to import, and ``datasets`` is absent."""

    def find_spec(self, name, path=None, target=None):
        if name == "nnsight":
            raise ImportError("libcuda.so.1: cannot open shared object file")
        if name == "datasets":
            raise ModuleNotFoundError("No module named 'datasets'", name="datasets")
        return None


def test_a_package_that_fails_to_import_is_told_apart_from_one_not_installed(monkeypatch):
    for name in ("nnsight", "datasets"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Broken(), *sys.meta_path])
    broken = (
        r"^nnsight_adapter needs nnsight \(the nnsight extra\), but nnsight cannot be imported \(ImportError: libcuda"
    )
    with pytest.raises(MissingExtra, match=broken):
        require("nnsight", "nnsight_adapter")
    with pytest.raises(
        MissingExtra,
        match=r"^the LLC needs datasets \(the llc extra installs it with devinterp\), which is not installed",
    ):
        require("datasets", "the LLC")


EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_every_example_names_the_extras_it_needs():
    """The first lines of each example's docstring (a paragraph ``Extras: ...``) name the extras whose packages it
    imports, or say none; the Trainer example needs hf and log (its TensorBoard reporting)."""
    known = {extra for _, extra, _ in PACKAGES.values()}
    named = {}
    for path in EXAMPLES:
        source = path.read_text()
        doc = ast.get_docstring(ast.parse(source)) or ""
        paragraph = next((p for p in doc.split("\n\n")[:4] if p.startswith("Extras:")), "")
        assert paragraph, f"{path.name}: no paragraph 'Extras: ...' in the first lines of its docstring"
        named[path.stem] = {w for w in re.findall(r"``(\w+)``", paragraph) if w in known}
        assert named[path.stem] or paragraph.startswith("Extras: none"), paragraph
        asked = {n for _, n in optional_imports(source)} | set(re.findall(r"\brequire\(\"([\w.]+)\"", source))
        used = {PACKAGES[extras._package(n)][1] for n in asked}
        assert used <= named[path.stem], f"{path.name} imports packages of the extras {used - named[path.stem]}"
    assert {"hf", "log"} <= named["hf_trainer_monitor"]
