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
