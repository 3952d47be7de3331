"""Where every random number comes from (docs/conventions.md#seeds): a run's seed (one per entry of a config's
``seeds``, the run axis) and a named *stream* give the seed of one purpose — the run's data, its evaluation set,
a stage's fixed batch — through :func:`derive`, the one place a seed is derived.  Nothing else adds offsets to a
seed or hard-codes one.

The offsets are the ones the toolkit has always used, so that numbers stay those of earlier releases; a stream's
seeds are ``seed + offset·(index + 1)`` (``data``: the seed itself).  Two streams can meet (the ``eval`` stream of
seed 0 is the ``data`` stream of seed 1); they draw different things (another shape, another sampler), so no
run's data is another run's evaluation set.

Every public sampler takes a ``torch.Generator`` (:func:`generator`).  The few that draw with numpy (Dirichlet
kernels, SCB instances, random ReLU features) turn it into a numpy one with :func:`as_numpy`; they also take a
numpy ``Generator`` as it is — the built-in experiments pass :func:`numpy_generator`'s, which keeps their
published numbers."""

from __future__ import annotations

import numpy as np
import torch

AnyGenerator = torch.Generator | np.random.Generator  # what a sampler that draws with numpy takes

STREAMS: dict[str, int] = {
    "data": 0,  # the run's own data: the seed itself
    "eval": 1,  # a held-out evaluation or scoring set (index: which one, e.g. the i-th length)
    "transfer": 7,  # the second task of a transfer experiment
    "held-out": 2024,  # a held-out set shared by every run of an experiment (from the first seed)
    "stage": 7919,  # a stage's fixed batch under full-batch GD (index: the stage)
    "check": 104729,  # the inputs an accelerated path checks itself on against eager (models/fused.py)
}


def derive(seed: int, stream: str = "data", index: int = 0) -> int:
    """The seed of ``stream`` (one of :data:`STREAMS`) for the run with seed ``seed``; ``index`` numbers the
    stream's draws (0, 1, …): ``seed + STREAMS[stream]·(index + 1)``, or ``seed`` for ``data``."""
    if stream not in STREAMS:
        raise ValueError(f"seed stream {stream!r}: allowed {', '.join(STREAMS)}")
    if index < 0:
        raise ValueError(f"seed stream {stream!r}: index must be ≥ 0, got {index}")
    return int(seed) + STREAMS[stream] * (index + 1)


def generator(seed: int, stream: str = "data", index: int = 0) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with :func:`derive` ``(seed, stream, index)``."""
    return torch.Generator().manual_seed(derive(seed, stream, index))


def numpy_generator(seed: int, *mix: int) -> np.random.Generator:
    """A numpy ``Generator`` for the samplers that draw with numpy (Dirichlet kernels, SCB instances): seeded by
    ``seed`` (a :func:`derive` result) with the integers ``mix`` (an instance's T, a grid point) mixed in."""
    return np.random.default_rng([int(seed), *(int(m) for m in mix)])


def as_numpy(generator: AnyGenerator) -> np.random.Generator:
    """The numpy ``Generator`` a numpy-drawing sampler uses: a numpy one as it is; a ``torch.Generator`` seeds a
    new one from four 62-bit words of its own stream, so the same torch state gives the same numbers and the torch
    generator moves on (two calls draw different numbers)."""
    if isinstance(generator, np.random.Generator):
        return generator
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    words = torch.randint(0, 2**62, (4,), generator=generator, dtype=torch.int64)
    return np.random.default_rng(words.tolist())
