"""The package's layers point down: tasks → models → theory → train → analysis → monitor → experiments →
runner/sweep → cli, with the foundations (config, ops, plots, the run-directory format, process settings) below
them all.  A module may import its own layer or any layer below, never one above; imports form no cycle; experiments
stand in paper wings (``experiments/wang``, ``chen``, ``ren``, ``across``): no wing imports another, no experiment
imports another (what two of a wing share lives in its ``_shared`` module), and the floor of the experiments
(``experiment``, ``registry``) imports no wing."""

import ast
from pathlib import Path

import inductionlab

SRC = Path(inductionlab.__file__).parent
SHARED_FILES = {"__init__", "configs", "experiment", "registry"}
LAYERS = [
    {
        "_version",
        "_runtime",
        "config",
        "environ",
        "keys",
        "native",
        "ops",
        "paths",
        "plots",
        "provenance",
        "rng",
        "runs",
        "timing",
        "uniforms",
    },
    {"tasks"},
    {"models"},
    {"theory"},
    {"train"},
    {"analysis"},
    {"monitor"},
    {"experiments"},
    {"runner", "sweep", "sweep_report", "claims_report", "reproduce", "loading"},
    {"cli", "cli_errors", "cli_parse", "cli_plugins", "cli_report", "__main__", "__init__"},
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


WINGS = ("wang", "chen", "ren", "across")  # experiments/<wing>/: one paper's experiments, or those across papers
FLOOR = {"experiments.experiment", "experiments.registry", "experiments.configs"}  # what every experiment may import


def _experiment_units() -> dict[str, str]:
    """{module: the experiment it belongs to} for every module of a wing but its ``__init__`` and ``_shared``: an
    experiment is a module ``experiments.<wing>.<name>`` or a package of that name with its companions."""
    units = {}
    for module in _graph():
        parts = module.split(".")
        if parts[0] == "experiments" and len(parts) >= 3 and parts[1] in WINGS and not parts[2].startswith("_"):
            units[module] = ".".join(parts[:3])
    return units


def _wing_violations(graph: dict[str, set[str]], units: dict[str, str]) -> list[str]:
    """What breaks the wings' rules: a wing importing another wing; an experiment importing another experiment (its
    own companions, its wing's ``_shared`` and the floor are allowed); a ``_shared`` importing an experiment; the
    floor (``experiment``, ``registry``) importing a wing."""
    bad = []
    for module, imports in graph.items():
        parts = module.split(".")
        wing = parts[1] if parts[0] == "experiments" and len(parts) >= 2 and parts[1] in WINGS else None
        for i in sorted(x for x in imports if x.startswith("experiments.") and x not in FLOOR):
            target = i.split(".")
            if module in FLOOR:
                bad.append(f"{module} (the floor) imports the wing module {i}")
            elif wing and target[1] != wing:
                bad.append(f"{module} (wing {wing}) imports {i} of another wing")
            elif module in units and i in units and units[i] != units[module]:
                bad.append(f"{module} imports the experiment {units[i]}; share code through experiments.{wing}._shared")
            elif module.endswith("._shared") and i in units:
                bad.append(f"{module} imports the experiment {units[i]}; a wing's _shared serves its experiments")
    return bad


def test_no_wing_imports_another_and_no_experiment_imports_another():
    from inductionlab import experiments

    graph, units = _graph(), _experiment_units()
    assert not _wing_violations(graph, units), "\n".join(_wing_violations(graph, units))
    roots = set(units.values())
    missing = [r for r in roots if "\nEXPERIMENT = " not in _source(r)]
    assert not missing, f"experiments that define no EXPERIMENT: {missing}"
    assert roots == {e.run.__module__.removeprefix("inductionlab.") for e in experiments.BUILTIN}
    flat = [p.name for p in (SRC / "experiments").glob("*.py") if p.stem not in SHARED_FILES]
    assert not flat, f"experiment modules outside a wing: {flat}"


def test_a_wing_shared_module_serves_two_experiments_or_more():
    """A ``_shared`` module that one experiment imports belongs in that experiment's package."""
    graph, units = _graph(), _experiment_units()
    for wing in WINGS:
        users = {units[m] for m, imports in graph.items() if m in units and f"experiments.{wing}._shared" in imports}
        if (SRC / "experiments" / wing / "_shared.py").exists():
            assert len(users) >= 2, f"experiments.{wing}._shared serves {sorted(users)} only"


def test_the_checker_sees_a_wing_importing_another():
    graph = {
        "experiments.chen.markov_x": {"experiments.wang._shared"},
        "experiments.wang.a": {"experiments.wang.b", "experiments.wang._shared", "experiments.registry"},
        "experiments.wang.b.part": {"experiments.wang.b.other"},
        "experiments.registry": {"experiments.wang"},
    }
    units = {
        "experiments.chen.markov_x": "experiments.chen.markov_x",
        "experiments.wang.a": "experiments.wang.a",
        "experiments.wang.b": "experiments.wang.b",
        "experiments.wang.b.part": "experiments.wang.b",
        "experiments.wang.b.other": "experiments.wang.b",
    }
    found = _wing_violations(graph, units)
    assert any("another wing" in v for v in found) and any(
        "imports the experiment experiments.wang.b" in v for v in found
    )
    assert any("the floor" in v for v in found) and len(found) == 3  # a package's companions are its own


def _source(unit: str) -> str:
    base = SRC / Path(*unit.split("."))
    return (base / "__init__.py" if base.is_dir() else base.with_suffix(".py")).read_text()


def test_the_checker_sees_an_upward_import(tmp_path):
    """The checker itself: a models file importing train is caught."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from inductionlab.train import loop\n")
    assert _imports(fake) == {"train.loop"} and _layer("train.loop") > _layer("models.toy")
