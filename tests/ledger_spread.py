"""Measure how far the ledger's read measures move when its entries are re-made on another kernel path, at the
page's full budget, to fit the audit's cross-CPU tolerances (:data:`inductionlab.store.audit.CROSS_CPU`).

    python -m tests.ledger_spread OUT JOB [JOB ...]            # re-make these entries as the audit does (this path)
    ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell \\
        python -m tests.ledger_spread OUT JOB [JOB ...]        # on the AVX2 kernels
    python -m tests.ledger_spread --compare OUT [OUT ...]      # per entry: the largest relative change per read key

An entry made on another CPU kind and re-made here measures that pair of kinds; one re-made on the AVX2 kernels
measures AVX2 against AVX-512 (the AVX2 machine's torch numbers, docs/conventions.md#portable-numbers).
``--compare`` also prints the smallest difference between two of the experiment's data draws (what an audit must
still tell apart).  docs/conventions.md#portable-numbers records the results."""

import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

from inductionlab.analysis.claims import MISSING, lookup
from inductionlab.reproduce import current, remake
from inductionlab.store.audit import read_keys
from inductionlab.store.ledger import Ledger
from tests.test_golden import _leaves

LEDGER = Path(__file__).parent.parent / "results"
DATA = Path(__file__).parent.parent.parent / "shared" / "data" / "wikitext-2"


def relative_change(want: Any, got: Any) -> float:
    """The largest |got − want|/|want| over the leaves (the goldens' :func:`~tests.test_golden._leaves`; inf where
    a leaf or the value is missing, or a non-number differs)."""
    if want is MISSING or got is MISSING:
        return 0.0 if want is got else math.inf
    a, b = _leaves(want, "value"), _leaves(got, "value")
    if set(a) != set(b):
        return math.inf
    worst = 0.0
    for k, x in a.items():
        y = b[k]
        if x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)):
            continue
        numbers = isinstance(x, float) and isinstance(y, float)
        worst = max(worst, abs(y - x) / max(abs(x), 1e-300) if numbers else math.inf)
    return worst


def compare(folders: list[str]) -> None:
    """Print, per re-made entry in ``folders``, its largest relative changes per read key and its experiment's
    smallest difference between two data draws."""
    book = Ledger(LEDGER)
    for folder in folders:
        for path in sorted(Path(folder).glob("*/summary.json")):
            job = path.parent.name
            entry = next(e for e in book.entries() if e["job"] == job)
            remade, name = json.loads(path.read_text()), entry["experiment"]
            changes = sorted(
                ((relative_change(lookup(entry["summary"], k), lookup(remade, k)), k) for k in read_keys(name)),
                reverse=True,
            )
            print(f"{job} (made on {entry['cpu']['kind']}, re-made in {folder}): largest {changes[0][0]:.2g}")
            for change, k in changes[:3]:
                print(f"    {k}: {change:.2g}")
            print(f"    smallest difference between two data draws: {_draws_apart(book, name):.2g}")


def _draws_apart(book: Ledger, name: str) -> float:
    """The smallest, over pairs of ``name``'s main run and data draws, of their largest read-key change."""
    jobs = {name} | {f"{name}.draw-{i}" for i in range(1, 100)}
    draws = [e["summary"] for e in book.entries() if e["job"] in jobs]
    keys = read_keys(name)
    return min(
        (
            max((relative_change(lookup(x, k), lookup(y, k)) for k in keys if lookup(x, k) is not MISSING), default=0.0)
            for x, y in itertools.combinations(draws, 2)
        ),
        default=math.inf,
    )


def main(argv: list[str]) -> None:
    """``OUT JOB…``: re-make the ledger's current entries JOB… into OUT/JOB; ``--compare OUT…``: :func:`compare`."""
    if argv[0] == "--compare":
        compare(argv[1:])
        return
    out, names = Path(argv[0]), argv[1:]
    entries = current(LEDGER, out / "plan", str(DATA))
    for name in names:
        job, entry = entries[name]
        remake(job, entry, out)


if __name__ == "__main__":
    main(sys.argv[1:])
