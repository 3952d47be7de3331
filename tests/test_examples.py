"""The scripts in examples/ run, at their --smoke size."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(script, tmp_path):
    done = subprocess.run(
        [sys.executable, str(script), "--smoke"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
    assert not re.search(r"\bnan\b", done.stdout, re.I), done.stdout[-2000:]  # a number, or "not reached at this size"


def test_there_are_five_examples():
    assert len(EXAMPLES) == 5


def test_the_trainer_example_forms_a_head_stops_at_it_and_logs_to_tensorboard(tmp_path):
    """examples/hf_trainer_monitor.py in full: a head within its 800 steps, the stop soon after the located step,
    and the monitor's tags and its figure in the TensorBoard events."""
    pytest.importorskip("transformers")
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    script = Path(__file__).parents[1] / "examples" / "hf_trainer_monitor.py"
    done = subprocess.run(
        [sys.executable, str(script), "--out", "o"], cwd=tmp_path, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r"phase change: layer \d head \d at step (\d+).*\nstopped at step (\d+) of 800", done.stdout)
    assert found, done.stdout
    located, stopped = map(int, found.groups())
    phase = json.loads((tmp_path / "o" / "monitor" / "monitor_phase.json").read_text())
    lag = (phase["rise_end"] - phase["rise_start"]) / 2 + phase["config"]["confirm"] * 25  # docs/monitor.md's lag
    assert stopped < 800 and 0 <= stopped - located <= lag, done.stdout
    (events,) = {p.parent for p in (tmp_path / "o" / "runs").rglob("events.out.tfevents.*")}
    tags = EventAccumulator(str(events)).Reload().Tags()
    assert {"train/monitor/best_induction", "train/monitor/phase_step", "train/monitor/chance_induction"} <= set(
        tags["scalars"]
    )
    assert "monitor/figure" in tags["images"]  # the heatmap, at the phase change and at the end
