"""The claims of ``fast-induction`` (Olsson et al. 2022, monitor, three libraries) and its negative controls
(docs/conventions.md#claims, #controls): what ``reproduce`` judges of its runs.  The registry attaches them to the
experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Is, Learned
from inductionlab.experiments.across.fast_induction import CONFIG, LABELS
from inductionlab.experiments.across.fast_induction.libraries import MODELS

CONTROLS = (
    Control(
        name="shuffled-copies",
        breaks="each repeat of a window shuffled: tokens recur but their successors do not, so no induction head "
        "can predict them (the monitor still measures on exact repeats)",
        overrides={"task.copies": "shuffled"},
        preset=None,  # at the default, as the claims
    ),
    Control(
        name="drop-without-head",
        breaks="the head as in the claims' run, its rise timed against the repeated-token loss drop of a twin (same "
        "init) trained on shuffled copies: a loss drop that no induction head causes",
        overrides={"drop_from": "shuffled"},
        preset=None,
        wall="~2 min",  # every model twice
    ),
)


LEARNED_SHARE = 0.95  # a seed learned when its loss on repeated tokens ends at most this share of its start
WHERE = "Olsson et al. 2022, §3 (the induction-head phase change), in two CPU minutes"


def _learned(name: str) -> Learned:
    return Learned(
        key=f"{name}.final_loss_repeated",
        over=f"{name}.initial_loss_repeated",
        test=Between(hi=LEARNED_SHARE),
        what=f"the loss on the monitor's repeated tokens ends at most {LEARNED_SHARE} of its start (training moved "
        "the model; attending to the context's tokens alone reaches about 0.9)",
        shown=f"{name}.final_induction_score",
    )


def _claims(name: str) -> tuple[Claim, Claim]:
    label, steps = LABELS[name], getattr(CONFIG, name).steps
    return (
        Claim(
            id=f"fast-{name}-head",
            paper="olsson",
            where=WHERE,
            statement=f"The {label} forms an induction head within its {steps} training steps on every seed",
            key=f"{name}.formed",
            seeds=3,
            expected="on every seed a phase step located: the best head's fitted score rises by > 0.2 to ≥ 0.3 of the "
            "way from chance to attainable (docs/monitor.md#phase-detection)",
            test=Is(True),
            control="shuffled-copies",
            learned=_learned(name),
        ),
        Claim(
            id=f"fast-{name}-coincide",
            paper="olsson",
            where=WHERE,
            statement=f"The {label}'s loss on repeated tokens drops while its induction head forms, on every seed",
            key=f"{name}.coincides",
            seeds=3,
            expected="on every seed, stage by stage: the loss's change point inside each stage of the head's fitted "
            "rise, ± one measurement, and no drop of the loss outside them (docs/monitor.md#phase-detection)",
            test=Is(True),
            control="drop-without-head",
            learned=_learned(name),
        ),
    )


CLAIMS = tuple(claim for name in MODELS for claim in _claims(name))
