"""A hook's state belongs to one training (train/loop.py ``Hook.reset``): an intervention that serves several trainers
of one run (lazy-to-rich's Stage I, Stage II and its companion runs, each with its own number of runs) starts each
with nothing held, and a run interrupted and resumed gives the uninterrupted run's numbers."""

import json

import pytest
import torch

from inductionlab import experiments
from inductionlab.runner import run_experiment
from inductionlab.train.hooks import FreezeColumns
from inductionlab.train.loop import Hook
from tests.conftest import CtrlCAt


def test_the_loop_resets_every_hook_when_a_training_starts():
    hook = FreezeColumns([0])
    hook._held = torch.zeros(2, 1)  # left by a training of two runs
    hook.reset()
    assert hook._held is None
    assert Hook().reset() is None  # the default forgets nothing


@pytest.mark.parametrize("seeds", ["0", "0,1"])
def test_freezing_layer_1_runs_through_every_trainer_of_lazy_to_rich_and_resumes_exactly(tmp_path, seeds):
    cfg = experiments.configure("lazy-to-rich", "smoke", {"intervene.freeze": "layer1", "seeds": seeds})
    whole = run_experiment("lazy-to-rich", cfg, tmp_path / "whole", threads=1)
    with pytest.raises(KeyboardInterrupt):
        run_experiment("lazy-to-rich", cfg, tmp_path / "cut", threads=1, hooks=(CtrlCAt(1, 30),))
    cut = run_experiment("lazy-to-rich", cfg, tmp_path / "cut", resume=True, threads=1)
    first, again = (json.loads((d / "summary.json").read_text()) for d in (whole, cut))
    assert first["final"] == again["final"] and first["T_50"] == again["T_50"]
