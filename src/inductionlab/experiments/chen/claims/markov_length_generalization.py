"""The claims of ``markov-length-generalization`` (Chen et al. Fig. 21) and its negative controls
(docs/conventions.md#claims, #controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS``
data draws.  The registry attaches them to the experiment when it imports it (``experiments/registry.py``); the run
module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control

DRAWS = 4  # data seeds: each claim is judged on the mean over four draws (docs/conventions.md#claims)

CONTROLS = (
    Control(
        name="bigram-estimator",
        breaks="the in-context bigram estimator (the lag-1 counts, Dirichlet(α) posterior mean) predicts in place of "
        "the trained model: an in-context learner without the parent pair {1,2}",
        overrides={"predictor": "bigram"},
        preset=None,
    ),
)


LONGEST = "1000"  # the length of the gap claims: ten times the training length
FALL_TO_BAYES = 0.2  # the excess over Bayes at L = 1000 at most this share of that at L = 10 (docs/chen.md)


def _length_claim(alpha: str) -> Claim:
    return Claim(
        id="chen-fig21-length" if alpha == "0.1" else f"chen-fig21-length-a{alpha}",
        paper="chen",
        where=f"Fig. 21 (rebuttal PDF): L ∈ {{10, …, 1000}}, α = {alpha}",
        statement=f"A model trained at L = 100, α = 0.1 and evaluated at α = {alpha} generalises to longer sequences: "
        "its loss falls with L toward the Bayes predictor's (its excess over Bayes at L = 1000 at most a fifth of "
        "that at L = 10), where an estimator without the parent structure falls too but not toward Bayes",
        key=f"gap_fall.{alpha}",
        expected="decreasing in L toward Bayes (gap 0.23–0.71 nats at L = 10, ≈ 0.006 at L = 1000)",
        test=Between(hi=FALL_TO_BAYES),
        control="bigram-estimator",
    )


def _gap_claim(alpha: str) -> Claim:
    return Claim(
        id=f"chen-fig21-gap-a{alpha}",
        paper="chen",
        where="rebuttal ('the model will generalize well as long as they maintain the same parent structure'), Fig. 21",
        statement=f"At α = {alpha} and L = 1000 (ten times the training length) the model is within 0.02 nats of Bayes",
        key=f"bayes_gap.{alpha}.{LONGEST}",
        expected="the trained model tends to the Bayes predictor as L grows (gap 0.23–0.71 nats at L = 10)",
        test=Between(hi=0.02),
        control="bigram-estimator",
    )


ALPHAS = ("0.1", "0.05", "0.2")
CLAIMS = (*(_length_claim(a) for a in ALPHAS), *(_gap_claim(a) for a in ALPHAS))
