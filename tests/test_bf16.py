"""The goldens pin float32 (``--bf16 off``); this checks the bf16 path of the experiments that have one: their smoke
runs in bf16 autocast measure the claims' keys that float32 measures, each claim comes out as it does in float32, and the losses stay
within bf16's precision of the float32 run's (docs/conventions.md#portable-numbers).  On a CPU without AVX512-BF16
autocast emulates bf16: slower, the same numbers' precision."""

import json
import math
from dataclasses import replace

import pytest

from inductionlab import experiments, run_experiment
from inductionlab.analysis.verdicts import judge
from inductionlab.cli import resolve
from inductionlab.config import flatten

BF16 = sorted(n for n, m in experiments.REGISTRY.items() if "bf16" in flatten(m.config))


def test_the_bf16_capable_experiments_are_the_text_ones():
    assert BF16 == ["hf-induction", "repeated-text", "wikitext"]


@pytest.mark.parametrize("name", BF16)
def test_smoke_claims_hold_in_bf16_as_in_float32(name, tmp_path):
    summaries = {}
    for mode in ("off", "on"):
        out = run_experiment(name, resolve(name, "smoke", {"bf16": mode}), tmp_path / mode, threads=1)
        summaries[mode] = json.loads((out / "summary.json").read_text())
    assert summaries["on"]["precision"] == "bf16 autocast" and summaries["off"]["precision"] == "float32"
    measured = 0
    for claim in experiments.get(name).claims:
        # the claim's value itself (a smoke run does not learn: its Learned gate would hide the value)
        rows = {mode: judge(replace(claim, learned=None), s, gpu=bool(claim.needs)) for mode, s in summaries.items()}
        assert (rows["on"]["measured"] is None) == (rows["off"]["measured"] is None), (claim.id, rows)
        assert rows["on"]["status"] == rows["off"]["status"], (claim.id, rows)
        measured += rows["on"]["measured"] is not None
    assert measured >= 1  # a smoke run measures at least one claim: the comparison is not empty
    for key in ("final", "initial"):
        for metric, f32 in summaries["off"].get(key, {}).items():
            b16 = summaries["on"][key][metric]
            if "loss" in metric and isinstance(f32, float):
                assert math.isclose(b16, f32, rel_tol=0.03), (key, metric, b16, f32)
