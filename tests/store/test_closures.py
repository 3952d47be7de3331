"""Each toolkit experiment's static import closure (:func:`tests.test_layers.closure` of its run module: what a run's
source digest covers, docs/architecture.md#experiments) holds, of the models, the tasks and the C kernels, what its
run calls and nothing more.

"What its run calls" is measured, not declared: the session's trace of every toolkit experiment's ``smoke`` run
(``tests/store/conftest.py``: ``sys.setprofile`` and ``threading.setprofile`` for the evaluation and worker threads)
gives the files under ``models/`` and ``tasks/``, and the modules that hold a C kernel
(``Path(__file__).with_name("X.c")``), in which a function was called.  The closure must hold every one of them (else a change to it would not re-key the run) and no other, but
for the few :data:`REACHED_UNCALLED`, each with the reason its run's code reaches it."""

import ast
from pathlib import Path

import inductionlab
from inductionlab.experiments import registry
from tests.test_layers import _module, _run_graph, closure

SRC = Path(inductionlab.__file__).parent


def _holds_a_kernel(path: Path) -> bool:
    """The module builds a C source beside it: ``Path(__file__).with_name("X.c")``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "with_name" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and str(arg.value).endswith(".c"):
                return True
    return False


TRACKED = {
    _module(p): str(p)
    for p in sorted(SRC.rglob("*.py"))
    if (p.parent.name in ("models", "tasks") and p.name != "__init__.py") or _holds_a_kernel(p)
}
TRACKED_LABEL = {f"inductionlab/{Path(path).relative_to(SRC).as_posix()}": m for m, path in TRACKED.items()}
# (experiment, module) → why the experiment's closure holds a module its smoke run never calls
REACHED_UNCALLED = {
    ("scb-noise-sim", "models.linear_fused"): "train_scb draws its mini-batch gradients through the fused SCB "
    "kernel unless it is given a gradient oracle, and this experiment always gives one (the Gaussian-noise "
    "simulation): the one trainer module holds both paths",
}


def test_each_closure_holds_the_models_tasks_and_kernels_its_run_calls_and_no_other(traced):
    graph, wrong = _run_graph(), []
    for name, (where, _) in registry.TOOLKIT.items():
        called = {TRACKED_LABEL[label] for label, q in traced[name] if label in TRACKED_LABEL and q != "<module>"}
        static = closure(where.split(":")[0].removeprefix("inductionlab."), graph) & set(TRACKED)
        excused = {m for (n, m) in REACHED_UNCALLED if n == name}
        if static - called - excused:
            wrong.append(f"{name}: its closure holds {sorted(static - called - excused)}, never called")
        if called - static:
            wrong.append(f"{name}: its run calls {sorted(called - static)}, outside its closure")
        if excused - (static - called):
            wrong.append(f"{name}: REACHED_UNCALLED excuses {sorted(excused)}, which no longer needs it")
    assert not wrong, "\n".join(wrong)
    assert {n for n, _ in REACHED_UNCALLED} <= set(registry.TOOLKIT)


def test_the_tracked_modules_are_the_models_the_tasks_and_the_kernels():
    assert {"models.transformer", "models.fused", "tasks.markov", "uniforms"} <= set(TRACKED)
    assert not {m for m in TRACKED if m.startswith("train.")}
