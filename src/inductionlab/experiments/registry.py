"""The registry of experiments by name (docs/architecture.md#experiments): the toolkit's own, listed in
:data:`TOOLKIT` and each imported on first use, then those of other packages and scripts
(:func:`register_experiment`, the entry-point group ``inductionlab.experiments``, ``$INDUCTIONLAB_PLUGINS``,
``--plugin``) — the one place that knows experiments by name: what an experiment is and what it declares is its
:class:`Experiment`.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from inductionlab.config import ConfigError
from inductionlab.experiments.experiment import Experiment

# The toolkit's own experiments in `list`'s order: name → ("module:ATTRIBUTE" of its Experiment, the module of its
# CLAIMS, CONTROLS and DRAWS), both imported on first use; the run's module never imports its claims
# fmt: off
TOOLKIT: dict[str, tuple[str, str]] = {
    "lazy-to-rich":                 ("inductionlab.experiments.wang.lazy_to_rich:EXPERIMENT", "inductionlab.experiments.wang.claims.lazy_to_rich"),
    "lazy-to-rich-boolean":         ("inductionlab.experiments.wang.lazy_to_rich:BOOLEAN", "inductionlab.experiments.wang.claims.lazy_to_rich_boolean"),
    "plateau-scaling":              ("inductionlab.experiments.wang.plateau_scaling:EXPERIMENT", "inductionlab.experiments.wang.claims.plateau_scaling"),
    "approx-ih2":                   ("inductionlab.experiments.wang.approx_ih2:EXPERIMENT", "inductionlab.experiments.wang.claims.approx_ih2"),
    "approx-ihn":                   ("inductionlab.experiments.wang.approx_ihn:EXPERIMENT", "inductionlab.experiments.wang.claims.approx_ihn"),
    "approx-gihn":                  ("inductionlab.experiments.wang.approx_gihn:EXPERIMENT", "inductionlab.experiments.wang.claims.approx_gihn"),
    "probe":                        ("inductionlab.experiments.wang.probe:EXPERIMENT", "inductionlab.experiments.wang.claims.probe"),
    "heads-dims":                   ("inductionlab.experiments.wang.heads_dims:EXPERIMENT", "inductionlab.experiments.wang.claims.heads_dims"),
    "adam-vs-gd-highdim":           ("inductionlab.experiments.wang.adam_vs_gd_highdim:EXPERIMENT", "inductionlab.experiments.wang.claims.adam_vs_gd_highdim"),
    "joint-training":               ("inductionlab.experiments.wang.joint_training:EXPERIMENT", "inductionlab.experiments.wang.claims.joint_training"),
    "wikitext":                     ("inductionlab.experiments.wang.wikitext:EXPERIMENT", "inductionlab.experiments.wang.claims.wikitext"),
    "repeated-text":                ("inductionlab.experiments.wang.repeated_text:EXPERIMENT", "inductionlab.experiments.wang.claims.repeated_text"),
    "scb-convergence":              ("inductionlab.experiments.ren.scb_convergence:EXPERIMENT", "inductionlab.experiments.ren.claims.scb_convergence"),
    "scb-softmax":                  ("inductionlab.experiments.ren.scb_softmax:EXPERIMENT", "inductionlab.experiments.ren.claims.scb_softmax"),
    "scb-transfer":                 ("inductionlab.experiments.ren.scb_transfer:EXPERIMENT", "inductionlab.experiments.ren.claims.scb_transfer"),
    "scb-noise-sim":                ("inductionlab.experiments.ren.scb_noise_sim:EXPERIMENT", "inductionlab.experiments.ren.claims.scb_noise_sim"),
    "markov-stages":                ("inductionlab.experiments.chen.markov_stages:EXPERIMENT", "inductionlab.experiments.chen.claims.markov_stages"),
    "markov-joint":                 ("inductionlab.experiments.chen.markov_joint:EXPERIMENT", "inductionlab.experiments.chen.claims.markov_joint"),
    "markov-mi":                    ("inductionlab.experiments.chen.markov_mi:EXPERIMENT", "inductionlab.experiments.chen.claims.markov_mi"),
    "markov-length-generalization": ("inductionlab.experiments.chen.markov_length_generalization:EXPERIMENT", "inductionlab.experiments.chen.claims.markov_length_generalization"),
    "markov-full":                  ("inductionlab.experiments.chen.markov_full:EXPERIMENT", "inductionlab.experiments.chen.claims.markov_full"),
    "markov-transformer":           ("inductionlab.experiments.across.markov_transformer:EXPERIMENT", "inductionlab.experiments.across.claims.markov_transformer"),
    "interventions":                ("inductionlab.experiments.across.interventions:EXPERIMENT", "inductionlab.experiments.across.claims.interventions"),
    "hf-induction":                 ("inductionlab.experiments.across.hf_induction:EXPERIMENT", "inductionlab.experiments.across.claims.hf_induction"),
    "fast-induction":               ("inductionlab.experiments.across.fast_induction:EXPERIMENT", "inductionlab.experiments.across.claims.fast_induction"),
}
# fmt: on
REGISTRY: dict[str, Experiment] = {}  # the toolkit's own (as imported), then the plug-ins (docs/own_experiment.md)
_toolkit: dict[str, Experiment] = {}  # the toolkit's own experiments imported so far, by name
ENTRY_POINTS = "inductionlab.experiments"  # the entry-point group of experiments from other packages
# Modules or .py files to import first, separated by os.pathsep only (":" on POSIX, ";" on Windows)
PLUGINS_ENV = "INDUCTIONLAB_PLUGINS"
PLUGIN_ARGS_ENV = "INDUCTIONLAB_PLUGIN_ARGS"  # the --plugin values, a JSON list (a path is never split)
Plugin = dict[str, str]  # {"spec": as given, "resolved": a module name or an absolute .py path}
_loaded: set[str] = set()
_origin: dict[str, str] = {}  # experiment name → what registered it (a plug-in, or the file defining its run)
_plugin_of: dict[str, Plugin] = {}  # experiment name → the plug-in whose import registered it
_loading: list[tuple[str, Plugin | None]] = []  # the plug-ins being imported (what, plug-in), innermost last


def register_experiment(experiment: Experiment, *, replace: bool = False) -> Experiment:
    """Add ``experiment`` to the registry, so that ``run``, ``sweep``, ``report``, ``list`` and ``reproduce`` know
    it by its name (docs/own_experiment.md); return it.  The toolkit's own names are refused unless ``replace``; an
    outside experiment registered again from where it was (a module imported twice, a worker process) replaces the
    earlier one, and one registered under a name another plug-in or module holds is refused, naming both."""
    if not isinstance(experiment, Experiment):
        raise TypeError(f"register_experiment needs an inductionlab.Experiment, got {type(experiment).__name__}")
    name, origin = experiment.name, _origin_of(experiment)
    known = REGISTRY.get(name)
    if not replace and known is not experiment:
        if name in TOOLKIT and experiment is not _toolkit.get(name):
            raise ConfigError(
                f"experiment: {name!r} of {origin} is one of the toolkit's own experiments; choose another name "
                "(or pass replace=True to shadow it)"
            )
        if known is not None and _origin.get(name, origin) != origin:
            raise ConfigError(
                f"experiment: {name!r} is registered by both {_origin[name]} and {origin}; rename one of them "
                "(or pass replace=True)"
            )
    REGISTRY[name], _origin[name] = experiment, origin
    _plugin_of.pop(name, None)
    plugin = _loading[-1][1] if _loading else None
    if plugin:
        _plugin_of[name] = plugin
    return experiment


def _builtin(name: str) -> Experiment:
    """The toolkit's own experiment ``name`` (:data:`TOOLKIT`), importing its module and its claims module on first
    use: the claims, controls and data draws reproduce judges it by are attached to the Experiment the run module
    builds (which validates them again)."""
    if name not in _toolkit:
        where, claims_module = TOOLKIT[name]
        module, attribute = where.split(":")
        run: Experiment = getattr(importlib.import_module(module), attribute)
        judged = importlib.import_module(claims_module)
        _toolkit[name] = dataclasses.replace(
            run,
            claims=judged.CLAIMS,
            controls=judged.CONTROLS,
            draws=getattr(judged, "DRAWS", run.draws),
            judged_seed=getattr(judged, "JUDGED_SEED", run.judged_seed),
            calibration_draws=getattr(judged, "CALIBRATION_DRAWS", run.calibration_draws),
        )
    return _toolkit[name]


def _known(name: str) -> Experiment | None:
    """Experiment ``name`` as this process knows it (a plug-in that shadows it wins), importing the toolkit's own
    on first use and placing it at its place in `list`'s order; None for a name nobody registered."""
    if name not in REGISTRY and name in TOOLKIT:
        REGISTRY[name] = _builtin(name)
        rank = {n: i for i, n in enumerate(TOOLKIT)}
        ordered = sorted(REGISTRY.items(), key=lambda item: rank.get(item[0], len(rank)))
        REGISTRY.clear()
        REGISTRY.update(ordered)
    return REGISTRY.get(name)


def load_toolkit() -> dict[str, Experiment]:
    """Import every toolkit experiment not imported yet (``list``, ``reproduce``, ``experiments.REGISTRY``)."""
    for name in TOOLKIT:
        _known(name)
    return REGISTRY


def toolkit_experiments() -> tuple[Experiment, ...]:
    """The toolkit's own experiments, in :data:`TOOLKIT`'s order (each imported on first use)."""
    return tuple(_builtin(name) for name in TOOLKIT)


def _origin_of(experiment: Experiment) -> str:
    """What registers ``experiment``: the plug-in being imported, else the file of the module defining its run."""
    if _loading:
        return _loading[-1][0]
    module = experiment.run.__module__
    file = getattr(sys.modules.get(module), "__file__", None)
    return f"file {Path(file).resolve()}" if file else f"module {module}"


@functools.cache
def _entry_points(path: tuple[str, ...]) -> tuple:
    """The entry points of the group, read once per ``sys.path`` (reading the installed metadata takes ~10 ms)."""
    return tuple(entry_points(group=ENTRY_POINTS))


def load_plugins() -> None:
    """Import the experiments of other packages (entry-point group ``inductionlab.experiments``: each names an
    :class:`Experiment`, or a module defining ``EXPERIMENT`` or calling :func:`register_experiment`), the modules
    or files listed in ``$INDUCTIONLAB_PLUGINS`` (separated by ``os.pathsep``) and those given with ``--plugin``
    (``$INDUCTIONLAB_PLUGIN_ARGS``, a JSON list); each once per process.  A plug-in that fails to load, ends the
    process, defines an ``EXPERIMENT`` that is none, or takes a name already held raises :class:`ConfigError`
    naming it."""
    for ep in _entry_points(tuple(sys.path)):
        key = f"ep:{ep.value}"
        if key not in _loaded:
            _loaded.add(key)
            what = f"entry point {ep.name} = {ep.value}"
            with _importing(what, None):
                _register_object(_load(ep.load, what), what)
    specs = [s.strip() for s in os.environ.get(PLUGINS_ENV, "").split(os.pathsep) if s.strip()]
    listed = [(_plugin(s), PLUGINS_ENV) for s in specs] + [(p, "--plugin") for p in plugin_args()]
    for plugin, where in listed:
        if _key(plugin["resolved"]) not in _loaded:
            _loaded.add(_key(plugin["resolved"]))
            import_plugin(plugin["resolved"], where, plugin)


def plugin_args() -> list[Plugin]:
    """The ``--plugin`` values of this command (``$INDUCTIONLAB_PLUGIN_ARGS``, a JSON list: each ``{"spec": as
    given, "resolved": module or absolute path}``, or one string, both at once)."""
    text = os.environ.get(PLUGIN_ARGS_ENV, "")
    try:
        items = json.loads(text) if text else []
    except json.JSONDecodeError:
        items = None
    plugins = [_plugin(i) if isinstance(i, str) else i for i in items] if isinstance(items, list) else None
    if plugins is None or not all(_is_plugin(p) for p in plugins):
        raise ConfigError(f"${PLUGIN_ARGS_ENV}: expected a JSON list of modules or .py files, got {text!r}")
    return plugins


def _plugin(spec: str) -> Plugin:
    return {"spec": spec, "resolved": _key(spec)}


def _is_plugin(p: Any) -> bool:
    return isinstance(p, dict) and set(p) == {"spec", "resolved"} and all(isinstance(v, str) and v for v in p.values())


def add_plugin_args(specs: list[str]) -> None:
    """Add ``--plugin`` values (each one module or one .py file, never split) to ``$INDUCTIONLAB_PLUGIN_ARGS``, which
    this process and its worker processes import before they look an experiment up; a file must exist."""
    for spec in specs:
        if not spec.strip():
            raise ConfigError("--plugin: expected a module name or a .py file, got an empty value")
        if spec.endswith(".py") and not Path(spec).expanduser().is_file():
            raise ConfigError(f"--plugin {spec}: no such file (give a module name or a .py file)")
    _add_plugins([_plugin(s) for s in specs])


def _add_plugins(plugins: list[Plugin]) -> None:
    os.environ[PLUGIN_ARGS_ENV] = json.dumps([*plugin_args(), *plugins])


def _key(spec: str) -> str:
    return str(Path(spec).expanduser().resolve()) if spec.endswith(".py") else spec


def import_plugin(spec: str, where: str = PLUGINS_ENV, plugin: Plugin | None = None) -> None:
    """Import the module ``spec`` (``mypkg.myexp``) or run the file ``spec`` (``path/to/myexp.py``) as a module,
    then register its ``EXPERIMENT`` if it defines one (it may also call :func:`register_experiment` itself);
    ``where`` names the option or variable that listed it; ``plugin``, what the experiments it registers record as
    their plug-in (:func:`plugin_record`; None: a worker importing the module of an experiment registered in Python)."""
    if spec.endswith(".py"):
        path = Path(spec).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"{where} {spec}: no such file (give a module name or a .py file)")
        digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]  # two files of one name stay two modules
        module_name = "inductionlab_plugin_" + re.sub(r"\W", "_", path.stem) + "_" + digest
        loader = importlib.util.spec_from_file_location(module_name, path)
        assert loader is not None and loader.loader is not None  # a .py file always gets a source-file loader
        module = importlib.util.module_from_spec(loader)
        what = f"plug-in file {spec}"
        sys.modules[module_name] = module
        with _importing(what, plugin):
            try:
                _load(lambda: loader.loader.exec_module(module), what)
            except ConfigError:
                sys.modules.pop(module_name, None)
                raise
            _register_object(module, what)
    else:
        what = f"plug-in module {spec}"
        with _importing(what, plugin):
            _register_object(_load(lambda: importlib.import_module(spec), what), what)


@contextmanager
def _importing(what: str, plugin: Plugin | None) -> Iterator[None]:
    _loading.append((what, plugin))
    try:
        yield
    finally:
        _loading.pop()


def _load(fn: Any, what: str) -> Any:
    """``fn()``, the import of a plug-in: anything it raises, or its ending the process, is a :class:`ConfigError`
    naming ``what`` (Ctrl-C stays an interrupt)."""
    try:
        return fn()
    except KeyboardInterrupt:
        raise
    except SystemExit as err:
        raise ConfigError(
            f"{what} ended the process (sys.exit({err.code!r})) while loading; a plug-in defines or registers "
            'experiments (guard a script\'s own run with `if __name__ == "__main__":`)'
        ) from None
    except ConfigError as err:
        raise ConfigError(f"{what} failed to load: {err}") from None
    except BaseException as err:
        raise ConfigError(f"{what} failed to load: {type(err).__name__}: {err}") from err


def _register_object(obj: Any, what: str) -> None:
    """Register ``obj``: an :class:`Experiment`, or a module whose ``EXPERIMENT`` (if any) must be one."""
    if isinstance(obj, Experiment):
        register_experiment(obj)
    elif isinstance(obj, ModuleType):
        if hasattr(obj, "EXPERIMENT"):
            value = obj.EXPERIMENT
            if not isinstance(value, Experiment):
                raise ConfigError(
                    f"{what}: EXPERIMENT must be an inductionlab.Experiment, got {type(value).__name__} {_short(value)}"
                )
            register_experiment(value)
    else:
        raise ConfigError(f"{what} names a {type(obj).__name__}; it must name an Experiment or a module")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def source_of(name: str) -> str:
    """Where a worker process finds experiment ``name`` when the registry of a fresh process lacks it, or holds the
    toolkit's own under a name a script shadows: "" for the toolkit's own (every process knows them), else the
    module (or the script file) whose code defines its ``run`` — registering at the top level of that module or
    script makes it known there too (a plug-in's module: every process loads it first anyway)."""
    exp = get(name)
    if _toolkit.get(name) is exp:
        return ""
    module = sys.modules.get(exp.run.__module__)
    if exp.run.__module__ in ("__main__", "__mp_main__"):
        return str(getattr(module, "__file__", "") or "")
    return exp.run.__module__


def ensure_registered(name: str, source: str) -> Experiment:
    """Experiment ``name``, importing ``source`` (:func:`source_of`) first if this process does not know it yet, or
    knows only the toolkit's own experiment that ``source`` shadows (``register_experiment(..., replace=True)``)."""
    if source:
        load_plugins()
        known = _known(name)
        if known is None or known is _toolkit.get(name):
            import_plugin(source)
    if _known(name) is None:
        raise ConfigError(
            f"experiment: {name!r} is not registered in this worker process; register it at the top level of a module "
            "or script (or with --plugin / $INDUCTIONLAB_PLUGINS), or run with one worker (docs/own_experiment.md)"
        )
    return REGISTRY[name]


def all_experiments() -> dict[str, Experiment]:
    """Every experiment by name: the toolkit's own, then the plug-ins (each imported on first use)."""
    load_plugins()
    return load_toolkit()


def get(name: str) -> Experiment:
    """The experiment called ``name`` (of the toolkit's own, only its module is imported); a clear error suggests
    the closest names and lists the known ones."""
    load_plugins()
    found = _known(name)
    if found is not None:
        return found
    known = all_experiments()
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ";"
        raise ConfigError(f"experiment: unknown experiment {name!r}{hint} known: {', '.join(sorted(known))}")
    return known[name]


def plugin_record(name: str) -> dict[str, list[Plugin]]:
    """``{"plugins": [the plug-in that registers experiment name]}`` (``--plugin`` or ``$INDUCTIONLAB_PLUGINS``),
    which a run's config.json and a sweep's sweep.json hold, so that ``report`` and ``--resume`` find it again
    (docs/own_experiment.md#travel); ``{}`` for the toolkit's own, an entry point's and one registered in Python."""
    get(name)
    return {"plugins": [dict(_plugin_of[name])]} if name in _plugin_of else {}


def recorded(name: str, plugins: Any, where: str | Path) -> Experiment:
    """Experiment ``name`` of a saved run or sweep (``where``: its config.json or sweep.json), importing the
    plug-ins it recorded (``plugins``, :func:`plugin_record`) when this process does not know it — as ``--plugin``
    values, so that worker processes import them too.  A recorded plug-in that cannot be imported (its file moved,
    its module gone) or no longer registers ``name`` is a :class:`ConfigError` naming it."""
    load_plugins()
    found = _known(name)
    if found is not None:
        return found
    again = "; give the plug-in that registers it with --plugin MODULE|FILE.py (docs/own_experiment.md#travel)"
    if not (isinstance(plugins, list) and plugins and all(_is_plugin(p) for p in plugins)):
        raise ConfigError(f"{where}: experiment {name!r} is unknown here, and no plug-in is recorded for it{again}")
    named = ", ".join(p["spec"] + (f" ({p['resolved']})" if p["spec"] != p["resolved"] else "") for p in plugins)
    gone = [p["resolved"] for p in plugins if p["resolved"].endswith(".py") and not Path(p["resolved"]).is_file()]
    if gone:
        raise ConfigError(f"{where}: experiment {name!r} comes from the plug-in {named}; {gone[0]} is gone{again}")
    try:
        for plugin in plugins:
            if _key(plugin["resolved"]) not in _loaded:
                import_plugin(plugin["resolved"], "plug-in", plugin)
                _loaded.add(_key(plugin["resolved"]))
    except ConfigError as err:
        raise ConfigError(f"{where}: experiment {name!r} comes from the plug-in {named}: {err}{again}") from None
    if name not in REGISTRY:
        raise ConfigError(f"{where}: the recorded plug-in {named} no longer registers experiment {name!r}{again}")
    _add_plugins([dict(p) for p in plugins])
    return REGISTRY[name]
