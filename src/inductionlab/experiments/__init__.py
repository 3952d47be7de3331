"""Experiments, one file per paper figure, each with ``NAME``, ``DESCRIPTION``, ``CONFIG`` (a frozen
dataclass instance whose ``seeds`` field is the run axis), ``PRESETS`` (name → dotted-key overrides),
``run(cfg, ctx) -> Results`` and ``plot(results, out_dir) -> [paths]``.  Modules named ``*_common`` hold what
several experiments share; no experiment imports another (``docs/architecture.md#experiments``).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from inductionlab.config import ConfigError, override
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


def configure(name: str, preset: str | None = None, overrides: dict[str, Any] | None = None, base: Any = None) -> Any:
    """Experiment ``name``'s CONFIG (or ``base``), then its ``preset``, then dotted-key ``overrides`` (each step
    validated)."""
    exp = get(name)
    cfg = exp.CONFIG if base is None else base
    overrides = dict(overrides or {})
    if "device" in overrides and not hasattr(cfg, "device"):
        _cpu_only(name, str(overrides.pop("device")))
    if preset:
        if preset not in exp.PRESETS:
            raise ConfigError(f"--preset: unknown preset {preset!r} for {name}; known: {', '.join(exp.PRESETS)}")
        cfg = override(cfg, exp.PRESETS[preset], name)
    return override(cfg, overrides, name)


def _cpu_only(name: str, device: str) -> None:
    """Accept ``--device cpu`` for an experiment that has no device switch; refuse another device, saying why
    and which experiments have one (``docs/conventions.md#devices``)."""
    if device != "cpu":
        gpu = sorted(n for n, m in REGISTRY.items() if hasattr(m.CONFIG, "device"))
        why = getattr(REGISTRY[name], "CPU_ONLY", "it trains tiny models whose time is Python overhead, not arithmetic")
        raise ConfigError(f"--device {device}: {name} runs on the CPU only ({why}). With --device: {', '.join(gpu)}")
