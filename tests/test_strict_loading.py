"""Damaged, missing or foreign files of a run directory: :func:`load_model` and :func:`to_hooked_transformer`
refuse them with a :class:`~inductionlab.loading.RunFileError` (exit status 2 on the command line, one line) that
names the file, never a raw torch / json error, and leave the files as they were."""

import json
import shutil

import pytest
import torch

from inductionlab import experiments
from inductionlab.cli_errors import exit_code, message
from inductionlab.config import ConfigError
from inductionlab.loading import RunFileError, load_model, to_hooked_transformer
from inductionlab.runner import run_experiment


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A probe run (synthetic tokens) and a repeated-text run (word tokenizer), smoke presets, made once."""
    made = {}
    for name in ("probe", "repeated-text"):
        cfg = experiments.configure(name, "smoke", {})
        made[name] = run_experiment(name, cfg, tmp_path_factory.mktemp(name), threads=1)
    return made


def _ckpt(run):
    return run / "checkpoints" / "ckpt.pt"


def _truncate(path, size=300):
    with open(path, "r+b") as f:
        f.truncate(size)
    return path


def _replace_state(run, edit):
    state = torch.load(_ckpt(run), weights_only=False)
    edit(state)
    torch.save(state, _ckpt(run))
    return _ckpt(run)


def _other_runs_checkpoint(run, runs):
    shutil.copy(_ckpt(runs["repeated-text"]), _ckpt(run))
    return _ckpt(run)


def _vocab_of(run, value):
    (run / "vocab.json").write_text(json.dumps(value))
    return run / "vocab.json"


# (run, damage(run, runs) → the file named, what the message says)
CASES = {
    "truncated checkpoint": ("probe", lambda r, _: _truncate(_ckpt(r)), "damaged or not a checkpoint"),
    "text checkpoint": ("probe", lambda r, _: _ckpt(r).write_text("not a checkpoint") and _ckpt(r), "damaged"),
    "empty checkpoint": ("probe", lambda r, _: _truncate(_ckpt(r), 0), "damaged or not a checkpoint"),
    "tensor checkpoint": (
        "probe",
        lambda r, _: torch.save(torch.zeros(3), _ckpt(r)) or _ckpt(r),
        "not an inductionlab checkpoint .*a Tensor",
    ),
    "another model's state dict": (
        "probe",
        lambda r, _: torch.save(torch.nn.Linear(2, 2).state_dict(), _ckpt(r)) or _ckpt(r),
        "not an inductionlab checkpoint .*weight, bias",
    ),
    "a dict without our keys": (
        "probe",
        lambda r, _: torch.save({"done": True, "theta": torch.zeros(3)}, _ckpt(r)) or _ckpt(r),
        "not an inductionlab checkpoint",
    ),
    "another run's checkpoint": ("probe", _other_runs_checkpoint, "does not match the run's config.json"),
    "parameters of another size": (
        "probe",
        lambda r, _: _replace_state(r, lambda s: s["stepper"].update(theta=torch.zeros(1, 3))),
        "parameters do not fit the model it records",
    ),
    "garbage config.json": (
        "probe",
        lambda r, _: (r / "config.json").write_text("{not json") and r / "config.json",
        "damaged or not a run's config",
    ),
    "list config.json": (
        "probe",
        lambda r, _: (r / "config.json").write_text("[1, 2]") and r / "config.json",
        "holds no JSON object, so it is not a run.s config",
    ),
    "garbage vocab.json": (
        "repeated-text",
        lambda r, _: (r / "vocab.json").write_text("{not json") and r / "vocab.json",
        "damaged or not a word tokenizer",
    ),
    "vocab.json without words": ("repeated-text", lambda r, _: _vocab_of(r, {"vocab": 7}), "not this run's tokenizer"),
    "vocab.json of another size": (
        "repeated-text",
        lambda r, _: _vocab_of(r, {"tokenizer": "word", "vocab": ["a", "b"]}),
        "not this run's tokenizer: it holds 2 tokens",
    ),
    "missing vocab.json": (
        "repeated-text",
        lambda r, _: (r / "vocab.json").unlink() or r / "vocab.json",
        "is missing: this text run",
    ),
}


@pytest.mark.parametrize("loader", [load_model, to_hooked_transformer], ids=["load_model", "to_hooked_transformer"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_or_foreign_file_is_refused_naming_it(runs, tmp_path, case, loader):
    kind, damage, says = CASES[case]
    run = tmp_path / "run"
    shutil.copytree(runs[kind], run)
    path = damage(run, runs)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with pytest.raises(RunFileError, match=says) as caught:
        loader(run)
    err = caught.value
    assert str(path) in str(err) and err.path == path
    assert "stopped early" not in str(err) and "Traceback" not in str(err)
    assert isinstance(err, ConfigError) and exit_code(err) == 2  # the command line: status 2, one line
    assert len(message(err).splitlines()) == 1
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before  # nothing changed or removed


def test_an_unfinished_checkpoint_still_says_resume(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["probe"], run)
    _replace_state(run, lambda s: s.update(done=False))
    with pytest.raises(ConfigError, match="stopped early.*resume the run"):
        load_model(run)


def test_the_undamaged_runs_still_load(runs):
    assert load_model(runs["probe"]).tokenizer is None
    text = load_model(runs["repeated-text"])
    assert len(text.tokenizer.vocab) == text.config.vocab
