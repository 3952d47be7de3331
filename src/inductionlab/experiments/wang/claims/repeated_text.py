"""The claims of ``repeated-text`` (Wang et al. Fig. 5, repeat) and its negative controls
(docs/conventions.md#claims, #controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS``
data draws.  The registry attaches them to the experiment when it imports it (``experiments/registry.py``); the run
module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Is, Learned
from inductionlab.experiments.wang.repeated_text import ABLATION_FLOOR, MIN_GAIN

# data seeds: what the power rule asks from the ledger's calibration 1000–1005 (docs/conventions.md#calibration, row
# repeated-text): all six learn to copy, and every claim holds its margin at three, the rule's floor.  The judged draws
# sit on never-run seeds after each protocol change (0–3 and 100–105 were seen at earlier code, 200–202 with the
# ablation margin before its floor at 0: docs/conventions.md#ablation)
DRAWS = 3
JUDGED_SEED = 300
CALIBRATION_DRAWS = 6  # the calibration keeps its six seeds (1000–1005), on which the margins were read

MARGIN = 0.25  # of the copying gain: how much more the induction head's ablation costs than its layer's others and 0
LEARNED_TEXT = 0.7  # final loss elsewhere / its start: the model learned the words' statistics at least
CONTROLS = (
    Control(
        name="plain-text",
        breaks="trained on plain chunks of text (--repeat false), measured on the same repeated validation "
        "sequences: at this budget plain text does not reward copying from the context, so no induction circuit forms",
        overrides={"repeat": False},
        preset=None,
        wall="~5 min",
    ),
    Control(
        name="adam",
        breaks="Adam (lr 3e-3) for SGD: it scales every coordinate's step to about lr, so the small W_K, W_Q move as "
        "fast as the slopes p and the time-scale separation that gradient descent's steps give is gone",
        overrides={"train.optimizer": "adam", "train.lr": 3e-3, "train.momentum": 0.0},
        preset=None,
        wall="~5 min",
    ),
)


TEXT_LEARNED = Learned(
    key="final.loss_other",
    over="initial.loss_other",
    test=Between(hi=LEARNED_TEXT),
    what=f"final loss off the repeated tokens ≤ {LEARNED_TEXT} of its start",
    shown="t_half_p_norm",
)


COPIES = Learned(
    key="copy_gain",
    test=Between(lo=MIN_GAIN),
    what=f"copying from the context gains ≥ {MIN_GAIN} nats at the end",
    shown="t_loss_drop",
)


CLAIMS = (
    Claim(
        id="wang-fig5r-p-first",
        paper="wang",
        where="Fig. 5 (repeat)",
        statement="‖p‖ is learned before ‖(W_K, W_Q)‖ doubles",
        key="p_learned_first",
        expected="p first",
        test=Is(True),
        control="adam",
        learned=TEXT_LEARNED,
    ),
    Claim(
        id="wang-fig5r-induction",
        paper="wang",
        where="Fig. 5 (repeat)",
        statement="An induction head forms on real text with a repeated half, wherever the model learned to copy",
        key="final_induction_score",
        expected="an induction head forms",
        test=Between(lo=0.3),
        control="plain-text",
        learned=COPIES,  # what "learned" means on this task: the repeat copied (docs/conventions.md#learned)
    ),
    Claim(
        id="wang-fig5r-drop",
        paper="wang",
        where="Fig. 5 (repeat)",
        statement="The loss drop on repeated tokens coincides with the induction head's formation",
        key="drop_vs_induction_gap_fraction",
        expected="same time (within 10% of training)",
        test=Between(hi=0.1),
        control="plain-text",
        learned=COPIES,
    ),
    Claim(
        id="mech-ablation-last-layer",
        paper="wang",
        where="§4 (mechanism)",
        statement="Ablating the last layer's top induction head costs the most copying loss of that layer's heads, "
        f"ahead of the next head's cost and of 0 by at least {MARGIN} of the copying gain (docs/conventions.md#ablation)",
        key="induction_ablation_margin",
        expected="the induction head carries the copying",
        test=Between(lo=MARGIN),
        control="plain-text",
        learned=COPIES,
    ),
    Claim(
        id="mech-ablation-overall",
        paper="wang",
        where="§4.1, Theorem 4.1 and Remark 4.2: layer 1 attends to the adjacent token, layer 2 retrieves with it",
        statement="The circuit needs both of its heads: zero-ablating the layer-1 previous-token head and zero-ablating the "
        "layer-2 induction head each cost at least half of the larger of the two copying-loss increases and at least "
        f"{ABLATION_FLOOR / 2:g} of the copying gain",
        key="ablation_smaller_over_larger",
        expected="both heads necessary: smaller / larger ablation cost ≥ 0.5",
        test=Between(lo=0.5),
        control="plain-text",
        learned=COPIES,
    ),
)
