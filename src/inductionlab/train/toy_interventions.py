"""The toy model's parameter family for :mod:`inductionlab.train.interventions` (docs/conventions.md#mech): its six
parameters, one column each, and the aliases ``layer1``, ``layer2`` and ``w_KQ``."""

from __future__ import annotations

from inductionlab.models import toy
from inductionlab.train.interventions import Family


def toy_family() -> Family:
    """The six-parameter toy (one column each) for :mod:`inductionlab.train.interventions`: aliases ``layer1``
    (p̃), ``layer2``, ``w_KQ`` (w_Q and w_K)."""
    return Family(
        "the toy model",
        {name: () for name in toy.PARAMS},
        {
            "layer1": ("p_tilde",),
            "layer2": tuple(toy.PARAMS[i] for i in toy.LAYER2),
            "w_KQ": ("w_Q", "w_K"),
        },
    )
