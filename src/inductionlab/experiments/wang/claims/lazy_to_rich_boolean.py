"""The claims of ``lazy-to-rich-boolean`` (Wang et al. workshop Fig. 3) and its negative controls
(docs/conventions.md#claims, #controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS``
data draws.  The registry attaches them to the experiment when it imports it (``experiments/registry.py``); the run
module never imports them."""

from __future__ import annotations

from dataclasses import replace

from inductionlab.analysis.claims import Between, Claim, Near
from inductionlab.experiments.wang.claims import lazy_to_rich

# data seeds: each claim is judged on the mean over three draws (docs/conventions.md#claims), what the power rule
# asks of every claim here from its calibration seeds (docs/conventions.md#calibration, "Draws from power")
DRAWS = 3

CONTROLS = tuple(  # Fig. 2's controls of its two claims; the exact flow (Monte Carlo over ±1 tokens) is not needed
    replace(c, overrides={**c.overrides, "gf": "none", "kick": 0})
    for c in lazy_to_rich.CONTROLS
    if c.name in ("wkq-grown", "other-w-star")
)


CLAIMS = (
    Claim(
        id="wang-ws3-lazy-first",
        paper="wang",
        where="workshop Fig. 3 (dynamics paper App. B, Fig. 3: Boolean tokens)",
        statement="With ±1 tokens the 4-gram part is learned long before the induction head",
        key="T_I",
        expected="T_I ≪ T_50",
        test=Between(hi=0.5),
        over="T_50",
        control="wkq-grown",
    ),
    Claim(
        id="wang-ws3-ih-fit",
        paper="wang",
        where="workshop Fig. 3 (dynamics paper App. B, Fig. 3: Boolean tokens)",
        statement="With ±1 tokens the induction head forms: w_KQ reaches w*",
        key="final.w_KQ",
        expected="w* = 0.49",
        test=Near(0.49, rtol=0.05),
        control="other-w-star",
    ),
)
