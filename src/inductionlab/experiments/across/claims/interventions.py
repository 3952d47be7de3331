"""The claims of ``interventions`` (Wang et al. §5; Chen et al. §3) and its negative controls
(docs/conventions.md#claims, #controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS``
data draws.  The registry attaches them to the experiment when it imports it (``experiments/registry.py``); the run
module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Claim, Control, Is, Near
from inductionlab.experiments.across.interventions.arms import OTHER_SECTIONS_CUT

# data seeds: each claim is judged on the mean over three draws (docs/conventions.md#claims), what the power rule
# asks of every claim here from its calibration seeds (docs/conventions.md#calibration, "Draws from power")
DRAWS = 3

CHEN_CONTROL = Control(
    name="chen-lag-biased",
    breaks="the Chen arm that the claim reads keeps the paper's head-to-lag RPE (head h on lag h) frozen instead "
    "of a lag-agnostic one: the three two-lag subsets no longer look alike to the selector",
    overrides={"chen_lag_agnostic": False, **OTHER_SECTIONS_CUT},
    preset=None,
    cheaper="the claim reads the Chen section alone, which keeps the default's data, epochs and seeds; the toy and "
    "transformer sections, cut to a few steps, draw from their own generators and enter none of its keys",
)
CHEN_CLAIM = Claim(
    id="mech-chen-rpe-frozen",
    paper="chen",
    where="§3.2 Stage I (the FFN selector trains with the RPE at its initialisation, head h biased to lag h)",
    statement="The selector's choice of {1,2} rests on the copier's head-to-lag bias at initialisation: with the RPE "
    "frozen at a lag-agnostic initialisation (w₊ = w₋) the three two-lag subsets look alike to the selector, "
    "which splits its mass evenly over them: p_{1,2} = 1/3 instead of → 1",
    key="chen_rpe_frozen.p_selected_uniform_init_frozen",
    expected="p_{1,2} = 1/3 ({1,2}, {1,3}, {2,3} indistinguishable)",
    test=Near(1 / 3, atol=0.01),
    control="chen-lag-biased",
    if_failed="open: a lag-agnostic copier gives the three two-lag subsets the same features, so p_{1,2} can "
    "leave 1/3 only through the smaller subsets keeping mass or through round-off",
)

CONTROLS = (
    Control(
        name="no-intervention",
        breaks="every toy and transformer variant trains as its unintervened baseline (layer 1 free, w_KQ free, layer 1 "
        "not ablated), so each check compares a run with itself; the Chen section is cut to 5 epochs",
        overrides={"act": False, "chen_train.epochs": "5", "chen_n_samples": 120, "chen_n_val": 20},
        preset=None,  # the claims' own budget (docs/conventions.md#controls)
        wall="~4.5 min",
    ),
    CHEN_CONTROL,
)


CLAIMS = (
    Claim(
        id="mech-layer1-clamped",
        paper="wang",
        where="§5 (causal)",
        statement="With layer 1 held back (p̃ clamped) the induction head never emerges",
        key="checks.layer1_clamped_never_emerges",
        expected="no emergence",
        test=Is(True),
        control="no-intervention",
    ),
    Claim(
        id="mech-wkq-held",
        paper="wang",
        where="§5 (causal)",
        statement="Holding w_KQ until t₀ delays emergence by ≈ t₀ and leaves T_I alone",
        key="checks.wkq_held_T_50_shift_near_t0",
        expected="T_50 shifts by ≈ t₀",
        test=Is(True),
        control="no-intervention",
    ),
    Claim(
        id="mech-layer1-ablated",
        paper="wang",
        where="§5 (causal)",
        statement="With layer 1's heads ablated no induction head forms in a transformer",
        key="checks.layer1_ablated_no_induction_head",
        expected="score stays near its start",
        test=Is(True),
        control="no-intervention",
    ),
    CHEN_CLAIM,
)
