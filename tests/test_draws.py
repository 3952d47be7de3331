"""Data draws (docs/conventions.md#claims): an experiment that ``reproduce`` runs at several data seeds must draw
other data at another seed, or its draws would repeat one outcome and the mean ± 2 s.d. would be a fiction."""

import json

import pytest

from inductionlab import experiments, run_experiment
from inductionlab.cli import resolve
from inductionlab.config import flatten, with_seeds

DRAWN = sorted(n for n, e in experiments.REGISTRY.items() if e.draws > 1)
VOLATILE = {"wall_seconds", "profile", "versions", "config_hash"}


def _summary(name, cfg, out):
    run_dir = run_experiment(name, cfg, out, threads=1)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in VOLATILE}


@pytest.mark.parametrize("name", DRAWN)
def test_another_draw_draws_other_data(name, tmp_path):
    """At smoke size a claim's value may not exist yet (a phase not reached, a key of the default size only), so
    the whole summary is compared, in one process (bit for bit): some measured value must move with the seed."""
    overrides = {"bf16": "off"} if "bf16" in flatten(experiments.get(name).config) else {}
    cfg = resolve(name, "smoke", overrides)
    first = _summary(name, cfg, tmp_path / "0")
    other = _summary(name, with_seeds(cfg, cfg.seeds[0] + len(cfg.seeds)), tmp_path / "1")
    assert first.keys() == other.keys()
    assert first != other, f"{name}: its summary does not move with the data seed: give it draws=1"
