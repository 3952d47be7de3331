"""A job's code closure (docs/conventions.md#provenance): exactly the source files whose code produces its
measurements, found by a static import graph, and their digest.

From the modules that define an experiment (its ``run`` and its config class) the graph follows every import,
transitively: ``import a.b``, ``from a import b`` (``a.b`` when it is a module), relative imports, and
``importlib.import_module("a.b")`` with a literal name; imports under ``if TYPE_CHECKING:`` are skipped, since
they never run.  Importing a module runs its parent packages' ``__init__.py``, so those are in too.  A module of
the package, or a ``.py`` file outside site-packages and the standard library (a plug-in's own file and what it
imports beside it), is a node; any other top-level name is a library, whose version joins the key
(:mod:`~inductionlab.store.key`), and so is an optional package a node names for
:func:`inductionlab.extras.require`.  A node that names a sibling ``*.c`` file (``Path(__file__).with_name("x.c")``,
the native kernels) adds that source.

Not in it: the modules of :data:`BOOKKEEPING`, whose whole effect on a run is its resolved config (which the key
holds) or the files of its run directory; the graph stops there.  ``tests/store/test_closure.py`` runs every
experiment and fails when a function of a package file outside its closure runs, other than those
:data:`BOOKKEEPING` names.

A ``.py`` file's digest is that of its syntax tree without docstrings (``ast.dump``: no comments, layout or line
numbers), so an edit that cannot change what runs — a docstring, a comment, a re-wrapped line — changes no key; a
C source's digest is that of its bytes.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from inductionlab import extras

PACKAGE = Path(__file__).resolve().parents[1]  # src/inductionlab
NAME = PACKAGE.name

# module → its functions that a run may call: each does no more than validate the config, say where the run's
# files go, write them, time the run or draw a figure; anything else of theirs a run calls is in no closure,
# which the closure test refuses (docs/conventions.md#provenance)
BOOKKEEPING: dict[str, frozenset[str]] = {
    f"{NAME}.config": frozenset(
        {"require", "check_seeds", "check_device", "check_rate", "check_memory", "check_schedule", "set_here"}
        | {"_in_section", "human_bytes", "to_dict", "flatten", "config_hash", "ConfigError"}
    ),
    f"{NAME}.runs": frozenset(
        {"Results", "RunContext", "checkpoint", "kept", "child", "write_json", "write_text", "write_parquet"}
        | {"atomic_write", "_umask", "jsonable", "read_json", "save_checkpoint", "load_checkpoint", "RunFileError"}
    ),
    f"{NAME}.experiments.experiment": frozenset({"op_elements"}),
    f"{NAME}.environ": frozenset({"flag", "count", "compiler"}),
    f"{NAME}.paths": frozenset({"what_is"}),
    f"{NAME}.timing": frozenset({"section", "timed", "_stack", "wrapper", "record"}),
    f"{NAME}.plots": frozenset(),
}


# in every closure: the runner records a run's summary through it, so what it does is what the claims read
ALWAYS = (f"{NAME}.record",)


@dataclass(frozen=True)
class Closure:
    """The files of a closure by label (``inductionlab/models/toy.py``, or an outside file's absolute path) with
    their digests, and the libraries it imports (top-level module names)."""

    files: Mapping[str, str]
    libraries: tuple[str, ...]

    @property
    def digest(self) -> str:
        """The first 16 hex digits of the SHA-256 over the files' labels and digests, in label order."""
        h = hashlib.sha256()
        for label in sorted(self.files):
            h.update(f"{label}\0{self.files[label]}\0".encode())
        return h.hexdigest()[:16]


def file_digest(path: Path, tree: ast.Module | None = None) -> str:
    """A ``.py`` file's syntax tree without docstrings (``tree``: its parsed tree, which this changes), or another
    file's bytes, as 16 hex digits of SHA-256."""
    if Path(path).suffix != ".py":
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    tree = tree or ast.parse(Path(path).read_bytes(), filename=str(path))
    return hashlib.sha256(ast.dump(_without_docstrings(tree), annotate_fields=False).encode()).hexdigest()[:16]


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def of(
    modules: Iterable[str], files: Iterable[str] = (), root: Path = PACKAGE, stop: Iterable[str] = BOOKKEEPING
) -> Closure:
    """The closure of the package modules ``modules`` (dotted names) and the outside ``.py`` ``files`` (a plug-in's
    own), the package as found under ``root`` (a test points it at a scratch copy)."""
    paths = [Path(f).resolve() for f in files]
    graph = _Graph(Path(root), frozenset(stop), tuple(p.parent for p in paths))
    return _walk(graph, [*modules, *paths])


@functools.cache
def of_experiment_modules(modules: tuple[str, ...], files: tuple[str, ...], stamps: tuple = ()) -> Closure:
    """:func:`of` in this package, once per process and ``stamps`` (the versions of ``files``)."""
    return of(modules, files)


class _Graph:
    """Resolves import names to nodes: a package module's dotted name, or an outside file's path."""

    def __init__(self, root: Path, stop: frozenset[str], beside: tuple[Path, ...] = ()) -> None:
        self.root, self.stop = root, stop
        paths = sysconfig.get_paths()
        skip = {Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
        self.search = [*beside, *(p for p in map(_resolved, sys.path) if p and p.is_dir() and p not in skip)]
        self.search = [p for p in self.search if not any(s in p.parents or s == p for s in skip)]

    def file_of(self, node: str | Path) -> Path | None:
        if isinstance(node, Path):
            return node
        parts = node.split(".")
        if parts[0] != NAME:
            return None
        base = self.root.joinpath(*parts[1:])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def label(self, node: str | Path) -> str:
        path = self.file_of(node)
        assert path is not None
        inside = path.resolve().is_relative_to(self.root.resolve())
        return f"{NAME}/{path.resolve().relative_to(self.root.resolve()).as_posix()}" if inside else str(path)

    def outside(self, name: str) -> Path | None:
        """An outside module's file on the search path (a plug-in's neighbour), None for a library."""
        parts = name.split(".")
        for base in self.search:
            for candidate in (base.joinpath(*parts) / "__init__.py", base.joinpath(*parts).with_suffix(".py")):
                if candidate.is_file():
                    return candidate.resolve()
        return None


def _resolved(entry: str) -> Path | None:
    try:
        return Path(entry or ".").resolve()
    except OSError:
        return None


def _walk(graph: _Graph, start: list[str | Path]) -> Closure:
    seen: set[str | Path] = set()
    libraries: set[str] = set()
    files: dict[str, str] = {}
    todo = list(start)
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        path = graph.file_of(node)
        if path is None:
            libraries.add(str(node).split(".")[0])
            continue
        if isinstance(node, str):
            todo += _parents(node)
            if node in graph.stop:
                continue  # bookkeeping: out of the closure (its parents are in)
        stat = path.stat()
        digest, imported, c_files, optional = _read(path, _package_of(node, path), stat.st_mtime_ns, stat.st_size)
        files.update({graph.label(c_file): file_digest(c_file) for c_file in c_files})
        libraries.update(optional)
        todo += _resolve(graph, imported, libraries)
        files[graph.label(node)] = digest
    return Closure(files, tuple(sorted(libraries - {NAME})))


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@functools.lru_cache(maxsize=4096)
def _read(
    path: Path, package: str, mtime_ns: int, size: int
) -> tuple[str, tuple[tuple[str, str], ...], list[Path], set[str]]:
    """A module file's digest, imports, C sources and the optional packages it names (imported by name through
    :func:`inductionlab.extras.require`), once per version of the file (``mtime_ns``, ``size``)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    optional = {n.split(".")[0] for n in names if n.split(".")[0] in extras.PACKAGES}
    optional |= {extras.BROUGHT_BY[n] for n in names if n in extras.BROUGHT_BY}
    return file_digest(path, tree), tuple(_imported(tree, package)), _c_sources(names, path), optional


def _resolve(graph: _Graph, imported: Iterable[tuple[str, str]], libraries: set[str]) -> list[str | Path]:
    """The nodes that the imports ``imported`` name; libraries go to ``libraries``, the standard library nowhere."""
    out: list[str | Path] = []
    for name, member in imported:
        top = name.split(".")[0]
        if top == NAME:
            sub = f"{name}.{member}" if member else ""
            out += [name] + ([sub] if sub and graph.file_of(sub) else [])
        elif top in sys.stdlib_module_names or top == "__future__":
            continue
        elif (found := graph.outside(f"{name}.{member}" if member else name) or graph.outside(name)) is not None:
            out.append(found)
        else:
            libraries.add(top)
    return out


def _package_of(node: str | Path, path: Path) -> str:
    if isinstance(node, Path):
        return ""
    return node if path.name == "__init__.py" else node.rpartition(".")[0]


def _imported(tree: ast.Module, package: str) -> list[tuple[str, str]]:
    """(module, member) for every import in ``tree`` outside ``if TYPE_CHECKING:`` blocks: member "" for
    ``import a.b``, each name for ``from a import b``."""
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((a.name, "") for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            found.extend((base, a.name) for a in node.names if a.name != "*")
            found.append((base, ""))
        elif isinstance(node, ast.Call) and _literal_import(node):
            found.append((node.args[0].value, ""))  # type: ignore[attr-defined]
        for inner in ast.iter_child_nodes(node):
            visit(inner)

    visit(tree)
    return found


def _absolute(module: str, level: int, package: str) -> str:
    if not level:
        return module
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - level + 1])
    return f"{base}.{module}" if module else base


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _literal_import(call: ast.Call) -> bool:
    fn = call.func
    named = (isinstance(fn, ast.Attribute) and fn.attr == "import_module") or (
        isinstance(fn, ast.Name) and fn.id in ("import_module", "__import__")
    )
    return named and bool(call.args) and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)


def _c_sources(names: set[str], path: Path) -> list[Path]:
    """The sibling C sources among the strings ``names`` of a module (its native kernels)."""
    return sorted(path.with_name(n) for n in names if n.endswith(".c") and "/" not in n and path.with_name(n).is_file())


def find_spec_file(module: str) -> Path | None:
    """The source file of an importable module, without importing it when it is already loaded."""
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    if file:
        return Path(file).resolve()
    spec = importlib.util.find_spec(module)
    return Path(spec.origin).resolve() if spec and spec.origin and spec.origin.endswith(".py") else None
