"""Fig. 2 of Wang et al. (dynamics paper Fig. 1, appendix B.1): the lazy-to-rich transition of the toy model on
the mixed 4-gram + in-context 2-gram target, with gradient flow beside SGD (the experiment itself is
:mod:`inductionlab.experiments.toy_common`)."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Near
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

CLAIMS = (
    Claim(
        "wang-fig2-lazy-first",
        "wang",
        "Fig. 2, Thm 5.5",
        "The 4-gram part is learned long before the induction head emerges (lazy, then rich)",
        "T_I",
        "T_I = O(1) ≪ T_50 = Θ((1+α*)²L log(1/σ)/w*²)",
        Between(hi=0.5),
        over="T_50",
    ),
    Claim(
        "wang-fig2-wkq",
        "wang",
        "Fig. 2",
        "w_KQ converges to the target's w*",
        "final.w_KQ",
        "w* = 0.49",
        Near(0.49, rtol=0.05),
    ),
    Claim(
        "wang-fig2-ih-fit",
        "wang",
        "Fig. 2",
        "The induction-head loss falls to zero after the transition",
        "final.loss_IH2",
        "→ 0",
        Between(hi=1e-6),
    ),
    Claim(
        "wang-thm5.5-flow",
        "wang",
        "Thm 5.5",
        "SGD's emergence time matches the gradient flow of the population loss",
        "T_50",
        "T_50(SGD) ≈ T_50(gradient flow)",
        Between(0.7, 1.3),
        over="gf_phases.exact.T_50",
    ),
    Claim(
        "wang-lemma5.3-stage1",
        "wang",
        "Lemma 5.3",
        "Stage I makes layer 1 a previous-token head: p̃ grows",
        "p_tilde_after_stage1",
        "p̃ → ∞",
        Between(lo=0.5),
    ),
)

__all__ = [
    "CLAIMS",
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
