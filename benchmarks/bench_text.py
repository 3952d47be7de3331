"""Training throughput of the WikiText model (issue 6 §4): tokens/s of the ``wikitext`` CPU preset's training
step — 2 layers, 2 heads of 64, D = 128, FFN 512, learnable ALiBi slopes, vocabulary 2001, L = 200, B = 32,
SGD lr 0.1 — against a plain nanoGPT-style loop of the same model written the usual way (one ``nn.Module``,
autograd, ``torch.optim.SGD``), on this CPU with 2 threads.  Ours is the loop of ``train/autograd.py`` (flat
parameter matrix with a run axis, functional model of ``models/transformer.py``), timed end to end through
:func:`inductionlab.train.autograd.train` with evaluation only at the ends.

Run: ``python benchmarks/bench_text.py [--data DIR]`` (synthetic token ids unless ``--data`` gives WikiText-2);
``--device cuda`` also reports peak GPU memory.  Numbers in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from inductionlab.models import cross_entropy
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.tasks.text import TextConfig, load_corpus, random_chunks
from inductionlab.train.autograd import TrainConfig, pack, train
from inductionlab.train.text import token_losses


class PlainBlock(nn.Module):
    def __init__(self, D: int, H: int, K: int, ffn: int):
        super().__init__()
        self.H, self.K = H, K
        self.q, self.k, self.v = (nn.Linear(D, H * K, bias=False) for _ in range(3))
        self.o = nn.Linear(H * K, D, bias=False)
        self.slope = nn.Parameter(torch.full((H,), 0.01))
        self.ffn = nn.Sequential(nn.Linear(D, ffn), nn.ReLU(), nn.Linear(ffn, D))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, _ = x.shape
        q, k, v = (f(x).view(B, L, self.H, self.K).transpose(1, 2) for f in (self.q, self.k, self.v))
        i = torch.arange(L, device=x.device)
        dist = (i.view(-1, 1) - i.view(1, -1) - 1).float()
        mask = dist < 0  # strictly causal: key j < query i
        att = q @ k.transpose(-1, -2) - self.slope.view(-1, 1, 1) * dist.clamp(min=0)
        att = att.masked_fill(mask, float("-inf")).softmax(-1).nan_to_num(0.0)
        x = x + self.o((att @ v).transpose(1, 2).reshape(B, L, -1))
        return x + self.ffn(x)


class PlainLM(nn.Module):
    """The usual way: nn.Embedding, two blocks, a linear head, F.cross_entropy."""

    def __init__(self, V: int, D: int = 128, H: int = 2, K: int = 64, ffn: int = 512):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(PlainBlock(D, H, K, ffn) for _ in range(2))
        self.head = nn.Linear(D, V, bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.01)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        return F.cross_entropy(self.head(x).flatten(0, 1), targets.flatten())


def plain_rate(ids, V, L, B, steps, device, bf16) -> float:
    model = PlainLM(V).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(0)

    def step():
        x = random_chunks(ids, L, B, gen).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = model(x[:, :-1], x[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return steps * B * L / (time.perf_counter() - t)


def ours_rate(ids, V, L, B, steps, device, bf16, threads) -> float:
    cfg = tf.TransformerConfig(
        vocab=V,
        d_model=128,
        n_layers=2,
        n_heads=2,
        d_head=64,
        ffn_width=512,
        readout="all",
        init_std=0.01,
        slope_init=0.01,
    )
    theta0, views = pack({k: v.to(device) for k, v in tf.init_params(cfg, 1, torch.Generator().manual_seed(0)).items()})

    def loss(theta, x):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            return token_losses(cfg, views(theta), x).mean((1, 2))

    tc = TrainConfig(
        optimizer="sgd",
        lr=0.1,
        steps=steps,
        batch_size=B,
        eval_every=steps,
        eval_log_points=0,
        checkpoint_every=10 * steps,
    )
    sample = lambda g: random_chunks(ids, L, B, g).to(device)  # noqa: E731
    train(
        TrainConfig(optimizer="sgd", lr=0.1, steps=1, batch_size=B),
        theta0,
        loss,
        sample,
        lambda th, s: {},
        RunContext(threads=threads),
    )  # warm-up
    sync(device)
    t = time.perf_counter()
    train(tc, theta0, loss, sample, lambda th, s: {}, RunContext(threads=threads))
    sync(device)
    return steps * B * L / (time.perf_counter() - t)


def fused_loss_step(ids, V, L, B, steps, rounds, threads) -> None:
    """Ours in bf16 with the fused cross-entropy (docs/conventions.md#fused-cross-entropy) against the eager
    loss (``F.cross_entropy`` of the float32 logits, as before), rounds alternated in one process."""
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for on in (False, True):
            with cross_entropy.enabled(on):
                rates[on].append(ours_rate(ids, V, L, B, steps, torch.device("cpu"), True, threads))
    eager, fused = max(rates[False]), max(rates[True])
    print(f"  bf16, L = {L}: eager loss {eager:9.0f}   fused loss {fused:9.0f} tokens/s   ({fused / eager:.2f}x)")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--L", type=int, default=200)
    ap.add_argument("--B", type=int, default=32)
    ap.add_argument("--fused-loss", action="store_true", help="only the bf16 step, fused against eager loss")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if args.data:
        corpus = load_corpus(TextConfig(path=args.data, vocab_size=args.vocab))
        ids, V = corpus.train, len(corpus.vocab)
    else:
        V = args.vocab + 1
        ids = torch.randint(V, (300_000,), generator=torch.Generator().manual_seed(0))
    print(
        f"vocabulary {V}, L = {args.L}, B = {args.B}, {args.threads} threads, device {device}; tokens/s, "
        f"best of {args.rounds} rounds of {args.steps} steps"
    )
    if args.fused_loss:
        for L in (args.L, args.L // 2):  # wikitext's L = 200; repeated-text's 100
            fused_loss_step(ids, V, L, args.B, args.steps, args.rounds, args.threads)
        return
    for bf16 in (False, True):
        ours = max(
            ours_rate(ids, V, args.L, args.B, args.steps, device, bf16, args.threads) for _ in range(args.rounds)
        )
        plain = max(plain_rate(ids, V, args.L, args.B, args.steps, device, bf16) for _ in range(args.rounds))
        print(
            f"  {'bf16 autocast' if bf16 else 'float32      '}: ours {ours:9.0f}   plain nn.Module {plain:9.0f}   "
            f"({ours / plain:.2f}x)"
        )
        if not bf16:
            base = plain
    print(f"  cpu preset (ours, bf16) vs the plain float32 loop: {ours / base:.2f}x (target ≥ 1.2x)")
    if device.type == "cuda":
        print(f"  peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
