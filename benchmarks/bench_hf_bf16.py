"""hf-induction's two training steps in float32 and under bf16 autocast, alternated in one process on one thread:
the GPT-2 (width 64, 4 heads, MLP 256, eager attention, vocabulary 2000, L = 96, B = 32) forward + backward + AdamW,
its loss under autocast as the experiment's Trainer runs it (docs/conventions.md#bf16-training), and the toolkit's
transformer at the same size (forward + backward of :func:`inductionlab.train.text.token_losses`), in float32 with
eager attention, with the fused attention (docs/conventions.md#fused-attention) and under bf16 autocast.

Run: ``python benchmarks/bench_hf_bf16.py [--rounds 5] [--steps 10]``.  Numbers in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import time

import torch

from inductionlab.experiments.across.hf_induction.gpt2 import ModelConfig, build_gpt2
from inductionlab.models import fused
from inductionlab.models import transformer as tf
from inductionlab.train.text import token_losses

V, L, B = 2000, 96, 32
MODES = ("eager", "float32", "bf16")  # the toolkit's model: float32 eager attention, float32 fused, bf16 autocast


def gpt2_step():
    model = build_gpt2(ModelConfig(), V, L, 0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    x = torch.randint(0, V, (B, L), generator=torch.Generator().manual_seed(0))

    def step(mode: str) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def own_step():
    cfg = ModelConfig().own().build(V)
    params = {k: v.clone().requires_grad_(True) for k, v in tf.init_per_seed(cfg, [0]).items()}
    x = torch.randint(0, V, (B, L), generator=torch.Generator().manual_seed(0))

    def step(mode: str) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"), fused.enabled(mode != "eager"):
            loss = token_losses(cfg, params, x).mean()
        loss.backward()
        for p in params.values():
            p.grad = None

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = (("GPT-2 (Trainer's step)", gpt2_step, ("float32", "bf16")), ("toolkit transformer", own_step, MODES))
    for name, make, modes in cases:
        step = make()
        best = dict.fromkeys(modes, float("inf"))
        for mode in modes:
            for _ in range(3):
                step(mode)
        for _ in range(args.rounds):
            for mode in modes:
                start = time.perf_counter()
                for _ in range(args.steps):
                    step(mode)
                best[mode] = min(best[mode], (time.perf_counter() - start) / args.steps)
        base = best["eager"] if "eager" in best else best["float32"]
        print(f"{name}: " + ", ".join(f"{m} {1000 * t:.1f} ms ({base / t:.2f}×)" for m, t in best.items()))


if __name__ == "__main__":
    main()
