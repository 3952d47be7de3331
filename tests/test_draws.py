"""Data draws (docs/conventions.md#claims): an experiment that ``reproduce`` runs at several data seeds must draw
other data at another seed, or its draws would repeat one outcome and the mean ± 2 s.d. would be a fiction.  Every
random stream a run draws from moves with its seeds (docs/conventions.md#seeds), save the evaluation sets, the
instrument every draw is measured with."""

import json
import sys
from pathlib import Path

import pytest
import torch

from inductionlab import experiments, rng, run_experiment
from inductionlab.cli import resolve
from inductionlab.config import flatten, with_seeds

DRAWN = sorted(n for n, e in experiments.REGISTRY.items() if e.draws > 1)
VOLATILE = {"wall_seconds", "profile", "versions", "config_hash"}
SRC = Path(rng.__file__).parent
# the functions that draw a fixed evaluation set (docs/conventions.md#seeds): the same set for every draw
EVALUATION_SETS = {
    ("train/transformer.py", "fit_induction"),
    ("train/text.py", "_evaluation_data"),
    ("train/toy_batches.py", "EvalSet.__init__"),
    ("experiments/wang/adam_vs_gd_highdim.py", "_train_one"),
    ("experiments/wang/repeated_text.py", "_ablation"),
    ("monitor/core.py", "*"),
}


class Streams:
    """The generators a run creates through :mod:`inductionlab.rng`, each with the seed it starts from, and which
    of them the run drew from (its state moved)."""

    def __init__(self, monkeypatch):
        self.made: list[tuple[tuple, object, object]] = []
        generator, numpy_generator = rng.generator, rng.numpy_generator

        def torch_one(seed, stream="data", index=0):
            gen = generator(seed, stream, index)
            return self._keep(("torch", rng.derive(seed, stream, index)), gen, gen.get_state())

        def numpy_one(seed, *mix):
            gen = numpy_generator(seed, *mix)
            return self._keep(("numpy", int(seed), *map(int, mix)), gen, json.dumps(gen.bit_generator.state))

        monkeypatch.setattr(rng, "generator", torch_one)
        monkeypatch.setattr(rng, "numpy_generator", numpy_one)

    def _keep(self, seed: tuple, gen, state):
        code = sys._getframe(2).f_code
        where = str(Path(code.co_filename).resolve().relative_to(SRC)) if SRC in Path(code.co_filename).parents else ""
        if (where, code.co_qualname) not in EVALUATION_SETS and (where, "*") not in EVALUATION_SETS:
            self.made.append((seed + (f"{where}:{code.co_qualname}",), gen, state))
        return gen

    def drawn(self) -> set[tuple]:
        """The seeds (with where each generator was made) of the generators the run drew from."""
        moved = set()
        for seed, gen, state in self.made:
            now = gen.get_state() if isinstance(gen, torch.Generator) else json.dumps(gen.bit_generator.state)
            if not (torch.equal(now, state) if isinstance(gen, torch.Generator) else now == state):
                moved.add(seed)
        return moved


def _run(name, cfg, out, monkeypatch):
    with monkeypatch.context() as patch:
        streams = Streams(patch)
        run_dir = run_experiment(name, cfg, out, threads=1)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in VOLATILE}, streams.drawn()


@pytest.mark.parametrize("name", sorted(experiments.REGISTRY))
def test_another_draw_draws_other_data(name, tmp_path, monkeypatch):
    """Every generator the run draws from, but an evaluation set's, starts elsewhere at another seed: a stream
    that a draw does not move (a trainer's batches from a fixed ``train.seed``) makes its draws one draw.  At smoke
    size a claim's value may not exist yet (a phase not reached, a key of the default size only), so a drawn
    experiment's whole summary is compared, in one process (bit for bit): some measured value must move."""
    overrides = {"bf16": "off"} if "bf16" in flatten(experiments.get(name).config) else {}
    cfg = resolve(name, "smoke", overrides)
    first, first_drawn = _run(name, cfg, tmp_path / "0", monkeypatch)
    other, other_drawn = _run(name, with_seeds(cfg, cfg.seeds[0] + 5003), tmp_path / "1", monkeypatch)
    fixed = {(seed[:-1], seed[-1]) for seed in first_drawn} & {(seed[:-1], seed[-1]) for seed in other_drawn}
    assert first_drawn and not fixed, f"{name}: streams that do not move with its seeds: {sorted(fixed)}"
    if name in DRAWN:
        assert first.keys() == other.keys()
        assert first != other, f"{name}: its summary does not move with the data seed: give it draws=1"
