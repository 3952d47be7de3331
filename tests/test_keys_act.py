"""Every key an experiment offers changes what its run does (docs/conventions.md#keys).

How: each experiment's ``smoke`` run, with its config tree instrumented, records the keys the run reads — a read of
a field of the config's own dataclass instances (or of a ``dataclasses.replace`` copy of one, for the fields the
copy did not overwrite: a value thrown away by ``replace`` is no read), made from ``run`` and below it, not from
dataclass machinery (``asdict``, ``replace``, ``__eq__``), the config helpers (``to_dict``, ``config_hash``) or
validation (``__post_init__``).  Every offered key must be read, or read in a second cheap configuration that
takes the branch where it acts (``BRANCHES``), or be one the experiment sets itself and so refuses to change
(``SET_HERE``).  Reading does not always imply acting — a value read and then overridden by another key — so the
pairs that were resolved into one source of truth have direct checks at the end."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from functools import cache

import pytest

from inductionlab import config as C
from inductionlab import experiments
from inductionlab.cli import resolve
from inductionlab.runner import context

IGNORED_FILES = {dataclasses.__file__, C.__file__, "<string>"}  # "<string>": dataclass-generated methods

# Keys read only on a branch the smoke preset does not take: the overrides that take it.
LR_COSINE = {"train.schedule": "cosine"}  # train.lr_final_fraction: the floor of the cosine schedule
BRANCHES = {
    "lazy-to-rich": {"train.optimizer": "gd"},  # train.n_samples: GD's finite sample
    "lazy-to-rich-boolean": {"train.optimizer": "gd", "literal": True},  # literal_layer1: the literal protocol's
    "joint-training": {"train.optimizer": "gd"},  # train.n_samples: GD's finite sample
    "interventions": {"train.optimizer": "gd", "tf_train.schedule": "cosine"},
    "plateau-scaling": {"train.optimizer": "gd"},
    "probe": {**LR_COSINE, "task.similarity": "rbf"},  # task.bandwidth: the RBF similarity's
    "heads-dims": {**LR_COSINE, "task.similarity": "rbf"},
    "adam-vs-gd-highdim": {"train.schedule": "cosine", "gd_readings": ("sum",)},  # gd_lr_sum: the diagnostic's
    "markov-transformer": {**LR_COSINE, "intervene.ablate": "blocks.0.attn"},
    "wikitext": {**LR_COSINE, "intervene.ablate": "blocks.0.attn"},
    "repeated-text": {**LR_COSINE, "intervene.ablate": "blocks.0.attn"},
    "scb-convergence": {"train.stage1_end": "signal"},  # train.rho: the signal threshold ending Stage 1
    "scb-softmax": {"train.stage1_end": "signal"},
    "scb-transfer": {"batch_per_log_T": 0.0},  # c_grid, calibration_tol: the calibration of c
}

# Keys of a shared section the experiment sets itself, one value per variant: a changed value is refused.
NO_ABLATION = {"intervene.ablate_mode": "mean"}  # intervene.ablate applies to the general transformer only
DATA_STREAM = {"train.seed": 3}  # the first seed sets the data stream (docs/conventions.md#seeds)
SET_HERE = {
    "lazy-to-rich": NO_ABLATION,
    "lazy-to-rich-boolean": NO_ABLATION,
    "plateau-scaling": {"train.stage2_steps": 50, "task.tokens": "uniform"},  # the closed forms are Gaussian
    "adam-vs-gd-highdim": {"train.optimizer": "adam", "train.lr": 0.2, **DATA_STREAM},
    "heads-dims": {"model.n_heads": 2, "model.d_model": 4, "train.seed": 3},  # seeds set each run's data stream
    "probe": {"train.seed": 3},  # the first seed sets the data stream
    "joint-training": {"train.schedule": "joint", "train.stage2_layer1": "ideal", **NO_ABLATION},
    "interventions": {"train.schedule": "joint", "train.stage2_layer1": "trained", "tf_train.seed": 3},
    "markov-stages": {"model.max_degree": 3, "model.loss": "softmax_of_probs", **NO_ABLATION},
    "markov-joint": {"model.loss": "softmax_of_probs", **NO_ABLATION},
    "markov-full": {"model.loss": "softmax_of_probs"},
    "scb-convergence": {"train.method": "sgd", **DATA_STREAM},
    "scb-softmax": DATA_STREAM,
    "scb-noise-sim": {"train.method": "sgd", "task.N": 4, "task.T": 60, **DATA_STREAM},
    "scb-transfer": {"task.T": 60, "train.stop_below": 0.05, **DATA_STREAM},  # stage2_target stops both arms
    "wikitext": DATA_STREAM,
    "repeated-text": DATA_STREAM,
    "markov-transformer": DATA_STREAM,
}


def _tree(obj, prefix=""):
    yield prefix, obj
    for f in dataclasses.fields(obj):
        value = object.__getattribute__(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from _tree(value, f"{prefix}{f.name}.")


def _counts(frame) -> bool:
    """A read made by the run, not by dataclass machinery, the config helpers or validation."""
    if frame.f_code.co_filename in IGNORED_FILES:
        return False
    for _ in range(8):
        if frame is None:
            return True
        if frame.f_code.co_name == "__post_init__":
            return False
        frame = frame.f_back
    return True


@contextlib.contextmanager
def recording(cfg):
    """Record, into the yielded set, the dotted keys of ``cfg`` that are read (see the module docstring)."""
    origin = {id(inst): (inst, prefix, frozenset()) for prefix, inst in _tree(cfg)}  # instance, key prefix, dropped
    classes = {type(inst) for _, inst in _tree(cfg)}
    names = {c: {f.name for f in dataclasses.fields(c)} for c in classes}
    reads: set[str] = set()
    real_replace = dataclasses.replace

    def replace(obj, /, **changes):
        new = real_replace(obj, **changes)
        rec = origin.get(id(obj))
        if rec is not None and rec[0] is obj:
            origin[id(new)] = (new, rec[1], rec[2] | set(changes))
        return new

    def getattribute(self, name, _get=object.__getattribute__):
        rec = origin.get(id(self))
        if rec is not None and rec[0] is self and name in names[type(self)] and name not in rec[2]:
            if _counts(sys._getframe(1)):
                reads.add(rec[1] + name)
        return _get(self, name)

    modules = [m for m in list(sys.modules.values()) if getattr(m, "replace", None) is real_replace]
    with pytest.MonkeyPatch.context() as mp:
        for c in classes:
            mp.setattr(c, "__getattribute__", getattribute, raising=False)
        mp.setattr(dataclasses, "replace", replace)
        for m in modules:
            mp.setattr(m, "replace", replace)
        yield reads


def _leaf_reads(reads: set[str], cfg) -> set[str]:
    return reads & set(C.flatten(cfg))


@cache
def _run(name: str, overrides: tuple = ()) -> frozenset[str]:
    """The keys read by experiment ``name``'s smoke run with ``overrides`` (no figures drawn)."""
    cfg = resolve(name, "smoke", dict(overrides))
    with recording(cfg) as reads:
        experiments.get(name).run(cfg, context(cfg, threads=1))  # the runner's context; no directory, no checkpoints
    return frozenset(_leaf_reads(reads, cfg))


@pytest.mark.parametrize("name", sorted(experiments.REGISTRY))
def test_every_key_acts(name):
    cfg = resolve(name, "smoke", {})
    refused = SET_HERE.get(name, {})
    unread = set(C.flatten(cfg)) - _run(name) - set(refused)
    if unread and name in BRANCHES:
        unread -= _run(name, tuple(BRANCHES[name].items()))
    assert not unread, f"{name}: keys offered that the run never reads: {sorted(unread)}"
    for key, value in refused.items():
        with pytest.raises(C.ConfigError):  # naming the key, or (a joint schedule) the key it needs changed too
            experiments.configure(name, "smoke", {key: value})


def test_branch_overrides_are_needed():
    """Each BRANCHES entry takes a branch the smoke preset does not (an entry that adds nothing is stale)."""
    for name, overrides in BRANCHES.items():
        assert _run(name, tuple(overrides.items())) - _run(name), f"{name}: the BRANCHES overrides read no new key"


def test_vocabulary_is_one_key():
    """A model takes its vocabulary (and token width) from the task, the corpus or ``tf_vocab``: no second key."""
    for name, exp in experiments.REGISTRY.items():
        keys = C.flatten(exp.config)
        if name in ("probe", "heads-dims"):  # real-valued tokens: no vocabulary
            continue
        doubled = [k for k in keys if "model." in k and k.rsplit(".", 1)[1] in ("vocab", "vocab_size", "d_out")]
        assert not doubled, f"{name} offers {doubled} beside the task's vocabulary"


def test_markov_transformer_trains_task_parents():
    cfg = resolve("markov-transformer", "smoke", {"task.parents": "1,3", "compare": "2"})
    assert cfg.settings == ("2", "1+3")
    with pytest.raises(C.ConfigError, match="compare"):
        resolve("markov-transformer", "smoke", {"compare": "1+2"})  # task.parents is 1,2


@pytest.mark.parametrize("name", ["markov-full", "markov-transformer"])
def test_a_larger_vocabulary_trains(name):
    """The model follows task.vocab_size (two keys that had to agree crashed with a tensor-size error)."""
    over = {"task.vocab_size": 5}
    if name == "markov-full":  # the authors' shifted windows hold 4⁶ states at d = 3 only
        over |= {"train.epochs": "2", "authors_model.windows": "shared", "authors_model.window": 3}
    cfg = resolve(name, "smoke", over)
    results = experiments.get(name).run(cfg, context(cfg, threads=1))
    assert results.summary
