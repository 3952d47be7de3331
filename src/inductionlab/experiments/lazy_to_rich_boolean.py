"""Workshop Fig. 3 (docs/conventions.md#wang-6-2): the lazy-to-rich experiment with Boolean tokens x_i ~ Unif{±1}.

Same model, target and protocol as ``lazy-to-rich`` (:mod:`inductionlab.experiments.toy_common`); the closed forms of
§5.4 assume Gaussian tokens, so only the exact-softmax gradient flow (Monte Carlo over ±1 tokens) is
overlaid.
"""

from __future__ import annotations

from dataclasses import replace

from inductionlab.analysis.claims import Between, Claim, Control, Near
from inductionlab.experiments.toy_common import PRESETS, Config, plot, run
from inductionlab.tasks.mixed import MixedTaskConfig

NAME = "lazy-to-rich-boolean"
DESCRIPTION = "The lazy-to-rich experiment with Boolean ±1 tokens (workshop Fig. 3)"
FIGURE = "Wang et al. workshop Fig. 3"
WALL = "~3 min"  # default preset, 2 cores
CPU_ONLY = "the six-parameter toy trains with a hand-written step whose time is Python overhead and random numbers, which a GPU does not remove"
HEADLINE = ("T_I", "T_II", "T_50", "T_III", "final.loss_IH2", "final.w_KQ")
CONFIG = replace(Config(), task=MixedTaskConfig(tokens="boolean"), gf="exact")

CONTROLS = (
    Control(
        "wkq-clamped",
        "w_K and w_Q held at 0.01: layer 2 cannot become an induction head",
        {"intervene.clamp": ("w_KQ=0.01",), "gf": "none"},
        preset="quick",
    ),
    Control(
        "g4-head-frozen",
        "the 4-gram head's p and w_V1 frozen at σ_init: layer 2 cannot fit the 4-gram",
        {"intervene.freeze": ("p", "w_V1"), "gf": "none"},
        preset="quick",
    ),
)

CLAIMS = (
    Claim(
        "wang-ws3-lazy-first",
        "wang",
        "workshop Fig. 3 (dynamics paper App. B, Fig. 3: Boolean tokens)",
        "With ±1 tokens the 4-gram part is learned long before the induction head",
        "T_I",
        "T_I ≪ T_50",
        Between(hi=0.5),
        over="T_50",
        control="g4-head-frozen",
    ),
    Claim(
        "wang-ws3-ih-fit",
        "wang",
        "workshop Fig. 3 (dynamics paper App. B, Fig. 3: Boolean tokens)",
        "With ±1 tokens the induction head forms: w_KQ reaches w*",
        "final.w_KQ",
        "w* = 0.49",
        Near(0.49, rtol=0.05),
        control="wkq-clamped",
    ),
)

__all__ = [
    "CLAIMS",
    "CONFIG",
    "CONTROLS",
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
