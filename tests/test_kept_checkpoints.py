"""``run --keep-checkpoints`` (docs/models.md#checkpoints-over-time): a checkpoint at every evaluation, over all
stages — each loads as the model it was at its step, with the layer 1 of its own stage — and a stage's end is not
overwritten by the next stage's start."""

import pandas as pd
import torch

from inductionlab import load_model
from inductionlab.cli import main
from inductionlab.loading import kept_steps


def test_a_two_stage_run_keeps_each_evaluation_as_the_model_of_its_own_stage(tmp_path):
    out = tmp_path / "run"
    argv = ["run", "lazy-to-rich", "--preset", "smoke", "--gf", "none", "--out", str(out), "--no-progress"]
    assert main([*argv, "--keep-checkpoints"]) == 0
    metrics = pd.read_parquet(out / "metrics.parquet")
    stages = metrics.groupby("stage", sort=False).step.max()
    ends = stages.cumsum()  # the global step at which each stage ends
    name, steps = kept_steps(out)
    first_end = int(ends.iloc[0])
    assert first_end in steps and len(steps) == len(set(steps))
    assert len(steps) == metrics.groupby(["stage", "step"]).ngroups - (len(stages) - 1)  # boundaries kept once
    at_end = torch.load(out / "checkpoints" / name / f"step-{first_end:09d}.pt", weights_only=False)
    assert at_end["stage"] == 0  # the end of Stage I, not Stage II's start
    assert load_model(out, step=steps[1]).config.layer1 == "learned"  # Stage I trains its own layer 1
    assert load_model(out, step=steps[-1]).config.layer1 == "ideal"
    final, last = load_model(out), load_model(out, step=steps[-1])
    assert all(torch.equal(final.params[k], last.params[k]) for k in final.params)
