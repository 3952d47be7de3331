"""The ``hf-induction`` experiment: a GPT-2 trained by transformers.Trainer under the monitor, beside the toolkit's
transformer (docs/monitor.md)."""

import json

import pytest
import torch

from inductionlab import experiments, run_experiment
from inductionlab.cli import resolve
from inductionlab.experiments.across.hf_induction.gpt2 import build_gpt2

pytest.importorskip("transformers")


def test_smoke_writes_its_figure_tables_checkpoints_and_summary(tmp_path):
    out = run_experiment("hf-induction", resolve("hf-induction", "smoke", {}), tmp_path / "run", threads=1)
    summary = json.loads((out / "summary.json").read_text())
    for model, keys in {
        "hf": ("phase_step", "final_induction_score", "loss_drop_step", "coincides", "wall_seconds"),
        "own": ("t_induction_half", "final_induction_score", "loss_drop_step", "coincides", "wall_seconds"),
    }.items():
        assert set(keys) <= set(summary[model]), (model, summary[model])
    assert 0 <= summary["hf"]["final_induction_score"] <= 1
    assert (out / "hf_induction.png").is_file()
    assert sorted(p.name for p in (out / "hf").glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-6"]
    assert {"hf_heads.parquet", "hf_steps.parquet", "own_metrics.parquet"} <= {p.name for p in out.glob("*.parquet")}


def test_the_control_builds_a_one_layer_attention_only_gpt2():
    exp = experiments.get("hf-induction")
    (control,) = exp.controls
    cfg = experiments.configure("hf-induction", "smoke", dict(control.overrides))
    gpt2 = build_gpt2(cfg.model, 30, cfg.data.L, 0)
    assert gpt2.config.n_layer == 1
    block = gpt2.transformer.h[0]
    assert not any(p.requires_grad for p in block.mlp.parameters())
    x = torch.randn(2, 5, cfg.model.n_embd)
    assert torch.equal(block.mlp(x), torch.zeros_like(x))  # the MLP adds nothing: attention only
    own = cfg.model.own()
    assert own.n_layers == 1 and own.ffn_width == 0


@pytest.mark.parametrize("bf16", ["on", "off"])
def test_bf16_trains_under_autocast_and_the_monitor_measures_in_float32(tmp_path, monkeypatch, bf16):
    """``bf16 on``: the Trainer's and the toolkit model's losses run under bf16 autocast, while every measurement
    (the monitor's callback, the own model's head scores) runs in float32; ``off``: nothing under autocast."""
    from inductionlab.experiments.across.hf_induction import gpt2
    from inductionlab.train import text

    seen: dict[str, set] = {"train": set(), "measure": set()}
    built = gpt2.build_gpt2

    def build(*args):
        model = built(*args)
        model.transformer.h[0].attn.c_attn.register_forward_hook(  # in bf16 under autocast, wherever entered
            lambda m, _, out: seen["train" if torch.is_grad_enabled() else "measure"].add(out.dtype == torch.bfloat16)
        )
        return model

    scores = gpt2.own_scores

    def own_scores(tokens, period):
        measure = scores(tokens, period)

        def recorded(*args):
            seen["measure"].add(torch.is_autocast_enabled("cpu"))
            return measure(*args)

        return recorded

    token_losses = text.token_losses

    def losses(*args, **kwargs):
        if torch.is_grad_enabled():
            seen["train"].add(torch.is_autocast_enabled("cpu"))
        return token_losses(*args, **kwargs)

    monkeypatch.setattr(gpt2, "build_gpt2", build)
    monkeypatch.setattr("inductionlab.experiments.across.hf_induction.build_gpt2", build)
    monkeypatch.setattr("inductionlab.experiments.across.hf_induction.own_scores", own_scores)
    monkeypatch.setattr(text, "token_losses", losses)
    out = run_experiment("hf-induction", resolve("hf-induction", "smoke", {"bf16": bf16}), tmp_path / "r", threads=1)
    assert seen == {"train": {bf16 == "on"}, "measure": {False}}
    assert json.loads((out / "summary.json").read_text())["precision"] == (
        "bf16 autocast" if bf16 == "on" else "float32"
    )


def test_the_gpt2s_numbers_are_the_same_whatever_the_toolkit_models_steps(tmp_path):
    """The control trains the toolkit's transformer for a few steps (own.steps): it trains after the GPT-2 and
    enters none of the hf.* keys the claims read."""
    hf = []
    for steps in (3, 9):
        cfg = resolve("hf-induction", "smoke", {"own.steps": steps})
        out = run_experiment("hf-induction", cfg, tmp_path / f"own-{steps}", threads=1)
        summary = json.loads((out / "summary.json").read_text())
        hf.append({k: v for k, v in summary["hf"].items() if "seconds" not in k})
    assert hf[0] == hf[1]
    (control,) = experiments.get("hf-induction").controls
    assert control.overrides["own.steps"] == experiments.get("hf-induction").config.measure.every
