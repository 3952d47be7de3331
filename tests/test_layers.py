"""The package's layers point down: tasks → models → theory → train → analysis → monitor → experiments →
runner/sweep → cli, with the foundations (config, ops, plots, the run-directory format, process settings) below
them all.  A module may import its own layer or any layer below, never one above; imports form no cycle; and no
experiment imports another experiment (what two share lives in an ``experiments/*_common.py`` module)."""

import ast
from pathlib import Path

import inductionlab

SRC = Path(inductionlab.__file__).parent
SHARED = {"experiments.experiment"}  # the Experiment dataclass every experiment builds
SHARED_FILES = {"__init__", "experiment"}
LAYERS = [
    {"_version", "_runtime", "config", "keys", "ops", "plots", "rng", "runs", "timing"},
    {"tasks"},
    {"models"},
    {"theory"},
    {"train"},
    {"analysis"},
    {"monitor"},
    {"experiments"},
    {"runner", "sweep", "sweep_report", "claims_report", "reproduce", "loading"},
    {"cli", "cli_errors", "cli_plugins", "cli_report", "__main__", "__init__"},
]


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__") or "__init__"


def _imports(path: Path) -> set[str]:
    """Every inductionlab module imported anywhere in the file (top level or inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("inductionlab"):
            base = node.module.removeprefix("inductionlab").lstrip(".")
            for alias in node.names:  # `from inductionlab.train import loop` imports the module train.loop
                sub = f"{base}.{alias.name}" if base else alias.name
                out.add(
                    sub
                    if (SRC / Path(*sub.split("."))).with_suffix(".py").exists()
                    or (SRC / Path(*sub.split("."))).is_dir()
                    else base or "__init__"
                )
        elif isinstance(node, ast.Import):
            out |= {a.name.removeprefix("inductionlab.") for a in node.names if a.name.startswith("inductionlab.")}
    return out


def _layer(module: str) -> int:
    top = module.split(".")[0]
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) for p in SRC.rglob("*.py")}


def test_every_module_has_a_layer():
    for module in _graph():
        _layer(module)  # StopIteration names a module outside the list


def test_imports_point_down_only():
    upward = [(m, i) for m, imports in _graph().items() for i in imports if m != "__init__" and _layer(i) > _layer(m)]
    assert not upward, f"imports that point up a layer: {upward}"


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError(f"import cycle: {' -> '.join(path + [node, nxt])}")
            if nxt in graph and not state.get(nxt):
                visit(nxt, path + [node])
        state[node] = 2

    for node in graph:
        if not state.get(node):
            visit(node, [])


def test_no_experiment_imports_another():
    from inductionlab import experiments

    files = [
        p for p in (SRC / "experiments").glob("*.py") if p.stem not in SHARED_FILES and not p.stem.endswith("_common")
    ]
    missing = [p.name for p in files if "\nEXPERIMENT = " not in p.read_text()]
    assert not missing, f"experiment files that define no EXPERIMENT: {missing}"
    registered = {f"experiments.{p.stem}" for p in files}
    assert registered == {e.run.__module__.removeprefix("inductionlab.") for e in experiments.BUILTIN}
    for module, imports in _graph().items():
        if module in registered:
            others = {
                i for i in imports if i.startswith("experiments.") and i not in SHARED and not i.endswith("_common")
            }
            assert not others, f"{module} imports the experiment(s) {others}; share code through a *_common module"


def test_the_checker_sees_an_upward_import(tmp_path):
    """The checker itself: a models file importing train is caught."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from inductionlab.train import loop\n")
    assert _imports(fake) == {"train.loop"} and _layer("train.loop") > _layer("models.toy")
