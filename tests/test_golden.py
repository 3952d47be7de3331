"""Golden numbers: every registered experiment's ``smoke`` preset, run on one thread, gives exactly the numbers
recorded before the last refactor.  A refactor changes no number; a change that must alter the order of random
draws re-records the goldens in its own commit (``INDUCTIONLAB_REGOLD=1 pytest tests/test_golden.py``) and says
why in the commit message.

What is compared: every leaf of ``summary.json`` recorded in the golden (less wall time, versions and the config
hash) and, for every table, its row count and the sum and last value of each numeric column.  A value recorded
must stay the same; a key added since (a new column, a new summary entry) is not a change."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from inductionlab import experiments, run_experiment
from inductionlab.cli import resolve

GOLDEN = Path(__file__).parent / "golden"
VOLATILE = {"wall_seconds", "versions", "config_hash", "experiment"}


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
        if prefix == "" and k in VOLATILE:
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


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


@pytest.mark.parametrize("name", sorted(experiments.REGISTRY))
def test_smoke_numbers_match_the_goldens(name, tmp_path):
    out = run_experiment(name, resolve(name, "smoke", {}), tmp_path / name, threads=1)
    got = json.loads(json.dumps(digest(out)))  # the JSON round trip the golden file went through
    path = GOLDEN / f"{name}.json"
    if os.environ.get("INDUCTIONLAB_REGOLD") == "1":
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    for part in ("summary", "tables"):
        diff = {k: (v, got[part].get(k)) for k, v in want[part].items() if not _same(v, got[part].get(k))}
        assert not diff, f"{name} {part} differs from the golden: {dict(list(diff.items())[:8])}"
