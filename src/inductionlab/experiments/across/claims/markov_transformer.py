"""The claims of ``markov-transformer`` (Wang et al. × Chen et al. (stages)) and its negative controls
(docs/conventions.md#claims, #controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS``
data draws.  The registry attaches them to the experiment when it imports it (``experiments/registry.py``); the run
module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Is

# data seeds: each claim is judged on the mean over three draws (docs/conventions.md#claims), what the power rule
# asks of every claim here from its calibration seeds (docs/conventions.md#calibration, "Draws from power")
DRAWS = 3

CONTROLS = (
    Control(
        name="layer1-ablated",
        breaks="every layer-1 head's output zeroed: no previous-token information reaches layer 2 (and layer 1 gets no "
        "gradient), so no in-context bigram or n-gram statistic can be formed",
        overrides={"intervene.ablate": "blocks.0.attn", "compare": ""},
        preset=None,  # the claims' own budget (docs/conventions.md#controls)
    ),
)


CLAIMS = (
    Claim(
        id="cross-markov-stages",
        paper="chen",
        where="§5 × Wang et al.",
        statement="An unstructured two-layer transformer passes through the unigram → bigram → Bayes (trigram) stages in order",
        key="stages_in_order",
        expected="unigram, then bigram, then the n-gram (statistical induction head) stage",
        test=Is(True),
        control="layer1-ablated",
    ),
    Claim(
        id="cross-markov-bayes",
        paper="chen",
        where="§5 × Wang et al.",
        statement="On the trigram chain it ends far closer to the Bayes predictor than to the in-context bigram estimator",
        key="final_kl_to_bayes",
        expected="KL(Bayes ‖ model) ≤ 0.3 KL(bigram ‖ model)",
        test=Between(hi=0.3),
        over="final_kl.bigram",
        control="layer1-ablated",
    ),
    Claim(
        id="cross-markov-lags",
        paper="chen",
        where="§2–3 (layer 1 copies the parents: the copier, Thm 3.3 Stage II) × Wang et al.",
        statement="Its layer 1 attends to the parent lags {1, 2}: on average over its heads ≥ 0.8 of a query's attention "
        "falls on lags 1 and 2 (which head takes which lag is reported, not claimed: see layer1_lag_weights)",
        key="layer1_parent_mass",
        expected="Chen's copier heads attend to the parents only (mass 1 on lags {1, 2})",
        test=Between(lo=0.8),
        control="layer1-ablated",
    ),
)
