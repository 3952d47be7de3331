"""Each toolkit experiment's static import closure (:func:`tests.test_layers.closure` of its run module: what a run's
source digest covers, docs/architecture.md#experiments) holds, of the models, the tasks and the C kernels, what its
run calls and nothing more.

"What its run calls" is measured, not declared: one subprocess runs every toolkit experiment's ``smoke`` preset in
turn — its config (``configure``), ``run`` and ``plot`` — under a call tracer (``sys.settrace``, and
``threading.settrace`` for the evaluation and worker threads) that records the files under ``models/`` and
``tasks/``, and the modules that hold a C kernel (``Path(__file__).with_name("X.c")``), in which a function was
called.  The closure must hold every one of them (else a change to it would not re-key the run) and no other, but
for the few :data:`REACHED_UNCALLED`, each with the reason its run's code reaches it."""

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import inductionlab
from inductionlab.experiments import registry
from tests.conftest import write_corpus
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
# (experiment, module) → why the experiment's closure holds a module its smoke run never calls
REACHED_UNCALLED = {
    ("scb-noise-sim", "models.linear_fused"): "train_scb draws its mini-batch gradients through the fused SCB "
    "kernel unless it is given a gradient oracle, and this experiment always gives one (the Gaussian-noise "
    "simulation): the one trainer module holds both paths",
}

TRACE = textwrap.dedent(
    """
    import json, sys, tempfile, threading
    from pathlib import Path

    import torch

    from inductionlab import experiments
    from inductionlab.experiments import registry
    from inductionlab.config import flatten
    from inductionlab.runs import RunContext

    torch.set_num_threads(1)
    tracked = json.loads(sys.argv[1])  # file → module
    called = {}
    for name in registry.TOOLKIT:
        seen = set()

        def tracer(frame, event, arg, seen=seen):
            code = frame.f_code
            if code.co_filename in tracked and code.co_name != "<module>":
                seen.add(tracked[code.co_filename])

        exp = experiments.get(name)
        overrides = {"bf16": "off"} if "bf16" in flatten(exp.config) else {}
        with tempfile.TemporaryDirectory() as out:
            threading.settrace(tracer)
            sys.settrace(tracer)
            try:
                cfg = experiments.configure(name, "smoke", overrides)
                exp.plot(exp.run(cfg, RunContext(run_dir=Path(out), threads=1)), Path(out))
            finally:
                sys.settrace(None)
                threading.settrace(None)
        called[name] = sorted(seen)
    print(json.dumps(called))
    """
)


def test_each_closure_holds_the_models_tasks_and_kernels_its_run_calls_and_no_other(tmp_path):
    env = {**os.environ, "INDUCTIONLAB_DATA": str(write_corpus(tmp_path / "text")), "OMP_NUM_THREADS": "1"}
    files = json.dumps({path: module for module, path in TRACKED.items()})
    done = subprocess.run(
        [sys.executable, "-c", TRACE, files], capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    called = json.loads(done.stdout.strip().splitlines()[-1])
    graph, wrong = _run_graph(), []
    for name, (where, _) in registry.TOOLKIT.items():
        static = closure(where.split(":")[0].removeprefix("inductionlab."), graph) & set(TRACKED)
        excused = {m for (n, m) in REACHED_UNCALLED if n == name}
        if static - set(called[name]) - excused:
            wrong.append(f"{name}: its closure holds {sorted(static - set(called[name]) - excused)}, never called")
        if set(called[name]) - static:
            wrong.append(f"{name}: its run calls {sorted(set(called[name]) - static)}, outside its closure")
        if excused - (static - set(called[name])):
            wrong.append(f"{name}: REACHED_UNCALLED excuses {sorted(excused)}, which no longer needs it")
    assert not wrong, "\n".join(wrong)
    assert {n for n, _ in REACHED_UNCALLED} <= set(registry.TOOLKIT)


def test_the_tracked_modules_are_the_models_the_tasks_and_the_kernels():
    assert {"models.transformer", "models.fused", "tasks.markov", "uniforms"} <= set(TRACKED)
    assert not {m for m in TRACKED if m.startswith("train.")}
