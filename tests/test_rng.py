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
