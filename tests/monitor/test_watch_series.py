"""``watch`` over any ordered series of checkpoints (docs/monitor.md#the-watch-command): save_pretrained folders
named by their step, TransformerLens state dicts, a toolkit run that kept a checkpoint per evaluation — each
measured as a monitor measures the same models directly."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab.cli import main
from inductionlab.config import ConfigError
from inductionlab.monitor import Monitor, MonitorConfig
from inductionlab.monitor.watch import watch

CONFIG = MonitorConfig(batch=3, period=6, vocab=12)


def _same_as_direct(found: Monitor, models: dict[int, object]) -> None:
    """The watched tables equal a monitor measuring each model of the series directly."""
    direct = Monitor(next(iter(models.values())), found.config)
    for step, model in models.items():
        direct.measure(step, model)
    assert found.steps.step.tolist() == sorted(models)
    pd.testing.assert_frame_equal(found.heads, direct.heads)
    assert np.allclose(found.steps.loss_repeated, direct.steps.loss_repeated, rtol=0, atol=1e-12)


def test_save_pretrained_folders_named_by_their_step_are_a_series(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=16, n_positions=16, vocab_size=12, attn_implementation="eager"
    )
    transformers.set_seed(0)
    model, models = transformers.GPT2LMHeadModel(config), {}
    for step in (0, 50, 100, 150):
        with torch.no_grad():
            model.transformer.h[1].attn.c_attn.weight.mul_(1.6)
        model.save_pretrained(tmp_path / "series" / f"step-{step}")
        models[step] = transformers.GPT2LMHeadModel.from_pretrained(
            tmp_path / "series" / f"step-{step}", attn_implementation="eager"
        )
    (tmp_path / "series" / "notes").mkdir()  # no step in its name: not part of the series
    found, paths = watch(tmp_path / "series", CONFIG)
    _same_as_direct(found, models)
    assert found.config.every == 50 and paths[2].is_file()
    assert main(["watch", str(tmp_path / "series"), "--every", "100"]) == 0
    assert pd.read_parquet(paths[1]).step.tolist() == [0, 100, 150]  # the last one always


def _hooked(cfg):
    from transformer_lens import HookedTransformer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return HookedTransformer(cfg)


def test_transformerlens_state_dicts_are_a_series_with_a_template_or_a_config_file(tmp_path):
    tl = pytest.importorskip("transformer_lens")
    fields = dict(n_layers=2, d_model=16, d_head=8, n_heads=2, n_ctx=16, d_vocab=12, attn_only=True, seed=0)
    cfg = tl.HookedTransformerConfig(**fields, act_fn="relu")
    model, models = _hooked(cfg), {}
    for step in (10, 20, 30):
        with torch.no_grad():
            model.blocks[0].attn.W_Q.mul_(2.0)
        torch.save(model.state_dict(), tmp_path / f"model_step{step}.pt")
        models[step] = _hooked(cfg)
        models[step].load_state_dict(model.state_dict())
    found, _ = watch(tmp_path, CONFIG, template=_hooked(cfg))
    _same_as_direct(found, models)
    (tmp_path / "config.json").write_text(json.dumps({**fields, "act_fn": "relu"}))
    again, _ = watch(tmp_path, CONFIG)  # what the command line does: the model from config.json
    pd.testing.assert_frame_equal(again.heads, found.heads)


def test_a_toolkit_run_that_kept_its_checkpoints_is_a_series(tmp_path):
    from inductionlab import load_model
    from inductionlab.loading import kept_steps

    out = tmp_path / "run"
    argv = ["run", "markov-transformer", "--preset", "smoke", "--out", str(out), "--no-progress"]
    assert main([*argv, "--keep-checkpoints"]) == 0
    model, steps = kept_steps(out, "parents_1")
    assert model == "parents_1" and steps == [0, 10, 20]  # every evaluation
    final, last = load_model(out, name="parents_1"), load_model(out, name="parents_1", step=20)
    assert all(torch.equal(final.params[k], last.params[k]) for k in final.params)  # the last one is the final model
    with pytest.raises(ConfigError, match="^step: .*kept: \\[0, 10, 20\\]"):
        load_model(out, name="parents_1", step=15)
    found, _ = watch(out, MonitorConfig(batch=3, period=6), name="parents_1")
    _same_as_direct(
        found, {s: (m.config, m.params) for s in steps for m in [load_model(out, name="parents_1", step=s)]}
    )
    assert main(["watch", str(out), "--name", "parents_1", "--run", "3"]) == 2  # one run: refused by name, no work


def test_a_step_comes_from_the_checkpoints_record_or_a_name_read_whole_and_two_at_one_step_are_refused(tmp_path):
    """step-1e3 is not step 3, v1.0 and v2.0 are not both step 0, step-2 and step-02 are not two rows at step 2: a
    folder's trainer_state.json global_step wins, a name must be a step as a whole, duplicates are refused, and a
    name without a digit is simply not part of the series."""
    from inductionlab.monitor.series import numbered

    made = iter(range(100))

    def series(*names, states=None):
        root = tmp_path / f"series{next(made)}"
        for name in names:
            (root / name).mkdir(parents=True)
            (root / name / "config.json").write_text("{}")
            if states and name in states:
                (root / name / "trainer_state.json").write_text(json.dumps({"global_step": states[name]}))
        (root / "notes").mkdir()
        return root

    def steps(root):
        return [(s, p.name) for s, p in numbered(root, lambda p: (p / "config.json").is_file(), global_step)]

    from inductionlab.monitor.series import global_step

    assert steps(series("step-10", "ckpt_200", "300")) == [(10, "step-10"), (200, "ckpt_200"), (300, "300")]
    assert steps(series("v1.0", "v2.0", states={"v1.0": 1000, "v2.0": 2000})) == [(1000, "v1.0"), (2000, "v2.0")]
    for names, match in ((("step-1e3",), "step-1e3 is not named by its step"), (("v1.0", "v2.0"), "v1.0 is not")):
        with pytest.raises(ConfigError, match=match):
            steps(series(*names))
    with pytest.raises(ConfigError, match="step-02 and .*step-2 are both step 2"):
        steps(series("step-2", "step-02"))
    with pytest.raises(ConfigError, match="are both step 5"):
        steps(series("a-5", "b-9", states={"b-9": 5}))
    root = series("step-1e3")
    code = main(["watch", str(root)])
    assert code == 2 and (root / "step-1e3").is_dir()  # refused before any work, nothing removed
