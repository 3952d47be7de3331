"""The Chen et al. model's parameter family for :mod:`inductionlab.train.interventions` (docs/conventions.md#mech):
its parameters and the aliases ``copier``, ``selector`` and ``classifier``."""

from __future__ import annotations

from inductionlab.models import chen
from inductionlab.train.interventions import Family


def chen_family(cfg: chen.ChenConfig) -> Family:
    """The Chen et al. model for :mod:`inductionlab.train.interventions`: aliases ``copier`` (the RPE weights w and,
    in the full model, W_Q, W_K, W_OV), ``selector`` (c and the layer norm), ``classifier`` (a)."""
    shapes = {k: tuple(v.shape[1:]) for k, v in chen.init_params(cfg, 1).items()}
    aliases = {"copier": chen.GROUPS["w"], "selector": chen.GROUPS["c"], "classifier": chen.GROUPS["a"]}
    return Family("the Chen et al. model", shapes, aliases)
