"""The runner's wall time over an interrupted run (docs/conventions.md#profile, :mod:`inductionlab.runs`): a run
stopped and resumed counts every segment — the one stopped by Ctrl-C with its own seconds, one killed (no chance
to write them) up to its last checkpoint — and summary.json's ``wall_seconds`` is their sum."""

import json
import os

import pytest

from inductionlab import experiments
from inductionlab.config import to_dict
from inductionlab.runner import run_experiment
from inductionlab.store import provenance
from tests.conftest import CtrlCAt

KILLED_FOR = 7.0  # seconds between a killed segment's start and its last checkpoint, set on the file's mtime


def test_wall_seconds_add_up_over_the_segments_of_a_resumed_run(tmp_path):
    cfg = experiments.configure("probe", "smoke", {"train.checkpoint_every": 5})
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C after step 12: a checkpoint at the boundary, then the stop
        run_experiment("probe", cfg, out, threads=1, hooks=(CtrlCAt(0, 12),))
    stopped = json.loads((out / "wall.json").read_text())
    assert stopped["running_since"] is None and len(stopped["segments"]) == 1 and stopped["segments"][0] > 0
    assert not (out / "summary.json").exists()

    # a second segment killed (SIGKILL: nothing written at its end) KILLED_FOR seconds after it began
    ckpt = next((out / "checkpoints").glob("*.pt"))
    began = ckpt.stat().st_mtime - KILLED_FOR
    (out / "wall.json").write_text(json.dumps({"segments": stopped["segments"], "running_since": began}))
    os.utime(ckpt, (began + KILLED_FOR, began + KILLED_FOR))

    run_experiment("probe", cfg, out, resume=True, threads=1)
    summary = json.loads((out / "summary.json").read_text())
    segments = summary["wall_seconds_segments"]
    assert len(segments) == 3 and segments[0] == stopped["segments"][0]
    assert segments[1] == pytest.approx(KILLED_FOR, abs=1e-3)  # up to its last checkpoint
    assert summary["wall_seconds"] == pytest.approx(sum(segments), rel=1e-12)
    assert summary["wall_seconds"] > segments[-1] + KILLED_FOR
    parts = summary["profile"]  # the last segment's (docs/conventions.md#profile)
    assert sum(v for k, v in parts.items() if k not in ("plot", "io", "startup")) == pytest.approx(
        segments[-1], abs=0.05
    )
    assert not (out / "wall.json").exists()  # the summary holds them all


def test_a_run_in_one_go_lists_no_segments_and_a_damaged_record_is_not_counted(tmp_path, caplog):
    cfg = experiments.configure("probe", "smoke", {"train.checkpoint_every": 5})
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_experiment("probe", cfg, out, threads=1, hooks=(CtrlCAt(0, 12),))
    (out / "wall.json").write_text("{not json")
    run_experiment("probe", cfg, out, resume=True, threads=1)
    summary = json.loads((out / "summary.json").read_text())
    assert "wall_seconds_segments" not in summary  # the damaged record is dropped (and said so): this segment only
    assert "wall.json is damaged" in caplog.text and summary["wall_seconds"] > 0

    whole = run_experiment("probe", cfg, tmp_path / "whole", threads=1)
    summary = json.loads((whole / "summary.json").read_text())
    assert "wall_seconds_segments" not in summary and summary["wall_seconds"] > 0  # one segment: no list
    assert sorted(p.name for p in whole.iterdir() if p.suffix == ".json") == ["config.json", "summary.json"]
    config = json.loads((whole / "config.json").read_text())  # a toolkit run's: its name, values and code, no plug-in
    assert config == {"experiment": "probe", **json.loads(json.dumps(to_dict(cfg))), "code": provenance.record("probe")}


def test_a_run_whose_measure_is_nan_stops_but_what_it_trained_stays(tmp_path, monkeypatch):
    """Exit 3 for a broken measure never deletes a run that trained (docs/conventions.md#never); a time that was
    never reached is no broken measure, and the run finishes."""
    import dataclasses
    import math

    import pandas as pd

    import inductionlab as il
    from inductionlab.runner import NaNResultsError

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        seeds: tuple[int, ...] = (0,)
        broken: bool = False

    def run(cfg, ctx):
        loss = math.nan if cfg.broken else 0.5
        table = pd.DataFrame({"step": [0, 1], "loss": [loss, loss], "loss_drop_step": [math.nan, math.nan]})
        return il.Results({"metrics": table}, {"loss_drop_step": None})

    exp = il.Experiment(name="nan-keeper", description="a time never reached", config=Cfg(), run=run)
    monkeypatch.setitem(experiments.REGISTRY, exp.name, exp)
    done = run_experiment(exp.name, Cfg(), tmp_path / "never", threads=1)
    assert (done / "summary.json").exists()  # loss_drop_step all NaN: never reached, not broken
    with pytest.raises(NaNResultsError, match="metrics.loss"):
        run_experiment(exp.name, Cfg(broken=True), tmp_path / "broken", threads=1)
    assert (tmp_path / "broken" / "metrics.parquet").exists() and (tmp_path / "broken" / "config.json").exists()
