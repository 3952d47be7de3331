"""Experiments, one file per paper figure, each defining one :class:`~inductionlab.experiments.experiment.Experiment`
``EXPERIMENT`` (name, description, config whose ``seeds`` field is the run axis, presets, run, plot, claims,
controls), and the registry that finds them by name, with the experiments of other packages and scripts
(:func:`register_experiment`, the entry-point group ``inductionlab.experiments``, ``$INDUCTIONLAB_PLUGINS``).  Modules named ``*_common`` hold what
several experiments share; no experiment imports another (``docs/architecture.md#experiments``).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, get_args, get_origin, get_type_hints

from inductionlab.config import ConfigError, dotted, override
from inductionlab.experiments import (
    adam_vs_gd_highdim,
    approx_gihn,
    approx_ih2,
    approx_ihn,
    heads_dims,
    hf_induction,
    interventions,
    joint_training,
    lazy_to_rich,
    markov_full,
    markov_joint,
    markov_length_generalization,
    markov_mi,
    markov_stages,
    markov_transformer,
    plateau_scaling,
    probe,
    repeated_text,
    scb_convergence,
    scb_noise_sim,
    scb_softmax,
    scb_transfer,
    wikitext,
)
from inductionlab.experiments.experiment import Experiment

BUILTIN: tuple[Experiment, ...] = (
    lazy_to_rich.EXPERIMENT,
    lazy_to_rich.BOOLEAN,  # workshop Fig. 3: Fig. 2 with ±1 tokens, in the same file
    *(
        m.EXPERIMENT
        for m in (
            plateau_scaling,
            approx_ih2,
            approx_ihn,
            approx_gihn,
            probe,
            heads_dims,
            adam_vs_gd_highdim,
            joint_training,
            scb_convergence,
            scb_softmax,
            scb_transfer,
            scb_noise_sim,
            markov_stages,
            markov_joint,
            markov_mi,
            markov_length_generalization,
            markov_full,
            markov_transformer,
            wikitext,
            repeated_text,
            interventions,
            hf_induction,
        )
    ),
)
REGISTRY: dict[str, Experiment] = {e.name: e for e in BUILTIN}  # then the plug-ins (docs/own_experiment.md)
ENTRY_POINTS = "inductionlab.experiments"  # the entry-point group of experiments from other packages
PLUGINS_ENV = "INDUCTIONLAB_PLUGINS"  # modules or .py files to import first, separated by os.pathsep or ","
_loaded: set[str] = set()


def register_experiment(experiment: Experiment, *, replace: bool = False) -> Experiment:
    """Add ``experiment`` to the registry, so that ``run``, ``sweep``, ``report``, ``list`` and ``reproduce`` know
    it by its name (docs/own_experiment.md); return it.  The toolkit's own names are refused unless ``replace``; an
    outside experiment registered again under its name (a module imported twice, a worker process) replaces the
    earlier one."""
    if not isinstance(experiment, Experiment):
        raise TypeError(f"register_experiment needs an inductionlab.Experiment, got {type(experiment).__name__}")
    builtin = {e.name for e in BUILTIN}
    if experiment.name in builtin and not replace and REGISTRY[experiment.name] is not experiment:
        raise ConfigError(
            f"experiment: {experiment.name!r} is one of the toolkit's own experiments; choose another name "
            "(or pass replace=True to shadow it)"
        )
    REGISTRY[experiment.name] = experiment
    return experiment


def load_plugins() -> None:
    """Import the experiments of other packages (entry-point group ``inductionlab.experiments``: each names an
    :class:`Experiment`, or a module defining ``EXPERIMENT`` or calling :func:`register_experiment`) and the
    modules or files listed in ``$INDUCTIONLAB_PLUGINS``; each once per process.  A plug-in that fails to load
    raises :class:`ConfigError` naming it."""
    for ep in entry_points(group=ENTRY_POINTS):
        key = f"ep:{ep.value}"
        if key not in _loaded:
            _loaded.add(key)
            _register_object(_load(ep.load, f"entry point {ep.name} = {ep.value}"), f"entry point {ep.name}")
    for spec in re.split(rf"[{re.escape(os.pathsep)},]", os.environ.get(PLUGINS_ENV, "")):
        if spec.strip() and spec.strip() not in _loaded:
            _loaded.add(spec.strip())
            import_plugin(spec.strip())


def import_plugin(spec: str) -> None:
    """Import the module ``spec`` (``mypkg.myexp``) or run the file ``spec`` (``path/to/myexp.py``) as a module,
    then register its ``EXPERIMENT`` if it defines one (it may also call :func:`register_experiment` itself)."""
    if spec.endswith(".py"):
        path = Path(spec).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"{PLUGINS_ENV}: no file {spec}")
        module_name = "inductionlab_plugin_" + re.sub(r"\W", "_", path.stem)
        loader = importlib.util.spec_from_file_location(module_name, path)
        assert loader is not None and loader.loader is not None  # a .py file always gets a source-file loader
        module = importlib.util.module_from_spec(loader)
        sys.modules[module_name] = module
        _load(lambda: loader.loader.exec_module(module), f"plug-in file {spec}")
    else:
        module = _load(lambda: importlib.import_module(spec), f"plug-in module {spec}")
    if isinstance(getattr(module, "EXPERIMENT", None), Experiment):
        register_experiment(module.EXPERIMENT)


def _load(fn: Any, what: str) -> Any:
    try:
        return fn()
    except Exception as err:
        raise ConfigError(f"{what} failed to load: {type(err).__name__}: {err}") from err


def _register_object(obj: Any, what: str) -> None:
    if isinstance(obj, Experiment):
        register_experiment(obj)
    elif isinstance(obj, ModuleType):
        if isinstance(getattr(obj, "EXPERIMENT", None), Experiment):
            register_experiment(obj.EXPERIMENT)
    else:
        raise ConfigError(f"{what} names a {type(obj).__name__}; it must name an Experiment or a module")


def source_of(name: str) -> str:
    """Where a worker process finds experiment ``name`` when the registry of a fresh process lacks it: "" for the
    toolkit's own and the plug-ins (every process loads them), else the module (or the script file) whose code
    defines its ``run`` — registering at the top level of that module or script makes it known there too."""
    exp = get(name)
    if exp in BUILTIN:
        return ""
    module = sys.modules.get(exp.run.__module__)
    if exp.run.__module__ in ("__main__", "__mp_main__"):
        return str(getattr(module, "__file__", "") or "")
    return exp.run.__module__


def ensure_registered(name: str, source: str) -> Experiment:
    """Experiment ``name``, importing ``source`` (:func:`source_of`) first if this process does not know it yet."""
    if name not in all_experiments() and source:
        import_plugin(source)
    if name not in REGISTRY:
        raise ConfigError(
            f"experiment: {name!r} is not registered in this worker process; register it at the top level of a module "
            "or script (or with --plugin / $INDUCTIONLAB_PLUGINS), or run with one worker (docs/own_experiment.md)"
        )
    return REGISTRY[name]


def all_experiments() -> dict[str, Experiment]:
    """Every experiment by name: the toolkit's own, then the plug-ins (loaded on first use)."""
    load_plugins()
    return REGISTRY


def get(name: str) -> Experiment:
    """The experiment called ``name``; a clear error lists the known ones."""
    known = all_experiments()
    if name not in known:
        raise ConfigError(f"experiment: unknown experiment {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def configure(
    name: str,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    base: Any = None,
    file: dict[str, Any] | None = None,
) -> Any:
    """Experiment ``name``'s CONFIG (or ``base``, a saved run's config), then its ``preset``, then ``file`` (the
    nested keys of a ``--config`` file), then the dotted-key ``overrides``: each later one wins, and each step is
    validated."""
    exp = get(name)
    cfg = exp.config if base is None else base
    overrides = dict(overrides or {})
    if "device" in overrides and not hasattr(cfg, "device"):
        _cpu_only(name, str(overrides.pop("device")))
    if preset:
        if preset not in exp.presets:
            raise ConfigError(f"--preset: unknown preset {preset!r} for {name}; known: {', '.join(exp.presets)}")
        cfg = override(cfg, exp.presets[preset], name)
    if file:
        cfg = override(cfg, dotted({k: v for k, v in file.items() if k != "experiment"}), name)
    cfg = override(cfg, overrides, name)
    _check_distinct(cfg)
    return cfg


def _check_distinct(cfg: Any, prefix: str = "") -> None:
    """The lists an experiment compares (the ``tuple[X, ...]`` fields of its own config classes, declared in
    ``experiments/``: degrees, losses, L values, …) hold distinct values: a repeat would run a setting twice and give
    its tables two rows of one key.  Library sections (a trainer's per-stage rates) may repeat values."""
    hints = get_type_hints(type(cfg))
    for f in dataclasses.fields(cfg):
        tp, value = hints[f.name], getattr(cfg, f.name)
        if dataclasses.is_dataclass(value) and type(value).__module__.startswith(__name__):
            _check_distinct(value, f"{prefix}{f.name}.")
        elif get_origin(tp) is tuple and get_args(tp)[-1:] == (Ellipsis,) and len(set(value)) != len(value):
            raise ConfigError(
                f"{prefix}{f.name}: values must be distinct (a repeat runs a setting twice), got {list(value)}"
            )


def _cpu_only(name: str, device: str) -> None:
    """Accept ``--device cpu`` for an experiment that has no device switch; refuse another device, saying why
    and which experiments have one (``docs/conventions.md#devices``)."""
    if device != "cpu":
        gpu = sorted(n for n, e in all_experiments().items() if hasattr(e.config, "device"))
        why = get(name).cpu_only
        raise ConfigError(f"--device {device}: {name} runs on the CPU only ({why}). With --device: {', '.join(gpu)}")
