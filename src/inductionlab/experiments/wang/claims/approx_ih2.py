"""The claims of ``approx-ih2`` (Wang et al. Theorem 4.1) and its negative controls (docs/conventions.md#claims,
#controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS`` data draws.  The registry
attaches them to the experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Near

DRAWS = 4  # data seeds: each claim is judged on the mean over four draws (docs/conventions.md#claims)

CONTROLS = (
    Control(
        name="no-copy",
        breaks="layer 1's value matrices zeroed: layer 1 copies no previous token, so layer 2 has nothing to match",
        overrides={"copy_previous": False},
        preset=None,  # the claims' own preset (quick is the default)
    ),
)


CLAIMS = (
    Claim(
        id="wang-thm4.1-bound",
        paper="wang",
        where="§4.1, Theorem 4.1 (two-layer single-head TF, error O(e^{−p}) uniformly in L; our constant 4B³‖W*‖₂)",
        statement="The two-layer construction fits IH_2 within 4B³‖W*‖e^{−p}, at every L",
        key="max_error_over_bound",
        expected="error / bound ≤ 1",
        test=Between(hi=1.0),
        control="no-copy",
        if_failed="open: the bound is our explicit constant for the theorem's O(e^{−p}); a failure means the "
        "construction or the constant is wrong",
    ),
    Claim(
        id="wang-thm4.1-rate",
        paper="wang",
        where="§4.1, Theorem 4.1 (error O(e^{−p}) in the layer-1 slope p, uniformly in L)",
        statement="The error decays like e^{−p} in the layer-1 slope, free of L",
        key="decay_rate_fit",
        expected="rate 1",
        test=Near(1.0, atol=0.1),
        control="no-copy",
    ),
)
