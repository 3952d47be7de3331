"""A referee's spot check of the ledger (docs/conventions.md#ledger): re-make some current entries and compare each
measurement the claims read with the committed one.

Within a tolerance per experiment (:func:`tolerance`): the larger of the golden tests' (:data:`TOLERANCES`: float64
relative 1e-9, float32 training about ten times the spread measured between CPU kernel paths at the smoke budgets)
and the spread measured between CPUs at the page's full budget (:data:`CROSS_CPU`).  The same seed, threads and
machine give the same numbers bit for bit (docs/conventions.md#portable-numbers), and the audit says where they did.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from inductionlab import experiments
from inductionlab.analysis.claims import MISSING, lookup

FLOAT64 = (1e-9, 1e-12)  # (rtol, atol) of deterministic float64 quantities (closed forms, flow, MI, SCB)
# (rtol, atol) of float32 training paths: about 10× the largest change measured between kernel paths (`python -m
# tests.golden_spread`; docs/conventions.md#portable-numbers has the measured spreads).  Unlisted: FLOAT64.
TOLERANCES: dict[str, tuple[float, float]] = {
    "adam-vs-gd-highdim": (3e-6, 1e-9),  # measured 2.2e-7
    "heads-dims": (3e-6, 1e-9),  # 2.1e-7
    "fast-induction": (1e-5, 1e-9),  # float32 toolkit loop, transformers and TransformerLens; spread not measured yet
    "hf-induction": (1e-5, 1e-9),  # float32 Trainer + fit_lm; spread not measured yet
    "interventions": (2e-5, 1e-9),  # 1.6e-6
    "joint-training": (3e-6, 1e-9),  # 2.8e-7
    "lazy-to-rich": (3e-6, 1e-9),  # 2.9e-7
    "lazy-to-rich-boolean": (3e-6, 1e-9),  # 2.4e-7
    "markov-full": (2e-5, 1e-9),  # 0 here; the Chen trainer moved 1.5e-6 in markov-stages
    "markov-joint": (5e-5, 1e-8),  # 5.1e-6; 1.6e-9 absolute on a p_selected of 6e-6 (scalar kernels)
    "markov-length-generalization": (2e-5, 1e-9),  # 1.3e-7
    "markov-stages": (2e-5, 1e-9),  # 1.5e-6
    "markov-transformer": (1e-5, 1e-9),  # 9.0e-7
    "plateau-scaling": (1e-5, 1e-9),  # 9.3e-7 (SGD runs; the ODE solver's adaptive steps 3.2e-8)
    "probe": (5e-2, 1e-6),  # 1.1e-2: the least-squares probe of an untrained layer is ill-conditioned
    "repeated-text": (2e-6, 3e-5),  # 1.3e-7; ablation loss changes near 1e-6 move by 2.4e-6
    "wikitext": (1e-6, 1e-9),  # 4.3e-8
}

PRECISIONS = {"bf16 autocast": "on", "float32": "off"}  # a summary's recorded precision → the bf16 key that makes it

# (rtol, atol) of each experiment's read measures re-made on another CPU kind at the page's full budget (the goldens'
# smoke budgets train too briefly to show it): about 10× the largest change measured between an entry and its
# re-make on another kernel path (`python -m tests.ledger_spread`; docs/conventions.md#portable-numbers has each
# measurement).  Unlisted: the change measured was within the golden tolerance.
CROSS_CPU: dict[str, tuple[float, float]] = {
    "approx-gihn": (3e-5, 1e-12),  # 2.8e-6: the fitted rate, Intel against AMD (and AVX2)
    "approx-ihn": (6e-6, 3e-11),  # 3e-8 read; a resolved error (error / bound reads one row) moves by 5.6e-7
    "fast-induction": (6e-3, 1e-9),  # 5.1e-4: a final loss of the TransformerLens model, AVX2 against AVX-512
    "markov-full": (7e-4, 1e-9),  # 6.1e-5: a z-score of the authors' configuration, Intel against AMD (and AVX2)
    "plateau-scaling": (3e-3, 1e-9),  # 2.8e-4: an exponent fitted on the SGD runs, AVX2 against AVX-512
}

# Experiments whose training amplifies another kernel path's rounding into a change as large as another data draw's
# (measured at the full budget, docs/conventions.md#portable-numbers): re-made on another CPU kind they are another
# draw, so a tolerance wide enough to pass them could not tell a wrong entry; the audit re-makes them only on the
# CPU kind that made them.
ONE_PATH = frozenset({"heads-dims", "hf-induction", "probe", "repeated-text", "wikitext"})


def as_made(config: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with its ``bf16`` key set to the precision ``summary`` records, so that a run made under bf16
    autocast is re-made under it on any CPU (docs/conventions.md#bf16-training: ``auto`` would train in float32
    where the CPU lacks AVX512-BF16 and AMX, another protocol)."""
    made = dict(config)
    if "bf16" in made and summary.get("precision") in PRECISIONS:
        made["bf16"] = PRECISIONS[summary["precision"]]
    return made


def read_keys(experiment: str) -> list[str]:
    """The summary keys experiment ``experiment``'s claims read: each claim's key and ``over``, its learned gate's
    key, ``over`` and shown key."""
    keys: list[str] = []
    for claim in experiments.get(experiment).claims:
        keys += [claim.key, claim.over]
        if claim.learned is not None:
            keys += [claim.learned.key, claim.learned.over, claim.learned.shown]
    return [k for k in dict.fromkeys(keys) if k]


def comparable(entry: Mapping[str, Any], cpu_kind: str) -> bool:
    """Whether ``entry`` can be audited on a CPU of kind ``cpu_kind``: any entry on its own kind; on another, only one
    whose experiment re-makes within a tolerance that still tells its data draws apart (not in :data:`ONE_PATH`)."""
    return entry.get("cpu", {}).get("kind") == cpu_kind or entry["experiment"] not in ONE_PATH


def choose(entries: list[Mapping[str, Any]], n: int, seed: int, cheapest: bool) -> list[Mapping[str, Any]]:
    """``n`` of ``entries`` (current ledger entries): drawn at random with ``seed``, or the cheapest ``n``; each run
    once (entries of one key count once)."""
    unique = list({e["key"]["id"]: e for e in sorted(entries, key=lambda e: e["job"])}.values())
    if cheapest:
        return sorted(unique, key=lambda e: (float(e.get("core_minutes", 0.0)), e["job"]))[:n]
    return random.Random(seed).sample(unique, min(n, len(unique)))


def tolerance(experiment: str) -> tuple[float, float]:
    """(rtol, atol): the larger of the golden tolerance and the spread measured between CPUs at the page's budget
    (:data:`CROSS_CPU`).  The same CPU kind is no promise of the same bits: two AMD EPYC generations with AVX-512 and
    AVX512-BF16 (one kind) differ in float64's last bit (docs/conventions.md#portable-numbers)."""
    golden, measured = TOLERANCES.get(experiment, FLOAT64), CROSS_CPU.get(experiment, (0.0, 0.0))
    return (max(golden[0], measured[0]), max(golden[1], measured[1]))


def disagreements(
    committed: Mapping[str, Any], remade: Mapping[str, Any], keys: list[str], rtol: float, atol: float
) -> list[str]:
    """Each read key whose re-made value differs from the committed one beyond (``rtol``, ``atol``): "key:
    committed A, re-made B"."""
    out = []
    for key in keys:
        want, got = lookup(dict(committed), key), lookup(dict(remade), key)
        if not _close(want, got, rtol, atol):
            out.append(f"{key}: committed {_show(want)}, re-made {_show(got)}")
    return out


def _close(want: Any, got: Any, rtol: float, atol: float) -> bool:
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_close(w, g, rtol, atol) for w, g in zip(want, got))
    if isinstance(want, dict) and isinstance(got, dict):
        return set(want) == set(got) and all(_close(want[k], got[k], rtol, atol) for k in want)
    numbers = (int, float)
    if isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return abs(got - want) <= atol + rtol * abs(want)
    return want == got


def _show(value: Any) -> str:
    return "absent" if value is MISSING else repr(value)
