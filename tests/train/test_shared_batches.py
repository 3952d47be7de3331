"""Runs on the same data draw one batch (docs/conventions.md#shared-batches): the same numbers bit for bit as
each run drawing its own, the generators left where their own draws would leave them, and twins found only where
the generator state, the target and the frozen layer-1 rows all agree."""

from __future__ import annotations

import pytest
import torch

from inductionlab import rng
from inductionlab.models import toy
from inductionlab.runs import RunContext
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.train import toy_batches
from inductionlab.train.toy import ToyTrainConfig, train_toy


def _own_draws(states, target, a):
    return list(range(len(states)))


def test_twins_need_the_same_state_target_and_frozen_rows():
    states = [rng.generator(s).get_state() for s in (0, 1, 0, 0, 0)]
    target = MixedTarget.per_run([1.0, 1.0, 1.0, 0.5, 1.0], [0.49] * 5, 8)
    assert toy_batches.twins(states, target, None) == [0, 1, 0, 3, 0]
    a = torch.zeros(5, 6, 8)
    a[4, 0, 0] = 1.0  # run 4's frozen layer 1 differs: its keys differ
    assert toy_batches.twins(states, target, a) == [0, 1, 0, 3, 4]


@pytest.mark.parametrize("layer1", ["ideal", "learned"])
@pytest.mark.parametrize("seeds", [[3, 3], [0, 1, 0], [2, 2, 2, 2]])
def test_a_shared_stream_equals_own_draws(monkeypatch, layer1, seeds):
    batches, states = [], []
    for share in (True, False):
        if not share:
            monkeypatch.setattr(toy_batches, "twins", _own_draws)
        gens = [rng.generator(s, "stage", 1) for s in seeds]
        stream = toy_batches.BatchStream(
            MixedTarget.per_run([1.0] * len(seeds), [0.49] * len(seeds), 10), 16, gens, layer1, None, 4
        )
        batches.append([stream.next() for _ in range(9)])  # across block boundaries
        stream.close()
        states.append([g.get_state() for g in gens])
    for shared, own in zip(*batches):
        assert shared.targets.shape == own.targets.shape
        for name in ("x", "targets", "keys", "scores"):
            a, b = getattr(shared, name), getattr(own, name)
            assert (a is None) == (b is None)
            if a is not None:
                assert torch.equal(a.expand_as(b), b), name
    assert all(torch.equal(p, q) for p, q in zip(*states))


@pytest.mark.parametrize("seeds", [[0, 0, 0], [0, 1, 0]])
def test_training_on_shared_batches_is_bit_for_bit(monkeypatch, seeds):
    """Different starts on the same data (as the Lemma 5.4 companion): both stages, the same θ and metrics."""
    runs = len(seeds)
    theta0 = toy.init_params(0.01, runs) * (1 + 0.2 * torch.arange(runs).view(-1, 1))
    cfg = ToyTrainConfig(stage1_steps=60, stage2_steps=60, eval_every=30, eval_size=256, batch_size=64, compile="off")
    outs = []
    for share in (True, False):
        if not share:
            monkeypatch.setattr(toy_batches, "twins", _own_draws)
        target = MixedTarget.per_run([1.0] * runs, [0.49] * runs, 12)
        outs.append(train_toy(cfg, target, theta0.clone(), seeds, RunContext(threads=1)))
    assert torch.equal(outs[0].theta, outs[1].theta)
    assert outs[0].metrics.equals(outs[1].metrics)
