"""``inductionlab watch`` on a running or damaged Trainer output directory: an incomplete checkpoint is skipped
with a line naming it and why, the complete ones are measured; a non-causal model is refused naming its folder;
an hf-induction run of several seeds names the seed folders to watch; never a raw traceback."""

import json
import shutil

import pandas as pd
import pytest

from inductionlab.cli import main
from inductionlab.config import ConfigError
from inductionlab.monitor.watch import incomplete, trainer_dirs, watch
from tests.monitor.test_watch import _fake_trainer_dir

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def trainer_dir(tmp_path_factory):
    return _fake_trainer_dir(tmp_path_factory.mktemp("hf") / "hf")


def _bert(folder, architecture="BertForMaskedLM"):
    config = transformers.BertConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, vocab_size=20
    )
    getattr(transformers, architecture)(config).save_pretrained(folder)
    return folder


def _cut(path, keep):
    with open(path, "r+b") as f:
        f.truncate(keep(path.stat().st_size))


def _copy(out, step=25):
    shutil.copytree(out / "checkpoint-20", out / f"checkpoint-{step}")
    return out / f"checkpoint-{step}"


# case → (damage(out) → the folder skipped, what its line says)
SKIPPED = {
    "empty folder": (lambda out: (out / "checkpoint-25").mkdir() or out / "checkpoint-25", "no config.json"),
    "config only": (
        lambda out: (
            (out / "checkpoint-25").mkdir()
            or shutil.copy(out / "checkpoint-0/config.json", out / "checkpoint-25")
            and out / "checkpoint-25"
        ),
        "no weights",
    ),
    "garbage config": (lambda out: (_copy(out) / "config.json").write_text("{x") and out / "checkpoint-25", "damaged"),
    "truncated safetensors header": (
        lambda out: _cut(_copy(out) / "model.safetensors", lambda n: 300) or out / "checkpoint-25",
        "model.safetensors is truncated or damaged",
    ),
    "truncated safetensors data": (
        lambda out: _cut(_copy(out) / "model.safetensors", lambda n: n - 100) or out / "checkpoint-25",
        "header promises .*truncated",
    ),
    "a BERT checkpoint": (lambda out: _bert(out / "checkpoint-25"), "BertForMaskedLM, not a causal language model"),
}


@pytest.mark.parametrize("case", list(SKIPPED))
def test_an_incomplete_checkpoint_is_skipped_with_a_line_and_the_others_measured(
    trainer_dir, tmp_path, case, capsys, caplog
):
    damage, says = SKIPPED[case]
    out = tmp_path / "hf"
    shutil.copytree(trainer_dir, out)
    folder = damage(out)
    assert incomplete(folder) is not None
    assert main(["watch", str(out)]) == 0
    printed = capsys.readouterr()
    assert "phase change:" in printed.out and "Traceback" not in printed.err
    lines = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(lines) == 1 and str(folder) in lines[0]
    assert pd.Series(lines).str.contains(says).any(), lines
    assert pd.read_parquet(out / "watch_steps.parquet").step.tolist() == [0, 10, 20]  # nothing lost
    assert main(["watch", str(out), "--every", "20"]) == 0  # the last complete checkpoint is kept
    assert pd.read_parquet(out / "watch_steps.parquet").step.tolist() == [0, 20]


@pytest.mark.parametrize("state", ["{not json", "[1]", '{"global_step": "ten"}', '{"steps": 3}'])
def test_a_bad_trainer_state_falls_back_on_the_folders_step(trainer_dir, tmp_path, state, caplog):
    out = tmp_path / "hf"
    shutil.copytree(trainer_dir, out)
    (out / "checkpoint-10" / "trainer_state.json").write_text(state)
    monitor, _ = watch(out)
    assert monitor.steps.step.tolist() == [0, 10, 20]
    assert any("checkpoint-10/trainer_state.json cannot be read" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("architecture", ["BertForMaskedLM", "BertLMHeadModel"])
def test_a_non_causal_model_is_refused_naming_its_folder(tmp_path, architecture, capsys):
    """Saved as a masked LM: refused by its config; saved as BertLMHeadModel without is_decoder (bidirectional
    attention): refused by the pattern check, attention on later keys."""
    out = tmp_path / "bert"
    _bert(out / "checkpoint-5", architecture)
    assert main(["watch", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "checkpoint-5" in err
    assert ("not a causal language model" if architecture == "BertForMaskedLM" else "later keys") in err
    assert err.strip().splitlines()[-1].startswith("inductionlab: error: watch: none of the 1 checkpoint-* folders")


def test_the_seed_folders_of_a_multi_seed_run_are_found_and_each_watched(trainer_dir, tmp_path, capsys):
    out = tmp_path / "hf"
    for seed in (0, 1):
        shutil.copytree(trainer_dir, out / f"seed-{seed}")
    assert trainer_dirs(out) == [out / "seed-0", out / "seed-1"]
    assert main(["watch", str(out)]) == 0  # the command watches each seed's folder
    printed = capsys.readouterr().out
    assert "seed-0: " in printed and "seed-1: " in printed
    for seed in (0, 1):
        assert (out / f"seed-{seed}" / "watch_steps.parquet").exists()
    with pytest.raises(ConfigError, match="seed-0, seed-1"):  # the Python API names them
        watch(out)
    for folder in trainer_dirs(out):
        assert watch(folder)[0].steps.step.tolist() == [0, 10, 20]


def test_every_must_be_a_positive_integer(trainer_dir):
    for every in (0, 1.5, True):
        with pytest.raises(ConfigError, match="--every: must be an integer ≥ 1"):
            watch(trainer_dir, every=every)


def test_a_damaged_config_never_reaches_transformers(tmp_path):
    folder = tmp_path / "checkpoint-1"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"n_layer": 2}))
    assert "names no model_type" in incomplete(folder)
