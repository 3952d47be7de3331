"""The induction-head monitor (docs/monitor.md): its scores equal TransformerLens's ``detect_head`` through every
adapter, the Trainer callback measures on schedule and writes its files, the phase detection locates a synthetic
phase change, and bad input is refused by name."""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab.analysis import heads as H
from inductionlab.config import ConfigError
from inductionlab.models import transformer as tf
from inductionlab.monitor import (
    InductionCallback,
    Monitor,
    MonitorConfig,
    PhaseChange,
    adapter_for,
    patterns_adapter,
    phase_change,
)
from inductionlab.monitor.core import FILES
from inductionlab.train.hooks import JsonlLogger

transformers = pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

SMALL = MonitorConfig(batch=3, period=6, vocab=11, every=5)


def _toolkit(dtype=torch.float64):
    cfg = tf.TransformerConfig(
        vocab=11, d_model=8, n_layers=2, n_heads=2, ffn_width=(0, 6), readout="all", init_std=0.5, slope_init=0.7
    )
    return cfg, tf.init_params(cfg, 2, torch.Generator().manual_seed(3), dtype)


def _grid(heads: pd.DataFrame, name: str) -> np.ndarray:
    """(n_layers, H) scores of the last measurement."""
    last = heads[heads.step == heads.step.max()].sort_values(["layer", "head"])
    return last[name].to_numpy().reshape(last.layer.max() + 1, -1)


def _gpt2(n_layer=1, n_head=1, n_embd=8, n_positions=16, vocab=10, impl="eager"):
    cfg = GPT2Config(
        n_layer=n_layer,
        n_head=n_head,
        n_embd=n_embd,
        n_positions=n_positions,
        vocab_size=vocab,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation=impl,
    )
    return GPT2LMHeadModel(cfg)


def _hand_pattern(tokens: torch.Tensor) -> torch.Tensor:
    """(B, 1, L, L) float64: the ideal induction head where a row has a target, uniform over keys 0..i elsewhere."""
    det = H.detection_pattern(tokens, "induction").double()
    uniform = torch.ones_like(det).tril()
    rows = torch.where(det.sum(-1, keepdim=True) > 0, det, uniform)
    return (rows / rows.sum(-1, keepdim=True)).unsqueeze(1)


def test_the_hf_adapter_on_a_hand_set_pattern_gives_the_transformerlens_score():
    from transformer_lens import head_detector

    model = _gpt2(vocab=1000).double()  # no token repeats within a copy: an exact score of 5/10
    config = MonitorConfig(batch=3, period=5)
    pattern = _hand_pattern(Monitor(model, config).tokens)
    model.transformer.h[0].attn.register_forward_hook(lambda module, args, out: (out[0], pattern))
    hf = Monitor(model, config)
    hf.measure(0)
    by_hand = Monitor(patterns_adapter(model, lambda m, t: [pattern]), config)
    by_hand.measure(0)
    for name in H.HEAD_NAMES:
        det = H.detection_pattern(hf.tokens, name)
        direct = float(H.attention_score(pattern, det))
        tl_form = np.mean(
            [
                head_detector.compute_head_attention_similarity_score(
                    pattern[b, 0].clone(),
                    det[b].double(),
                    exclude_bos=False,
                    exclude_current_token=False,
                    error_measure="mul",
                )
                for b in range(3)
            ]
        )
        assert abs(tl_form - direct) < 1e-12, name
        assert float(_grid(hf.heads, name)[0, 0]) == pytest.approx(direct, abs=1e-12), name
        assert float(_grid(by_hand.heads, name)[0, 0]) == pytest.approx(direct, abs=1e-12)
    assert float(_grid(hf.heads, "induction")[0, 0]) == pytest.approx(5 / 10, abs=1e-12)  # 5 of 10 rows hit
    assert float(_grid(hf.heads, "prefix_matching")[0, 0]) == pytest.approx(1.0, abs=1e-12)
    assert hf.steps.loc[0, "loss_repeated"] == pytest.approx(by_hand.steps.loc[0, "loss_repeated"], abs=1e-12)


class _Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int, L: int, vocab: int):
        self.x = torch.randint(vocab, (n, L), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.x[i], "labels": self.x[i]}


def test_the_trainer_callback_measures_on_schedule_and_writes_its_files(tmp_path):
    from transformers import Trainer, TrainingArguments

    model = _gpt2(n_layer=2, n_head=2, n_embd=16, n_positions=32, vocab=20)
    held_out = torch.randint(20, (4, 32), generator=torch.Generator().manual_seed(1))
    config = MonitorConfig(every=5, batch=4, period=8, icl_early=4, icl_late=20)
    monitor = Monitor(model, config, held_out=held_out, out_dir=tmp_path / "m", loggers=[JsonlLogger(tmp_path / "j")])
    args = TrainingArguments(
        output_dir=str(tmp_path / "t"),
        max_steps=20,
        per_device_train_batch_size=8,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
    )
    callback = InductionCallback(monitor)
    assert isinstance(callback, transformers.TrainerCallback)
    Trainer(model=model, args=args, train_dataset=_Tokens(64, 32, 20), callbacks=[callback]).train()
    assert monitor.steps.step.tolist() == [0, 5, 10, 15, 20]
    assert list(monitor.heads.columns) == [
        "step",
        "layer",
        "head",
        "previous_token",
        "duplicate_token",
        "induction",
        "prefix_matching",
    ]
    assert len(monitor.heads) == 5 * 2 * 2 and monitor.steps.icl_score.notna().all()
    assert model.training  # the Trainer's mode was put back after each measurement
    for name in FILES:
        assert (tmp_path / "m" / name).exists()
    assert pd.read_parquet(tmp_path / "m" / "monitor_steps.parquet").step.tolist() == [0, 5, 10, 15, 20]
    phase = monitor.phase()
    assert isinstance(phase, PhaseChange) and isinstance(phase.head, tuple) and isinstance(phase.coincides, bool)
    assert all(isinstance(v, float) for v in (phase.step, phase.score, phase.loss_drop_step))
    saved = json.loads((tmp_path / "m" / "monitor_phase.json").read_text())
    assert saved["head"] == list(phase.head) and saved["config"]["every"] == 5
    lines = [json.loads(line) for line in (tmp_path / "j").read_text().splitlines()]
    assert [r["step"] for r in lines] == [0, 5, 10, 15, 20] and {r["stage"] for r in lines} == {"monitor"}
    assert "induction_l1h0" in lines[0] and "loss_repeated" in lines[0]


def _synthetic(score_mid: float, loss_mid: float, every: int = 10) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A best head whose induction score is a sigmoid in step centred at ``score_mid`` (another head stays low),
    and a loss on the repeated tokens that drops as a sigmoid centred at ``loss_mid``."""
    t = np.arange(0, 1001, every)
    rise = 0.05 + 0.85 / (1 + np.exp(-(t - score_mid) / 15))
    heads = pd.DataFrame(
        {
            "step": np.repeat(t, 2),
            "layer": 1,
            "head": np.tile([0, 1], len(t)),
            "induction": np.stack([np.full_like(rise, 0.1), rise], 1).reshape(-1),
        }
    )
    steps = pd.DataFrame({"step": t, "loss_repeated": 5 - 3 / (1 + np.exp(-(t - loss_mid) / 15))})
    return heads, steps


LEVELS = {"chance": 0.05, "attainable": 0.95}  # the synthetic head's relative score rises from 0 to 0.94


def test_phase_detection_finds_a_sigmoid_step_and_whether_the_loss_drops_with_it():
    heads, steps = _synthetic(437.0, 437.0)
    found = phase_change(heads, steps, every=10, **LEVELS)
    assert found.head == (1, 1) and abs(found.step - 437) <= 10 and abs(found.loss_drop_step - 437) <= 10
    assert found.coincides and found.score == pytest.approx(0.9, abs=1e-3)
    late = phase_change(*_synthetic(437.0, 537.0), every=10, **LEVELS)  # the loss drops 10 intervals later
    assert abs(late.step - 437) <= 10 and abs(late.loss_drop_step - 537) <= 10 and not late.coincides
    early = phase_change(heads[heads.step <= 300], steps[steps.step <= 300], every=10, **LEVELS)
    assert math.isnan(early.step) and not early.coincides  # online: before the rise, no phase change yet


def test_an_sdpa_model_is_measured_with_eager_attention_and_handed_back_as_it_was():
    torch.manual_seed(0)
    eager = _gpt2(n_layer=2, n_head=2, n_embd=16, impl="eager")
    sdpa = _gpt2(n_layer=2, n_head=2, n_embd=16, impl="sdpa")
    sdpa.load_state_dict(eager.state_dict())
    config = MonitorConfig(batch=4, period=8)
    want, got = Monitor(eager, config).measure(0), Monitor(sdpa, config).measure(0)
    assert got["best_induction"] == pytest.approx(want["best_induction"], abs=1e-6)
    assert got["loss_repeated"] == pytest.approx(want["loss_repeated"], abs=1e-5)
    assert sdpa.config._attn_implementation == "sdpa"  # the trainer's steps keep their kernel


def test_a_model_whose_attention_cannot_be_switched_is_refused(monkeypatch):
    model = _gpt2(impl="sdpa")
    monkeypatch.setattr(type(model), "set_attn_implementation", None)
    with pytest.raises(ConfigError, match="attn_implementation"):
        Monitor(model)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ConfigError, match="every"):
        MonitorConfig(every=0)
    with pytest.raises(ConfigError, match="period"):
        Monitor(_gpt2(), MonitorConfig(period=25))  # 50 tokens > 16 positions
    with pytest.raises(ConfigError, match="out_dir"):
        Monitor(_gpt2(), MonitorConfig(period=5)).save()
    with pytest.raises(ConfigError, match="model"):
        adapter_for(torch.nn.Linear(2, 2))


def test_the_package_imports_without_transformers():
    code = "import sys; sys.modules['transformers'] = None; import inductionlab.monitor as m; print(m.Monitor)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Monitor" in out.stdout


def test_maybe_keeps_the_schedule_and_a_model_passed_to_measure_is_the_one_measured():
    cfg, params = _toolkit()
    monitor = Monitor((cfg, params), SMALL)
    assert [monitor.maybe(s) is not None for s in (3, 3, 4, 5, 10, 10)] == [True, False, False, True, True, False]
    other = {name: value.flip(0) for name, value in params.items()}  # run 1 as run 0
    monitor.measure(15, (cfg, other))
    again = Monitor(adapter_for((cfg, params), run=1), SMALL)
    again.measure(15)
    assert np.array_equal(_grid(monitor.heads, "induction"), _grid(again.heads, "induction"))
    assert monitor.steps.step.tolist() == [3, 5, 10, 15] and len(monitor.heads) == 4 * 2 * 2
