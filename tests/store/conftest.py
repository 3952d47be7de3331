"""What each experiment's run really executes, measured once per session: every function of a package file (or of
an outside file) that runs inside ``Experiment.run`` of its smoke preset, in any thread, traced with
``sys.setprofile`` and ``threading.setprofile``."""

import sys
import tempfile
import threading
from pathlib import Path

import pytest

from inductionlab import experiments
from inductionlab.runner import context
from inductionlab.store import closure


def trace_run(name: str) -> set[tuple[str, str]]:
    """(label, qualified name) of every Python function called while experiment ``name``'s smoke run runs; the
    label as :mod:`inductionlab.store.closure` gives it (``inductionlab/models/toy.py``), or an outside file's path."""
    exp = experiments.get(name)
    cfg = experiments.configure(name, preset="smoke" if "smoke" in exp.presets else None)
    root = str(closure.PACKAGE)
    calls: set[tuple[str, str]] = set()

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            calls.add((code.co_filename, code.co_qualname))

    with tempfile.TemporaryDirectory() as folder:
        ctx = context(cfg, Path(folder), threads=1)
        threading.setprofile(profile)  # the evaluations and data workers that run in threads of their own
        sys.setprofile(profile)
        try:
            exp.run(cfg, ctx)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    labelled = set()
    for file, name_ in calls:
        if file.startswith(root + "/"):
            labelled.add((f"{closure.NAME}/{file[len(root) + 1 :]}", name_))
        elif not file.startswith("<") and "site-packages" not in file and not file.startswith(sys.base_prefix):
            labelled.add((file, name_))
    return labelled


@pytest.fixture(scope="session")
def traced() -> dict[str, set[tuple[str, str]]]:
    """:func:`trace_run` of every toolkit experiment."""
    return {exp.name: trace_run(exp.name) for exp in experiments.BUILTIN}
