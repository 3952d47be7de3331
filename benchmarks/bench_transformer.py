"""Speed of one training step of the general transformer in the ``heads-dims`` (8, 8) configuration:
H = 8 heads, D = 8, two layers with DP + RPE and residual, IH_4 target, d = 1, L = 40, batch 128, Adam, one thread.

(a) eager attention core, 1 run; (b) the fused core (:mod:`inductionlab.models.fused`), 1 run;
(c), (d) as (a), (b) with 8 runs on the run axis (per run-step);
(e) a plain ``nn.Module`` written the usual way (per-head Linear layers, autograd, torch.optim.Adam),
    trained run after run — per run-step;
(f) with ``--compiled``: (a) with the loss compiled by ``torch.compile``.
Then the step's matrix-product FLOPs, the GEMM rate of this thread, and the fused step's share of it.  The last
line is ``fused/eager: X.XX`` for one run.  ``ATEN_CPU_CAPABILITY=avx2`` measures the AVX2 build.

Run: ``python benchmarks/bench_transformer.py`` (prints a markdown table; numbers in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from torch import nn

from inductionlab._runtime import tune_process
from inductionlab.models import fused
from inductionlab.models import transformer as tf
from inductionlab.tasks.induction import InductionTaskConfig, sample_tokens
from inductionlab.train import optim
from inductionlab.train.autograd import pack

H, D, B = 8, 8, 128
TASK = InductionTaskConfig(n=4, d=1, L=40)
MODEL = tf.TransformerConfig(d_in=1, d_model=D, n_heads=H)


COMPILE_SECONDS: dict[int, float] = {}


def ours(runs: int, steps: int, compiled: bool = False, batch: int = B, fuse: bool = True) -> float:
    """Seconds per run-step of the run-axis step (forward, backward, Adam) used by train.autograd, with the fused
    attention core or (``fuse=False``) the eager one."""
    with fused.enabled(fuse):
        return _ours(runs, steps, compiled, batch)


def _ours(runs: int, steps: int, compiled: bool, batch: int) -> float:
    theta, views = pack(tf.init_params(MODEL, runs, torch.Generator().manual_seed(0)))
    state = optim.new_state("adam", theta)
    lr = torch.full((runs, 1), 1e-3)
    g = torch.Generator().manual_seed(1)

    def loss(theta, x):
        out = tf.forward(MODEL, views(theta), x.unsqueeze(0))[0]
        return (0.5 * (out - TASK.target(x)).square().sum(-1).mean(-1)).sum()

    if compiled:
        loss = torch.compile(loss, dynamic=False)
        theta.requires_grad_(True)
        start = time.perf_counter()
        loss(theta, sample_tokens((batch, TASK.L, 1), "gaussian", g, torch.float32)).backward()
        COMPILE_SECONDS.setdefault(runs, time.perf_counter() - start)
        theta.grad = None
        theta.requires_grad_(False)

    def step():
        x = sample_tokens((batch, TASK.L, 1), "gaussian", g, torch.float32)
        theta.requires_grad_(True)
        loss(theta, x).backward()
        grad, theta.grad = theta.grad, None
        theta.requires_grad_(False)
        optim.step(theta, grad, lr, state)

    return _time(step, steps) / runs


class Plain(nn.Module):
    """Two attention layers, per-head nn.Linear projections, learnable ALiBi slope per head, residual."""

    def __init__(self):
        super().__init__()
        self.embed, self.unembed = nn.Linear(1, D, bias=False), nn.Linear(D, 1, bias=False)
        self.layers = nn.ModuleList()
        for _ in range(2):
            layer = nn.ModuleDict({n: nn.Linear(D, H * D, bias=False) for n in ("q", "k", "v")})
            layer["o"] = nn.Linear(H * D, D, bias=False)
            self.layers.append(layer)
        self.slopes = nn.Parameter(torch.full((2, H), 0.01))
        for p in self.parameters():
            nn.init.normal_(p, std=0.01) if p.dim() > 1 else None

    def forward(self, x):  # x (B, L, 1)
        z = self.embed(x)
        L = x.shape[1]
        i = torch.arange(L)
        dist = (i.view(-1, 1) - i.view(1, -1) - 1).clamp(min=0).float()
        mask = i.view(1, -1) >= i.view(-1, 1)
        for l, layer in enumerate(self.layers):
            q, k, v = (layer[n](z).view(z.shape[0], L, H, D).transpose(1, 2) for n in ("q", "k", "v"))
            logits = q @ k.transpose(-1, -2) - self.slopes[l].view(1, H, 1, 1) * dist
            att = torch.softmax(logits.masked_fill(mask, -math.inf).nan_to_num(-1e9), -1)
            att = att * (~mask).any(-1, keepdim=True)
            z = z + layer["o"]((att @ v).transpose(1, 2).reshape(z.shape[0], L, H * D))
        return self.unembed(z[:, -1])


def plain(runs: int, steps: int, batch: int = B) -> float:
    total = 0.0
    for r in range(runs):
        torch.manual_seed(r)
        model = Plain()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(1)

        def step():
            x = torch.randn(batch, TASK.L, 1, generator=g)
            loss = 0.5 * (model(x) - TASK.target(x)).square().sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        total += _time(step, steps)
    return total / runs


def _time(fn, steps: int) -> float:
    for _ in range(5):
        fn()
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t) / steps


def step_flops(batch: int) -> int:
    """Matrix-product FLOPs of one run-step (forward and backward), counted by ``torch.utils.flop_counter`` on the
    eager path (the fused kernel does the same products, minus the masked half of each score matrix)."""
    from torch.utils.flop_counter import FlopCounterMode

    params = {k: v.requires_grad_(True) for k, v in tf.init_params(MODEL, 1, torch.Generator().manual_seed(0)).items()}
    x = sample_tokens((batch, TASK.L, 1), "gaussian", torch.Generator().manual_seed(1), torch.float32)
    with fused.enabled(False), FlopCounterMode(display=False) as counter:
        out = tf.forward(MODEL, params, x.unsqueeze(0))[0]
        (0.5 * (out - TASK.target(x)).square().sum(-1).mean(-1)).sum().backward()
    return counter.get_total_flops()


def gemm_rate(n: int = 1024, reps: int = 20) -> float:
    """FLOP/s of one fp32 (n × n) · (n × n) product on this thread: the machine's GEMM rate."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n**3 / _time(lambda: a @ b, reps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128, help="sequences per step (the run axis pays at small batches)")
    ap.add_argument("--compiled", action="store_true", help="also time the loss through torch.compile (eager core)")
    args = ap.parse_args()
    tune_process(1)
    cases = {
        "(a) eager attention, 1 run": lambda: ours(1, args.steps, batch=args.batch, fuse=False),
        "(b) fused attention, 1 run": lambda: ours(1, args.steps, batch=args.batch),
        "(c) eager attention, 8 runs (per run-step)": lambda: ours(8, args.steps, batch=args.batch, fuse=False),
        "(d) fused attention, 8 runs (per run-step)": lambda: ours(8, args.steps, batch=args.batch),
        "(e) plain nn.Module, 8 runs in turn": lambda: plain(8, args.steps // 4, batch=args.batch),
    }
    if args.compiled:
        cases["(f) eager attention compiled, 1 run"] = lambda: ours(1, args.steps, True, args.batch, fuse=False)
    rows: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.rounds):  # interleaved rounds: the machine's drift hits every case alike
        for k, fn in cases.items():
            rows[k].append(fn())
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"H = {H}, D = {D}, L = {TASK.L}, B = {args.batch}, one thread, {torch.backends.cpu.get_cpu_capability()}")
    print("| case | ms per run-step |\n|---|---|")
    for k, v in med.items():
        print(f"| {k} | {v * 1e3:.2f} |")
    a, b, c, d, e = list(med.values())[:5]
    flops, gemm = step_flops(args.batch), gemm_rate()
    print(f"\nrun axis: (a)/(c) = {a / c:.2f}, (b)/(d) = {b / d:.2f}; plain/fused (e)/(d) = {e / d:.2f}")
    print(
        f"step: {flops / 1e6:.1f} MFLOP of products; GEMM (1024²) {gemm / 1e9:.1f} GFLOP/s; fused step "
        f"{flops / b / 1e9:.1f} GFLOP/s = {flops / b / gemm:.0%} of it (eager {flops / a / gemm:.0%})"
    )
    if args.compiled:
        print(f"compile time of the first step: {', '.join(f'{s:.1f} s' for s in COMPILE_SECONDS.values())}")
    print(f"fused/eager (8 runs, per run-step): {c / d:.2f}")
    print(f"fused/eager: {a / b:.2f}")


if __name__ == "__main__":
    main()
