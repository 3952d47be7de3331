"""The package's layers point down: tasks → models → theory → train → analysis → monitor → experiments →
runner/sweep → cli, with the foundations (config, ops, plots, the run-directory format, process settings, the
optional packages) below them all.  A module may import its own layer or any layer below, never one above; imports
form no cycle; experiments stand in paper wings (``experiments/wang``, ``chen``, ``ren``, ``across``): no wing imports
another, no experiment imports another (what two of a wing share lives in its ``_shared`` module), an experiment's
claims module (``experiments/<wing>/claims/<name>``) is its own and no run code imports one, and the floor of the
experiments (``experiment``, ``registry``, ``configs``) imports no wing.  What a toolkit run imports (its static
closure) holds none of the claims machinery."""

import ast
from collections.abc import Iterable
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
        "extras",
        "keys",
        "native",
        "ops",
        "paths",
        "plots",
        "record",
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
    {"runner", "jobs", "sweep", "sweep_report", "claims_report", "ledger_page", "reproduce", "loading", "store"},
    {"cli", "cli_errors", "cli_parse", "cli_plugins", "cli_report", "cli_ledger", "__main__", "__init__"},
]


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__") or "__init__"


def _imports(path: Path) -> set[str]:
    """Every inductionlab module imported anywhere in the file (top level or inside functions)."""
    return _imports_of(ast.walk(ast.parse(path.read_text())))


def _imports_of(nodes: Iterable[ast.AST]) -> set[str]:
    out = set()
    for node in nodes:
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


def _claims_units() -> dict[str, str]:
    """{claims module: the experiment it belongs to}: ``experiments.<wing>.claims.<stem>`` holds the claims of the
    toolkit experiment ``<stem>`` and belongs to the module or package that defines it (the registry's TOOLKIT)."""
    from inductionlab.experiments import registry

    return {
        claims.removeprefix("inductionlab."): ".".join(where.removeprefix("inductionlab.").split(":")[0].split(".")[:3])
        for where, claims in registry.TOOLKIT.values()
    }


def _is_claims(module: str) -> bool:
    """A wing's claims package or one of its modules (``experiments.<wing>.claims[.<stem>]``)."""
    parts = module.split(".")
    return parts[0] == "experiments" and len(parts) >= 3 and parts[1] in WINGS and parts[2] == "claims"


def _experiment_units() -> dict[str, str]:
    """{module: the experiment it belongs to} for every module of a wing but its ``__init__``, ``_shared`` and
    ``claims`` package: an experiment is a module ``experiments.<wing>.<name>`` or a package of that name with its
    companions, and its claims module ``experiments.<wing>.claims.<name>``."""
    units, claims = {}, _claims_units()
    for module in _graph():
        parts = module.split(".")
        if _is_claims(module):
            if len(parts) > 3:
                units[module] = claims.get(module, module)  # a claims module of no experiment: a unit of its own
        elif parts[0] == "experiments" and len(parts) >= 3 and parts[1] in WINGS and not parts[2].startswith("_"):
            units[module] = ".".join(parts[:3])
    return units


def _wing_violations(graph: dict[str, set[str]], units: dict[str, str]) -> list[str]:
    """What breaks the wings' rules: a wing importing another wing; an experiment importing another experiment (its
    own companions, its wing's ``_shared`` and the floor are allowed; its claims module may import its run code); run
    code importing a claims module (claims point to the run, never back); a ``_shared`` importing an experiment; the
    floor (``experiment``, ``registry``, ``configs``) importing a wing."""
    bad = []
    for module, imports in graph.items():
        parts = module.split(".")
        wing = parts[1] if parts[0] == "experiments" and len(parts) >= 2 and parts[1] in WINGS else None
        for i in sorted(x for x in imports if x.startswith("experiments.") and x not in FLOOR):
            target = i.split(".")
            if module in FLOOR:
                bad.append(f"{module} (the floor) imports the wing module {i}")
            elif _is_claims(i) and not _is_claims(module):
                bad.append(
                    f"{module} imports the claims module {i}; the registry attaches claims to the run's Experiment"
                )
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
    claims = {m for m in _graph() if _is_claims(m) and len(m.split(".")) > 3}
    assert claims == set(_claims_units()), f"claims modules of no toolkit experiment: {claims - set(_claims_units())}"
    flat = [p.name for p in (SRC / "experiments").glob("*.py") if p.stem not in SHARED_FILES]
    assert not flat, f"experiment modules outside a wing: {flat}"


def test_a_wing_shared_module_serves_two_experiments_or_more():
    """A wing's private module (``_shared``, ``_learning``) that one experiment imports belongs in that experiment's
    package."""
    graph, units = _graph(), _experiment_units()
    for wing in WINGS:
        for path in (SRC / "experiments" / wing).glob("_*.py"):
            shared = f"experiments.{wing}.{path.stem}"
            users = {units[m] for m, imports in graph.items() if m in units and shared in imports}
            if path.stem != "__init__":
                assert len(users) >= 2, f"{shared} serves {sorted(users)} only"


def test_the_checker_sees_a_wing_importing_another():
    graph = {
        "experiments.chen.markov_x": {"experiments.wang._shared"},
        "experiments.wang.a": {"experiments.wang.b", "experiments.wang._shared", "experiments.registry"},
        "experiments.wang.b.part": {"experiments.wang.b.other", "experiments.wang.claims.b"},
        "experiments.wang.claims.b": {"experiments.wang.b.part", "experiments.wang._shared"},
        "experiments.wang.claims.a": {"experiments.wang.b"},
        "experiments.registry": {"experiments.wang"},
    }
    units = {
        "experiments.chen.markov_x": "experiments.chen.markov_x",
        "experiments.wang.a": "experiments.wang.a",
        "experiments.wang.b": "experiments.wang.b",
        "experiments.wang.b.part": "experiments.wang.b",
        "experiments.wang.b.other": "experiments.wang.b",
        "experiments.wang.claims.a": "experiments.wang.a",
        "experiments.wang.claims.b": "experiments.wang.b",
    }
    found = _wing_violations(graph, units)
    assert any("another wing" in v for v in found) and any(
        "experiments.wang.a imports the experiment experiments.wang.b" in v for v in found
    )
    assert any("experiments.wang.claims.a imports the experiment experiments.wang.b" in v for v in found)
    assert any("imports the claims module experiments.wang.claims.b" in v for v in found)
    assert any("the floor" in v for v in found) and len(found) == 5  # a package's companions are its own


def _source(unit: str) -> str:
    base = SRC / Path(*unit.split("."))
    return (base / "__init__.py" if base.is_dir() else base.with_suffix(".py")).read_text()


def test_the_checker_sees_an_upward_import(tmp_path):
    """The checker itself: a models file importing train is caught."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from inductionlab.train import loop\n")
    assert _imports(fake) == {"train.loop"} and _layer("train.loop") > _layer("models.toy")


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and "TYPE_CHECKING" in (getattr(test, "id", None), getattr(test, "attr", None))


def _executed(node: ast.AST) -> list[ast.AST]:
    """The nodes below ``node`` that may run: all but the bodies of ``if TYPE_CHECKING:``."""
    out = []
    for child in ast.iter_child_nodes(node):
        if _is_type_checking(child):
            out += [n for c in child.orelse for n in [c, *_executed(c)]]
        else:
            out += [child, *_executed(child)]
    return out


def _run_graph() -> dict[str, set[str]]:
    """{module: the modules it may import when imported or called}: :func:`_imports` less the type checkers' own."""
    return {_module(p): _imports_of(_executed(ast.parse(p.read_text()))) for p in SRC.rglob("*.py")}


def closure(module: str, graph: dict[str, set[str]] | None = None) -> set[str]:
    """The static import closure of ``module`` (``experiments.wang.probe``): every module its import or its calls
    may execute — what it imports anywhere but under ``if TYPE_CHECKING:``, transitively, and every package
    ``__init__`` above each (importing a module executes its parents)."""
    graph = _run_graph() if graph is None else graph
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in graph]
        todo += ["__init__", *graph.get(m, ())]
    return seen


JUDGING = {"analysis.claims", "analysis.claim_tests", "analysis.verdicts"}  # what judges a run, never runs one


def test_no_run_path_reaches_the_claims():
    """The modules a toolkit experiment's run imports (docs/architecture.md#experiments) hold none of the claims
    machinery and no claims module: claims are judged, not run, and the registry attaches them."""
    from inductionlab.experiments import registry

    graph = _run_graph()
    for name, (where, _) in registry.TOOLKIT.items():
        reached = closure(where.split(":")[0].removeprefix("inductionlab."), graph)
        bad = sorted(m for m in reached if m in JUDGING or _is_claims(m))
        assert not bad, f"{name}: its run imports {bad}"
    for package in ("experiments", "monitor"):  # on run paths: they import nothing themselves
        assert closure(package, graph) == {package, *closure("__init__", graph)}, package
