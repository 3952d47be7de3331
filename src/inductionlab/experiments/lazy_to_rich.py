"""Fig. 2 of Wang et al. (dynamics paper Fig. 1, appendix B.1): the lazy-to-rich transition of the toy model on
the mixed 4-gram + in-context 2-gram target, with gradient flow beside SGD (the experiment itself is
:mod:`inductionlab.experiments.toy_common`)."""

from __future__ import annotations

from inductionlab.experiments.toy_common import PRESETS, Config, plot, run

NAME = "lazy-to-rich"
DESCRIPTION = (
    "Toy model on the mixed 4-gram + induction-head target: four-phase lazy-to-rich transition (Wang et al. Fig. 2)"
)
FIGURE = "Wang et al. Fig. 2"
WALL = "~1.5 min"  # default preset, 2 cores
CPU_ONLY = "the six-parameter toy trains with a hand-written step whose time is Python overhead and random numbers, which a GPU does not remove"
HEADLINE = ("T_I", "T_II", "T_50", "T_III", "final.loss_IH2", "final.w_KQ")

CONFIG = Config()

__all__ = [
    "CONFIG",
    "CPU_ONLY",
    "DESCRIPTION",
    "FIGURE",
    "HEADLINE",
    "NAME",
    "PRESETS",
    "WALL",
    "Config",
    "plot",
    "run",
]
