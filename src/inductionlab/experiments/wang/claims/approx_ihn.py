"""The claims of ``approx-ihn`` (Wang et al. Theorem 4.3) and its negative controls (docs/conventions.md#claims,
#controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS`` data draws.  The registry
attaches them to the experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Is

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
        id="wang-thm4.3-bound",
        paper="wang",
        where="§4.2, Theorem 4.3 (H-head layer 1, D = nd, error ≤ C_{q,n}/H^q for every q)",
        statement="The H-head construction fits IH_n within the C/H^q bound",
        key="max_error_over_bound",
        expected="error / bound ≤ 1",
        test=Between(hi=1.0),
        control="no-copy",
    ),
    Claim(
        id="wang-thm4.3-rate",
        paper="wang",
        where="§4.2, Theorem 4.3 (H-head layer 1, D = nd, error ≤ C_{q,n}/H^q for every q)",
        statement="The error falls with H faster than every power: the local log–log slope q(H) = −Δlog error/Δlog H "
        "grows with H (its least-squares slope in log H, the smallest over n = 2, 3, 4)",
        key="local_slope_growth_min",
        expected="C_q/H^q for every q: q(H) unbounded (a power law C/H^q has dq/dlog H = 0; e^{−cH} has cH)",
        test=Between(lo=1.0),
        control="no-copy",
    ),
    Claim(
        id="wang-thm4.3-monotone",
        paper="wang",
        where="§4.2, Theorem 4.3 (H-head layer 1, D = nd, error ≤ C_{q,n}/H^q for every q)",
        statement="More heads give a smaller error (n = 3)",
        key="error_decreases_with_H.3",
        expected="decreasing in H",
        test=Is(True),
        control="no-copy",
    ),
)
