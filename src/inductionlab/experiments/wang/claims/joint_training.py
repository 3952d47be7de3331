"""The claims of ``joint-training`` (Wang et al. §5, stages) and its negative controls (docs/conventions.md#claims,
#controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS`` data draws.  The registry
attaches them to the experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control

DRAWS = 4  # data seeds: each claim is judged on the mean over four draws (docs/conventions.md#claims)

CONTROLS = (
    Control(
        name="layer1-frozen",
        breaks="p̃ frozen at σ_init in every schedule: layer 1 never becomes a previous-token head, so joint training has "
        "no keys y_s ≈ x_{s−1} for the induction head",
        overrides={"intervene.freeze": ("p_tilde",)},
        preset=None,  # the default: at quick (20k Stage-II steps) the intact joint run has not reached T_III either
    ),
)


CLAIMS = (
    Claim(
        id="wang-s5-joint",
        paper="wang",
        where="§5 (stages)",
        statement="Joint training passes through the same transition as the idealised layerwise protocol, at a similar time",
        key="joint.T_III",
        expected="T_III(joint) ≈ T_III(layerwise)",
        test=Between(0.8, 1.25),
        over="layerwise-ideal.T_III",
        control="layer1-frozen",
    ),
)
