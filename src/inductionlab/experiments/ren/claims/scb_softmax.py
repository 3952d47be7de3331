"""The claims of ``scb-softmax`` (Ren et al. Fig. 2) and its negative controls (docs/conventions.md#claims,
#controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS`` data draws.  The registry
attaches them to the experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control

DRAWS = 4  # data seeds: each claim is judged on the mean over four draws (docs/conventions.md#claims)

CONTROLS = (
    Control(
        name="other-positions",
        breaks="the softmax model trains on data whose relevant positions are Q's shifted by T/2 (same P, sparsity and "
        "weights): it learns a sparse pattern, but not the task's",
        overrides={"softmax_positions": "shifted"},
        preset=None,
    ),
)


CLAIMS = (
    Claim(
        id="ren-fig2-patterns",
        paper="ren",
        where="§5.2 and Fig. 2",
        statement="Softmax attention learns the same pattern as the linear model ('qualitatively similar behaviors'; Fig. 2's "
        "heat-maps of softmax(W) and A)",
        key="attention_cosine_linear_vs_softmax",
        expected="similar patterns: cosine of the two learned attention matrices ≥ 0.9",
        test=Between(lo=0.9),
        control="other-positions",
    ),
    Claim(
        id="ren-fig2-loss",
        paper="ren",
        where="§5.2 and Fig. 2",
        statement="Softmax and linear attention reach the same loss (Fig. 2's loss curves), judged against the learnable range: "
        "(softmax − linear final loss) / (initial loss − loss at the truth (P, Q))",
        key="loss_gap_over_learnable",
        expected="similar losses: |gap| ≤ 10 % of the learnable drop",
        test=Between(-0.1, 0.1),
        control="other-positions",
    ),
    Claim(
        id="ren-fig2-softmax-learns",
        paper="ren",
        where="§5.2 and Fig. 2",
        statement="Softmax attention trained by SGD learns the task: its loss falls most of the way from the start to the "
        "truth's loss",
        key="learned_fraction.softmax",
        expected="(initial − final loss) / (initial − loss at (P, Q)) ≥ 0.9",
        test=Between(lo=0.9),
        control="other-positions",
    ),
)
