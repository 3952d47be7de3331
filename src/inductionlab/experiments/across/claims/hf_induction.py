"""The claims of ``hf-induction`` (Olsson et al. 2022, monitor) and its negative controls
(docs/conventions.md#claims, #controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS``
data draws.  The registry attaches them to the experiment when it imports it (``experiments/registry.py``); the run
module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Is, Reached
from inductionlab.experiments.across.hf_induction import CONFIG

# data seeds: each claim is judged over three draws, what the power rule asks of every claim here from the ledger's
# calibration 1000–1003 (docs/conventions.md#calibration, "Draws from power"; no judged draw had run)
DRAWS = 3
# The phase detector's coincidence is judged stage by stage now (docs/monitor.md#phase-detection): a protocol
# change, so the judged draws move to never-run seeds (0–3 were seen under the one-ramp rule; #calibration)
JUDGED_SEED = 100

CONTROLS = (
    Control(
        name="attn-only-1-layer",
        breaks="one attention-only layer: no previous-token head can feed an induction head's keys",
        overrides={"model.n_layer": 1, "model.attn_only": True, "own.steps": CONFIG.measure.every},
        preset=None,  # the GPT-2 at its default, as the claims
        cheaper="the claims read the GPT-2's monitor (hf.*) alone, which keeps the default's data, size and steps; "
        "the toolkit's transformer (own.steps) trains after it and enters none of their keys",
    ),
)


WHERE = "Olsson et al. 2022, §3 (the induction-head phase change)"
SIZE = "open: this size and budget form the head on CPU (measured); a failure elsewhere asks for more steps"
CLAIMS = (
    Claim(
        id="olsson-hf-induction",
        paper="olsson",
        where=WHERE,
        statement="A two-layer GPT-2 trained by transformers.Trainer on repeated text forms an induction head",
        key="hf.final_induction_score",
        expected="an induction head (best score ≥ 0.3; the ideal head scores about 0.5 here)",
        test=Between(lo=0.3),
        control="attn-only-1-layer",
        if_failed=SIZE,
    ),
    Claim(
        id="olsson-hf-phase",
        paper="olsson",
        where=WHERE,
        statement="The monitor locates the GPT-2's induction-head phase change during training",
        key="hf.phase_step",
        expected="a phase step within the run",
        test=Reached(),
        control="attn-only-1-layer",
        if_failed=SIZE,
    ),
    Claim(
        id="olsson-hf-coincide",
        paper="olsson",
        where=WHERE,
        statement="The drop of the loss on repeated tokens coincides with the induction head's formation",
        key="hf.coincides",
        expected="stage by stage: the loss's change point inside each stage of the head's fitted rise, ± one "
        "interval, and no drop of the loss outside them (docs/monitor.md#phase-detection)",
        test=Is(True),
        control="attn-only-1-layer",
        if_failed=SIZE,
    ),
)
