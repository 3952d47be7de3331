"""Experiments, one file per paper figure, each with ``NAME``, ``DESCRIPTION``, ``CONFIG`` (a frozen
dataclass instance whose ``seeds`` field is the run axis), ``PRESETS`` (name → dotted-key overrides),
``run(cfg, ctx) -> Results`` and ``plot(results, out_dir) -> [paths]``.  Modules named ``*_common`` hold what
several experiments share; no experiment imports another (``docs/architecture.md#experiments``).
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any, get_args, get_origin, get_type_hints

from inductionlab.config import ConfigError, dotted, override
from inductionlab.experiments import (
    adam_vs_gd_highdim,
    approx_gihn,
    approx_ih2,
    approx_ihn,
    heads_dims,
    interventions,
    joint_training,
    lazy_to_rich,
    lazy_to_rich_boolean,
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

REGISTRY: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        lazy_to_rich,
        lazy_to_rich_boolean,
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
    )
}


def get(name: str) -> ModuleType:
    """The experiment module called ``name``; a clear error lists the known ones."""
    if name not in REGISTRY:
        raise ConfigError(f"experiment: unknown experiment {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


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
    cfg = exp.CONFIG if base is None else base
    overrides = dict(overrides or {})
    if "device" in overrides and not hasattr(cfg, "device"):
        _cpu_only(name, str(overrides.pop("device")))
    if preset:
        if preset not in exp.PRESETS:
            raise ConfigError(f"--preset: unknown preset {preset!r} for {name}; known: {', '.join(exp.PRESETS)}")
        cfg = override(cfg, exp.PRESETS[preset], name)
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
        gpu = sorted(n for n, m in REGISTRY.items() if hasattr(m.CONFIG, "device"))
        why = getattr(REGISTRY[name], "CPU_ONLY", "it trains tiny models whose time is Python overhead, not arithmetic")
        raise ConfigError(f"--device {device}: {name} runs on the CPU only ({why}). With --device: {', '.join(gpu)}")
