"""Experiments, one per paper figure, in four wings: ``wang`` (Wang, Yu, E, Wu), ``chen`` (Chen, Sheen, Wang,
Yang), ``ren`` (Ren, Wang, Lee) and ``across`` (those that span papers or libraries).  Each experiment is an
:class:`~inductionlab.experiments.experiment.Experiment` (name, description, config whose ``seeds`` field is the run
axis, presets, run, plot, claims, controls, and what it declares: laws, loss unit, devices, data), a module of its
wing or a small package where it needs a companion; a wing's ``_shared`` module serves that wing alone, and no wing
imports another (``docs/architecture.md#experiments``).  The registry lists the toolkit's own by name and imports
each on first use, so that importing one experiment imports nothing of the others; plug-ins register theirs with
:func:`register_experiment` (:mod:`inductionlab.experiments.registry`).

This package imports nothing when imported (an experiment's module executes it): each name below is read from the
registry when first used, and ``REGISTRY`` and ``BUILTIN`` import every toolkit experiment first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; __getattr__ gives the same names at run time
    from inductionlab.experiments.configs import configure
    from inductionlab.experiments.experiment import Experiment
    from inductionlab.experiments.registry import (
        ENTRY_POINTS,
        PLUGIN_ARGS_ENV,
        PLUGINS_ENV,
        REGISTRY,
        add_plugin_args,
        all_experiments,
        ensure_registered,
        get,
        import_plugin,
        load_plugins,
        plugin_args,
        plugin_record,
        recorded,
        register_experiment,
        source_of,
    )

    BUILTIN: tuple[Experiment, ...]  # the toolkit's own, in `list`'s order

__all__ = [
    "BUILTIN",
    "ENTRY_POINTS",
    "PLUGINS_ENV",
    "PLUGIN_ARGS_ENV",
    "REGISTRY",
    "Experiment",
    "add_plugin_args",
    "all_experiments",
    "configure",
    "ensure_registered",
    "get",
    "import_plugin",
    "load_plugins",
    "plugin_args",
    "plugin_record",
    "recorded",
    "register_experiment",
    "source_of",
]
_ELSEWHERE = {"Experiment": "experiment", "configure": "configs"}  # the names not of the registry module


def __getattr__(name: str) -> Any:
    if name in ("configs", "experiment", "registry"):  # the floor's modules, as attributes of the package
        return importlib.import_module(f"{__name__}.{name}")
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_ELSEWHERE.get(name, 'registry')}")
    if name == "REGISTRY":
        return module.load_toolkit()
    if name == "BUILTIN":
        return module.toolkit_experiments()
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
