"""The claims of ``markov-mi`` (Chen et al. §4.2, χ² MI) and its negative controls (docs/conventions.md#claims,
#controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS`` data draws.  The registry
attaches them to the experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Is

DRAWS = 4  # data seeds: each claim is judged on the mean over four draws (docs/conventions.md#claims)

CONTROLS = (
    Control(
        name="parents-13",
        breaks="the chain's parents are {1,3}: {1,2} is no longer the parent set (wrong parent set)",
        overrides={"task.parents": "1,3"},
        preset=None,
    ),
    Control(
        name="lag-agnostic-heads",
        breaks="copier heads at a lag-agnostic RPE (w_+ = w_− = 0): every head averages lags 1..3, so no subset copies its lags",
        overrides={"copier_logit": 0.0},
        preset=None,
    ),
)


CLAIMS = (
    Claim(
        id="chen-s4.2-mi-argmax",
        paper="chen",
        where="§3.3 (modified χ² mutual information), Thm 3.3 (S* = its argmax)",
        statement="The modified χ² mutual information is largest for the true parents {1,2} (over all S ⊆ {1,2,3})",
        key="argmax_modified_mi",
        expected="{1,2}",
        test=Is("{1,2}"),
        control="parents-13",
    ),
    Claim(
        id="chen-s4.2-gradient",
        paper="chen",
        where="§3.3, proof of Thm 3.3 (Stage I: the gradient on p_S is a·Ĩ_χ²(S) at small a)",
        statement="At initialisation the selector's gradient is proportional to the modified χ² MI",
        key="grad_mi_correlation",
        expected="correlation 1 (−∂L/∂p_S ≈ a·Ĩ(S))",
        test=Between(lo=0.99),
        control="lag-agnostic-heads",
    ),
)
