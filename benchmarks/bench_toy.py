"""Speed of one training step of the toy model (issue: spine §7), B=1000, L=40, one process, one thread.

(a) RNG floor: ``torch.randn(B, L)`` alone per step.
(b) a plain eager-autograd single-run script as a researcher would write it (slices, torch.optim.SGD).
(c) ours, one run (train_toy, Stage II, ideal layer 1 — the paper's Stage II setting; and Stage I).
(d) ours, 32 runs on the run axis, per run-step.

Run: ``python benchmarks/bench_toy.py`` (prints a markdown table; numbers in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from inductionlab._runtime import tune_process
from inductionlab.models import toy
from inductionlab.runs import RunContext
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.train import toy_batches
from inductionlab.train.toy import ToyTrainConfig, train_toy

B, L = 1000, 40


def floor(steps: int) -> float:
    g = torch.Generator().manual_seed(0)
    t = time.perf_counter()
    for _ in range(steps):
        torch.randn(B, L, generator=g)
    return (time.perf_counter() - t) / steps


def plain(steps: int, ideal: bool = True) -> float:
    """The straightforward script: six scalar parameters, autograd, torch.optim.SGD."""
    g = torch.Generator().manual_seed(0)
    params = torch.nn.ParameterList([torch.nn.Parameter(torch.tensor(0.01)) for _ in range(6)])
    p_tilde, p, w_v1, w_v2, w_q, w_k = params
    opt = torch.optim.SGD(list(params)[1:], lr=0.1)
    alpha, w_star = 1.0, 0.49
    s = torch.arange(2, L + 0.0)  # key positions 2..L-1 (1-indexed)
    t = time.perf_counter()
    for _ in range(steps):
        x = torch.randn(B, L, generator=g)
        if ideal:
            y = x[:, :-2]
        else:
            dist = (torch.arange(1, L - 1.0).view(-1, 1) - torch.arange(L + 0.0)).clamp(min=0)
            logits = (-p_tilde * dist).masked_fill(torch.arange(L) >= torch.arange(1, L - 1).view(-1, 1), -torch.inf)
            y = x @ torch.softmax(logits, -1).T
        target1 = alpha / (1 + alpha) * x[:, L - 3]
        att_star = torch.softmax(w_star**2 * x[:, -1:] * x[:, :-2], -1)
        target2 = (att_star * x[:, 1:-1]).sum(-1) / (1 + alpha)
        pi = torch.softmax(-p * (L - 1 - s), 0)
        out1 = w_v1 * (y * pi).sum(-1)
        rho = torch.softmax(w_q * w_k * x[:, -1:] * y, -1)
        out2 = w_v2 * (rho * x[:, 1:-1]).sum(-1)
        loss = 0.5 * ((out1 - target1) ** 2).mean() + 0.5 * ((out2 - target2) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (time.perf_counter() - t) / steps


def ours(
    steps: int, runs: int, stage: str, prefetch: bool, compile: str | None = None, one_seed: bool = False
) -> float:
    """train_toy as its default compile="auto" runs a long stage (compiled at ≤ 4 runs), unless given;
    ``one_seed``: every run on seed 0 (the same data)."""
    compile = compile or ("on" if runs <= 4 else "off")
    s1, s2 = (steps, 0) if stage == "I" else (0, steps)
    cfg = ToyTrainConfig(
        stage1_steps=s1, stage2_steps=s2, eval_every=10**9, eval_log_points=0, eval_size=1000, compile=compile
    )
    target = MixedTarget.per_run([1.0] * runs, [0.49] * runs, L)
    t = time.perf_counter()
    seeds = [0] * runs if one_seed else list(range(runs))
    train_toy(cfg, target, toy.init_params(0.01, runs), seeds, RunContext(threads=2 if prefetch else 1))
    return (time.perf_counter() - t) / steps / runs


def plain_in_fresh_process(steps: int) -> float:
    """(b) as a researcher runs it: its own process, default allocator, one thread."""
    code = (
        f"import torch, sys; torch.set_num_threads(1); sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"import bench_toy; print(bench_toy.plain({steps:d}))"
    )
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def own_draws(steps: int, runs: int) -> float:
    """(e) as before shared batches: every run on seed 0 drawing and preparing its own batch."""
    shared = toy_batches.twins
    toy_batches.twins = lambda states, target, a: list(range(len(states)))
    try:
        return ours(steps, runs, "II", False, one_seed=True)
    finally:
        toy_batches.twins = shared


def shared_batches(steps: int, rounds: int) -> None:
    """(e) runs on the same data (one seed): the batch drawn once (docs/conventions.md#shared-batches) against
    each run drawing its own, Stage II, one thread, per run-step, interleaved."""
    tune_process()
    ours(20, 2, "II", False)  # compile once before timing
    print(f"B={B}, L={L}, {steps} steps, {rounds} interleaved rounds, one thread, µs per run-step (median)\n")
    print("| runs on one seed | own draws (before) | shared draws | ratio |\n|---|---|---|---|")
    for runs in (2, 8):
        own, shared = [], []
        for _ in range(rounds):
            own.append(own_draws(steps, runs))
            shared.append(ours(steps, runs, "II", False, one_seed=True))
        a, b = statistics.median(own), statistics.median(shared)
        print(f"| {runs} | {a * 1e6:.0f} | {b * 1e6:.0f} | {a / b:.2f}× |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved repetitions; medians are reported")
    ap.add_argument("--shared", action="store_true", help="only (e): runs on one seed, shared against own draws")
    args = ap.parse_args()
    n = args.steps
    if args.shared:
        return shared_batches(n, args.rounds)
    cases = {
        "(a) RNG floor: torch.randn(B, L)": lambda: floor(n),
        "(b) plain eager autograd + torch.optim.SGD, own process (Stage II, ideal layer 1)": lambda: (
            plain_in_fresh_process(n)
        ),
        "(b) the same plain script inside our tuned process": lambda: plain(n),
        "(b') plain script, Stage II with the learned layer 1": lambda: plain(n // 2, ideal=False),
        "(c) ours, 1 run, Stage II (ideal layer 1), compiled, prefetch thread (default)": lambda: ours(
            n, 1, "II", True
        ),
        "(c) ours, 1 run, Stage II, compiled, one thread (prefetch off)": lambda: ours(n, 1, "II", False),
        "(c) ours, 1 run, Stage II, eager (compile off), prefetch": lambda: ours(n, 1, "II", True, "off"),
        "(c') ours, 1 run, Stage I (learned layer 1, p̃ gradient), compiled, prefetch": lambda: ours(
            n // 2, 1, "I", True
        ),
        "(c') ours, 1 run, Stage I, eager, prefetch": lambda: ours(n // 2, 1, "I", True, "off"),
        "(d) ours, 32 runs, Stage II (eager, as auto), one thread, per run-step": lambda: ours(
            max(n // 8, 100), 32, "II", False
        ),
        "(d) ours, 32 runs, Stage II, prefetch, per run-step": lambda: ours(max(n // 8, 100), 32, "II", True),
    }
    tune_process()
    for stage in ("I", "II"):  # compile once before timing (seconds, once per process)
        ours(20, 1, stage, False)
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.rounds):
        for name, fn in cases.items():
            samples[name].append(fn())
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"B={B}, L={L}, {n} steps, {args.rounds} interleaved rounds, one thread\n")
    print("| measurement | µs per (run-)step, median | min |\n|---|---|---|")
    for name, v in samples.items():
        print(f"| {name} | {med[name] * 1e6:.0f} | {min(v) * 1e6:.0f} |")
    keys = list(cases)
    a, b = med[keys[0]], med[keys[1]]
    print(f"\n(b)/(c): prefetch {b / med[keys[4]]:.2f}, one thread {b / med[keys[5]]:.2f} (target ≥ 2.5)")
    print(f"(b)/(c) eager, prefetch: {b / med[keys[6]]:.2f}")
    print(f"(d)/(a): one thread {med[keys[9]] / a:.2f}, prefetch {med[keys[10]] / a:.2f} (target ≤ 2)")


if __name__ == "__main__":
    main()
