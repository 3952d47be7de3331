"""Golden numbers: every registered experiment's ``smoke`` preset, run in float32 on one thread, gives the numbers
recorded before the last refactor, within a tolerance fitted to each quantity's precision
(docs/conventions.md#portable-numbers):

* deterministic float64 (closed forms, gradient flow, mutual information): relative 1e-9;
* float32 training: a relative tolerance per experiment, above the spread measured between CPU kernel paths
  (``ATEN_CPU_CAPABILITY`` default / avx2 / avx512, and the AVX2-only machine that recorded the goldens);
* values near zero (a loss change of 1e-6, a gradient): an absolute floor per experiment.

That a refactor changes no number is a property of one machine: ``test_the_same_run_twice_is_bit_for_bit_equal``
runs smoke runs again in the same session and compares with ``==``.  A change that must alter the order of random
draws re-records the goldens in its own commit (``INDUCTIONLAB_REGOLD=1 pytest tests/test_golden.py``) and says
why in the commit message.

What is compared: every leaf of ``summary.json`` recorded in the golden (less wall time, versions and the config
hash) and, for every table, its row count and the sum and last value of each numeric column.  A value recorded
must stay (within its tolerance); a key added since (a new column, a new summary entry) is not a change."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from inductionlab import experiments, run_experiment
from inductionlab.cli import resolve
from inductionlab.config import flatten
from inductionlab.store.audit import FLOAT64, TOLERANCES  # one table: the goldens' and the ledger audit's

GOLDEN = Path(__file__).parent / "golden"
VOLATILE = {
    "wall_seconds",
    "profile",
    "versions",
    "config_hash",
    "experiment",
    "code",
}  # code: the closure (#provenance)


def _leaves(obj, prefix=""):
    """Numeric leaves of a JSON value as {dotted path: float}, lists indexed by position."""
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    elif isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return {prefix: obj}
    else:
        return {prefix: float(obj)}
    out = {}
    for k, v in items:
        if (prefix == "" and k in VOLATILE) or k == "wall_seconds":  # also a part's own wall time (hf.wall_seconds)
            continue
        out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def _table_digest(df: pd.DataFrame) -> dict:
    out = {"rows": len(df)}
    for col in df.columns:
        values = df[col]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            v = values.to_numpy(np.float64)
            out[col] = [float(np.nansum(v)), float(v[-1]) if len(v) else None]
    return out


def digest(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    tables = {p.stem: _table_digest(pd.read_parquet(p)) for p in sorted(run_dir.glob("*.parquet"))}
    return {"summary": _leaves(summary), "tables": _leaves(tables)}


BIT_FOR_BIT = sorted(experiments.REGISTRY)
_FIRST: dict[str, dict] = {}  # digests of this session's golden runs, for the bit-for-bit test


def _close(want, got, rtol: float, atol: float) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return abs(got - want) <= atol + rtol * abs(want)
    return want == got


def golden_digest(name: str, out: Path) -> dict:
    """The digest of experiment ``name``'s smoke run into ``out``, in float32 (bf16 autocast off) on one thread."""
    overrides = {"bf16": "off"} if "bf16" in flatten(experiments.get(name).config) else {}
    run_dir = run_experiment(name, resolve(name, "smoke", overrides), out, threads=1)
    return json.loads(json.dumps(digest(run_dir)))  # the JSON round trip the golden file went through


def _shared(tmp_path_factory, name: str) -> Path:
    """Where this session's golden digest of ``name`` is kept for every pytest process (``-n 2``: the bit-for-bit test
    may run in the other worker; their temporary folders share a parent)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "golden-digests"
    folder.mkdir(exist_ok=True)
    return folder / f"{name}.json"


@pytest.mark.parametrize("name", sorted(experiments.REGISTRY))
def test_smoke_numbers_match_the_goldens(name, tmp_path, tmp_path_factory):
    got = _FIRST[name] = golden_digest(name, tmp_path / name)
    shared = _shared(tmp_path_factory, name)
    shared.with_suffix(".tmp").write_text(json.dumps(got))
    shared.with_suffix(".tmp").replace(shared)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("INDUCTIONLAB_REGOLD") == "1":
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    rtol, atol = TOLERANCES.get(name, FLOAT64)
    for part in ("summary", "tables"):
        diff = {k: (v, got[part].get(k)) for k, v in want[part].items() if not _close(v, got[part].get(k), rtol, atol)}
        assert not diff, (
            f"{name} {part} differs from the golden beyond rtol {rtol}, atol {atol}: {dict(list(diff.items())[:8])}"
        )


@pytest.mark.parametrize("name", BIT_FOR_BIT)
def test_the_same_run_twice_is_bit_for_bit_equal(name, tmp_path, tmp_path_factory):
    shared = _shared(tmp_path_factory, name)
    first = _FIRST.get(name) or (json.loads(shared.read_text()) if shared.exists() else None)
    first = first or golden_digest(name, tmp_path / "first")
    assert golden_digest(name, tmp_path / "second") == first


def test_the_tolerances_can_fail():
    """The comparison is a real one: a change just outside a tolerance, or a NaN for a number, fails it."""
    rtol, atol = 1e-3, 1e-6
    assert _close(1.0, 1.0 + 0.9e-3, rtol, atol) and not _close(1.0, 1.0 + 1.1e-3 + atol, rtol, atol)
    assert not _close(1e-7, 2e-6, rtol, atol) and not _close(0.5, float("nan"), rtol, atol)
    assert not _close(0.1, 0.1 + 1e-8, *FLOAT64) and _close(0.1, 0.1 + 1e-12, *FLOAT64)
