"""The command line's plug-ins (docs/own_experiment.md): ``--plugin`` values taken from anywhere on the command line,
and the experiment of a saved run or sweep found again through the plug-in its config.json or sweep.json recorded
(docs/own_experiment.md#travel)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inductionlab.config import ConfigError


def take_plugins(argv: list[str]) -> list[str]:
    """Take every ``--plugin SPEC`` (or ``--plugin=SPEC``) off ``argv``, before or after the command
    (``inductionlab --plugin my.py run my-exp``, ``inductionlab run my-exp --plugin my.py``): repeatable, one module or
    .py file each, never split; this process and its workers import them
    (:func:`inductionlab.experiments.add_plugin_args`).  The rest of ``argv``, in order."""
    rest, specs = [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--plugin":
            if i + 1 >= len(argv) or not argv[i + 1]:
                raise ConfigError("--plugin: expected a module name or a .py file")
            specs.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--plugin="):
            specs.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
        i += 1
    if specs:
        from inductionlab.experiments import add_plugin_args

        add_plugin_args(specs)
    return rest


def recorded_experiment(path: Path, name: str | None = None) -> None:
    """Make the experiment of the run's config.json or the sweep's sweep.json at ``path`` known, importing the
    plug-in it recorded when this process does not know it (:func:`inductionlab.experiments.recorded`): before
    ``report``, ``run --resume`` or re-running a sweep.  Nothing when the file is absent or damaged (the command's
    own reading of it says so) or is of another experiment than ``name`` (given)."""
    from inductionlab import experiments

    saved: Any = None
    try:
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    experiment = saved.get("experiment") if isinstance(saved, dict) else None
    if isinstance(experiment, str) and name in (None, experiment):
        experiments.recorded(experiment, saved.get("plugins"), path)
