"""Seeds come from one function (docs/conventions.md#seeds): ``rng.derive`` and ``rng.generator``; no other module
seeds a generator or adds an offset to a seed."""

import re
from pathlib import Path

import pytest
import torch

import inductionlab
from inductionlab import rng

SRC = Path(inductionlab.__file__).parent
SEEDING = re.compile(r"manual_seed\(|default_rng\(|RandomState\(|SeedSequence\(|\bseeds?(\[0\])?\s*\+\s*\d")


def test_derive_names_each_stream():
    assert rng.derive(5) == 5 and rng.derive(5, "data") == 5
    assert rng.derive(5, "eval") == 6 and rng.derive(5, "eval", 2) == 8
    assert rng.derive(3, "stage", 1) == 3 + 2 * 7919
    with pytest.raises(ValueError, match="allowed"):
        rng.derive(0, "nope")
    with pytest.raises(ValueError, match="index"):
        rng.derive(0, "eval", -1)


def test_generator_is_seeded_by_derive():
    a = torch.rand(3, generator=rng.generator(4, "eval"))
    assert torch.equal(a, torch.rand(3, generator=torch.Generator().manual_seed(5)))


def test_no_module_seeds_a_generator_itself():
    found = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in sorted(SRC.rglob("*.py"))
        if p.name != "rng.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if SEEDING.search(line.split("#")[0])
    ]
    assert not found, "seeds derived outside inductionlab.rng:\n" + "\n".join(found)


def test_the_scanner_sees_a_hard_coded_seed():
    assert SEEDING.search("g = torch.Generator().manual_seed(2024)")
    assert SEEDING.search("np.random.default_rng(seed)") and SEEDING.search("x = seeds[0] + 1")


def test_a_torch_generator_drives_the_numpy_samplers_reproducibly():
    from inductionlab.tasks import markov, scb

    cfg = markov.MarkovConfig(vocab_size=5, parents=(1, 3), L=16)
    g = rng.generator(0)
    first, kernels = markov.sample(cfg, 8, g)
    again, _ = markov.sample(cfg, 8, rng.generator(0))
    later, _ = markov.sample(cfg, 8, g)  # the generator moved on
    assert torch.equal(first, again) and not torch.equal(first, later)
    assert first.dtype == torch.int64 and int(first.max()) < 5 and kernels.shape == (8, 5**2, 5)
    P = scb.random_instance(scb.SCBConfig(N=4, T=6, Q=2), 2, rng.generator(1)).P
    assert torch.equal(P, scb.random_instance(scb.SCBConfig(N=4, T=6, Q=2), 2, rng.generator(1)).P)
    numpy_gen = rng.numpy_generator(3)
    assert rng.as_numpy(numpy_gen) is numpy_gen  # the built-in experiments' generators pass through
    with pytest.raises(TypeError, match="torch.Generator"):
        rng.as_numpy(3)
