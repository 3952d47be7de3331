"""The monitor inside the trainers researchers use (docs/monitor.md#logging): a HuggingFace ``Trainer`` that trains
a tiny Llama until an induction head forms — its numbers in the TensorBoard event file of ``report_to``, the
phase-change event fired once and acted on — and a PyTorch Lightning ``Trainer`` logging them to its loggers."""

import math

import pytest
import torch

from inductionlab.monitor import Monitor, MonitorConfig

transformers = pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")

V, PERIOD, L = 32, 12, 24  # training sequences: a random prefix of 4..12 tokens repeated to 24 tokens


class _Copies(torch.utils.data.Dataset):
    """Each sequence its own random period (so no head can find the copy by position alone)."""

    def __init__(self, n: int, seed: int = 1):
        g = torch.Generator().manual_seed(seed)
        periods = torch.randint(4, PERIOD + 1, (n,), generator=g)
        tokens = torch.randint(0, V, (n, L), generator=g)
        self.x = torch.stack([t[:p].repeat(L // int(p) + 1)[:L] for t, p in zip(tokens, periods)])

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.x[i], "labels": self.x[i]}


def _llama() -> torch.nn.Module:
    """Two layers, two heads, rotary positions: forms an induction head in ~250 steps of batch 32 at lr 3e-3."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=32,
        vocab_size=V,
        max_position_embeddings=L,
        attn_implementation="eager",
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return transformers.LlamaForCausalLM(config)


def _events(directory) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, list[tuple[int, float]]] = {}
    for path in directory.rglob("events.out.tfevents.*"):
        events = EventAccumulator(str(path))
        events.Reload()
        for tag in events.Tags()["scalars"]:
            found.setdefault(tag, []).extend((e.step, e.value) for e in events.Scalars(tag))
    return found


def test_a_trainer_that_forms_a_head_reports_to_tensorboard_and_stops_at_the_phase_change(tmp_path):
    pytest.importorskip("tensorboard")
    from transformers import Trainer, TrainingArguments

    from inductionlab.monitor import InductionCallback

    model, fired = _llama(), []
    monitor = Monitor(model, MonitorConfig(every=25, batch=8, period=7, threshold=0.3), out_dir=tmp_path / "m")
    args = TrainingArguments(
        output_dir=str(tmp_path / "t"),
        max_steps=800,
        per_device_train_batch_size=32,
        learning_rate=3e-3,
        lr_scheduler_type="constant",
        weight_decay=0.0,
        use_cpu=True,
        report_to=["tensorboard"],
        logging_steps=1000,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=_Copies(32 * 800))

    def stop(phase, control):
        fired.append(phase)
        control.should_training_stop = True

    trainer.add_callback(InductionCallback(monitor, trainer, on_phase_change=stop))
    trainer.train()
    assert len(fired) == 1 and fired[0].head[0] == 1  # an induction head needs the second layer
    assert fired[0].relative >= 0.3 and trainer.state.global_step < 800  # it stopped there
    assert math.isfinite(fired[0].loss_drop_step) and monitor.steps.loss_repeated.iloc[-1] < 2.5
    events = _events(tmp_path)
    best = dict(events["train/monitor/best_induction"])
    assert sorted(best) == monitor.steps.step.tolist()
    for step, value in zip(monitor.steps.step, monitor.steps.best_induction):
        assert best[step] == pytest.approx(value, rel=1e-6)  # float32 in the event file
    assert {"train/monitor/induction_l1h0", "train/monitor/chance_induction"} <= set(events)
    logged = [row for row in trainer.state.log_history if "monitor/best_induction" in row]
    assert [row["step"] for row in logged] == monitor.steps.step.tolist()


def test_without_the_trainer_the_numbers_reach_the_log_history(tmp_path):
    from transformers import Trainer, TrainingArguments

    from inductionlab.monitor import InductionCallback

    model = _llama()
    monitor = Monitor(model, MonitorConfig(every=5, batch=2, period=6))
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=10, per_device_train_batch_size=4, use_cpu=True)
    args = args.set_logging(strategy="no", report_to=[])
    trainer = Trainer(model=model, args=args, train_dataset=_Copies(40), callbacks=[InductionCallback(monitor)])
    trainer.train()
    logged = [row["step"] for row in trainer.state.log_history if "monitor/loss_repeated" in row]
    assert logged == [0, 5, 10]


def test_the_lightning_callback_logs_to_the_trainers_loggers(tmp_path):
    lightning = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.loggers import CSVLogger

    from inductionlab.monitor import InductionLightningCallback

    class Module(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = _llama()

        def training_step(self, batch, _):
            return self.model(**batch).loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=3e-3, weight_decay=0.0)

    module, fired = Module(), []
    monitor = Monitor(module.model, MonitorConfig(every=4, batch=2, period=6), out_dir=tmp_path / "m")
    callback = InductionLightningCallback(monitor, on_phase_change=lambda phase, trainer: fired.append(phase))
    assert isinstance(callback, lightning.Callback)
    trainer = lightning.Trainer(
        max_steps=8,
        accelerator="cpu",
        logger=CSVLogger(tmp_path / "logs"),
        callbacks=[callback],
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.fit(module, torch.utils.data.DataLoader(_Copies(32), batch_size=4))
    import pandas as pd

    table = pd.read_csv(next((tmp_path / "logs").rglob("metrics.csv")))
    rows = table.dropna(subset=["monitor/best_induction"])
    assert rows.step.tolist() == [0, 4, 8] == monitor.steps.step.tolist()
    assert rows["monitor/loss_repeated"].tolist() == pytest.approx(monitor.steps.loss_repeated.tolist(), rel=1e-6)
    assert (tmp_path / "m" / "monitor_steps.parquet").is_file() and fired == []  # no head in 8 steps
