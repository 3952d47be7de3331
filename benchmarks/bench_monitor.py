"""Overhead of the induction-head monitor inside a HuggingFace Trainer (docs/monitor.md#overhead): a small GPT-2
(2 layers, width 64, 4 heads, 64 positions) trained for 200 steps at batch 16 on random tokens, without the
callback and with it at ``every=50`` and ``every=20`` (default measurement: 16 sequences of 50 tokens), side by
side in one process on one torch thread; each setting runs twice, interleaved, and the faster run counts.  The
overhead is that of the process's CPU time (robust to other processes sharing the cores; wall time shown too).
Target: ≤ 10 % at ``every=50``.

Run: ``python benchmarks/bench_monitor.py`` (needs the ``hf`` extra).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch

STEPS, BATCH, L, VOCAB = 200, 16, 64, 128


class _Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int):
        self.x = torch.randint(VOCAB, (n, L), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.x[i], "labels": self.x[i]}


def _train(every: int | None, out: Path) -> tuple[float, float, int, float]:
    """CPU and wall seconds of ``Trainer.train``, the number of measurements and the CPU seconds spent in them
    (``every=None``: no callback)."""
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from inductionlab.monitor import InductionCallback, Monitor, MonitorConfig

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=4, n_embd=64, n_positions=L, vocab_size=VOCAB, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(GPT2Config(**config.to_dict(), attn_implementation="eager"))
    args = TrainingArguments(
        output_dir=str(out / "trainer"),
        max_steps=STEPS,
        per_device_train_batch_size=BATCH,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
    )
    monitor = Monitor(model, MonitorConfig(every=every), out_dir=out / f"monitor{every}") if every else None
    callbacks = [InductionCallback(monitor)] if monitor else []
    spent = [0.0]
    if monitor:
        measure = monitor.measure

        def timed(step: int, model: object = None) -> dict:
            start = time.process_time()
            row = measure(step, model)
            spent[0] += time.process_time() - start
            return row

        monitor.measure = timed
    trainer = Trainer(model=model, args=args, train_dataset=_Tokens(STEPS * BATCH), callbacks=callbacks)
    cpu, wall = time.process_time(), time.perf_counter()
    trainer.train()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu, wall, len(monitor.steps) if monitor else 0, spent[0]


def main() -> None:
    torch.set_num_threads(1)
    settings: list[int | None] = [None, 50, 20]
    best: dict[int | None, tuple[float, float, int, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            for every in settings:
                run = _train(every, Path(tmp))
                best[every] = min(best.get(every, run), run)
    base = best[None][0]
    print("| callback | measurements | CPU seconds | wall seconds | overhead (CPU) | CPU ms per measurement |")
    print("|---|---|---|---|---|---|")
    for every in settings:
        cpu, wall, count, spent = best[every]
        name = "none" if every is None else f"every={every}"
        per = f"{1e3 * spent / count:.0f}" if count else "–"
        print(f"| {name} | {count} | {cpu:.2f} | {wall:.2f} | {100 * (cpu / base - 1):+.1f} % | {per} |")


if __name__ == "__main__":
    main()
