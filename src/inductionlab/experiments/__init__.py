"""Experiments, one per paper figure, in four wings: ``wang`` (Wang, Yu, E, Wu), ``chen`` (Chen, Sheen, Wang,
Yang), ``ren`` (Ren, Wang, Lee) and ``across`` (those that span papers or libraries).  Each experiment is an
:class:`~inductionlab.experiments.experiment.Experiment` (name, description, config whose ``seeds`` field is the run
axis, presets, run, plot, claims, controls, and what it declares: laws, loss unit, devices, data), a module of its
wing or a small package where it needs a companion; a wing's ``_shared`` module serves that wing alone, and no wing
imports another (``docs/architecture.md#experiments``).  Each wing registers its experiments with
:func:`register_experiment`, the path plug-ins take (:mod:`inductionlab.experiments.registry`).
"""

from __future__ import annotations

from inductionlab.experiments import registry
from inductionlab.experiments.experiment import Experiment
from inductionlab.experiments.registry import (
    ENTRY_POINTS,
    PLUGIN_ARGS_ENV,
    PLUGINS_ENV,
    REGISTRY,
    add_plugin_args,
    all_experiments,
    configure,
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

with registry.toolkit():  # the wings register their experiments, in the order `list` shows them
    from inductionlab.experiments import wang, ren, chen, across  # noqa: F401  # isort: skip

BUILTIN: tuple[Experiment, ...] = registry.toolkit_experiments()  # the toolkit's own, in that order

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
