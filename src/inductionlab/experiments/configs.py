"""An experiment's config as a command asks for it (docs/own_experiment.md): its CONFIG or a saved run's, then a
preset, a ``--config`` file and the dotted-key overrides, each step validated; ``--device`` refused beyond the devices
the experiment declares."""

from __future__ import annotations

import dataclasses
from typing import Any, get_args, get_origin, get_type_hints

from inductionlab.config import CUDA, ConfigError, dotted, flatten, override
from inductionlab.experiments.experiment import Experiment
from inductionlab.experiments.registry import all_experiments, get
from inductionlab.runs import config_values


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
    if "device" in overrides:
        _check_device(exp, str(overrides["device"]))
        if "device" not in flatten(cfg):  # a CPU-only config has no device key: --device cpu asks nothing of it
            overrides.pop("device")
    if preset:
        if preset not in exp.presets:
            raise ConfigError(f"--preset: unknown preset {preset!r} for {name}; known: {', '.join(exp.presets)}")
        cfg = override(cfg, exp.presets[preset], name)
    if file:
        cfg = override(cfg, dotted(config_values(file)), name)
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
        if dataclasses.is_dataclass(value) and type(value).__module__.startswith(f"{__package__}."):
            _check_distinct(value, f"{prefix}{f.name}.")
        elif get_origin(tp) is tuple and get_args(tp)[-1:] == (Ellipsis,) and len(set(value)) != len(value):
            raise ConfigError(
                f"{prefix}{f.name}: values must be distinct (a repeat runs a setting twice), got {list(value)}"
            )


def _check_device(exp: Experiment, device: str) -> None:
    """Refuse ``--device`` beyond the devices ``exp`` declares (``Experiment.devices``), saying why and which
    experiments run there (``docs/conventions.md#devices``); the config's own check then validates the value."""
    kind = "cpu" if device == "cpu" else "cuda" if CUDA.fullmatch(device) else device
    if kind in exp.devices or (kind not in ("cpu", "cuda") and "cuda" in exp.devices):
        return
    if exp.devices == ("cpu",):
        gpu = sorted(n for n, e in all_experiments().items() if "cuda" in e.devices)
        raise ConfigError(
            f"--device {device}: {exp.name} runs on the CPU only ({exp.cpu_only}). With --device: {', '.join(gpu)}"
        )
    raise ConfigError(f"--device {device}: {exp.name} runs on {', '.join(exp.devices)} only")
