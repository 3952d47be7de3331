"""Every intervention on every experiment that offers it (``--intervene.freeze / clamp / ablate``,
docs/conventions.md#mech), at the smoke preset: on one seed and on two, and the two-seed run interrupted at its
second step and resumed gives the uninterrupted run's summary (a hook's state belongs to one training, and its
checkpointed state comes back with it)."""

import json

import pytest

from inductionlab import experiments
from inductionlab.config import flatten
from inductionlab.runner import run_experiment
from tests.conftest import CtrlCAt

TOY = {"freeze": "layer1@0:20", "clamp": "w_KQ=0.01@0:20"}
CHEN = {"freeze": "copier@0:3", "clamp": "classifier=0.5@0:3"}
TRANSFORMER = {"freeze": "layer1@0:4", "clamp": "blocks.0.attn.p=0.1@0:4", "ablate": "blocks.0.attn"}
FAMILIES = {
    "lazy-to-rich": TOY,
    "lazy-to-rich-boolean": TOY,
    "joint-training": TOY,
    "markov-stages": CHEN,
    "markov-joint": CHEN,
    "markov-transformer": TRANSFORMER,
    "wikitext": TRANSFORMER,
    "repeated-text": TRANSFORMER,
}
CASES = [(name, kind) for name, kinds in FAMILIES.items() for kind in kinds]
VOLATILE = {"wall_seconds", "wall_seconds_segments", "profile", "versions", "threads", "threads_from"}


def test_the_table_covers_every_experiment_that_offers_interventions():
    offered = {n for n, e in experiments.REGISTRY.items() if "intervene.freeze" in flatten(e.config)}
    assert offered == set(FAMILIES)


def _numbers(run_dir):
    summary = json.loads((run_dir / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in VOLATILE}


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_an_intervention_runs_on_one_and_two_seeds_and_resumes_exactly(name, kind, tmp_path):
    first = experiments.configure(name, "smoke").seeds[0]
    one = experiments.configure(name, "smoke", {f"intervene.{kind}": FAMILIES[name][kind], "seeds": str(first)})
    run_experiment(name, one, tmp_path / "one", threads=1)
    two = experiments.configure(
        name, "smoke", {f"intervene.{kind}": FAMILIES[name][kind], "seeds": f"{first},{first + 1}"}
    )
    whole = run_experiment(name, two, tmp_path / "whole", threads=1)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(name, two, tmp_path / "cut", threads=1, hooks=(CtrlCAt(0, 1),))
    cut = run_experiment(name, two, tmp_path / "cut", resume=True, threads=1)
    assert _numbers(cut) == _numbers(whole)
