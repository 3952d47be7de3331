"""Samples/s of the SCB mini-batch preconditioned gradient (issue 4 §5): ours (index sampler, gather /
scatter gradients, :mod:`inductionlab.models.linear`) against a straightforward NumPy implementation with
dense one-hot X (N, T) per sample, as the paper's NumPy code would be written.  N = 5, Q = 3, T = 500,
B = 64, one thread.  Target: ≥ 5×.

Run: ``python benchmarks/bench_scb.py`` (prints a markdown table; numbers in benchmarks/RESULTS.md).

``--transfer``: the transfer step's gradient instead (docs/conventions.md#scb-fused) — one chunk as
``transfer_start`` draws it (4 instances, T = 16000: CHUNK_TOKENS // (4 · 16001) = 65 samples each), uniforms,
examples and gradient, eager against fused (:mod:`inductionlab.models.linear_fused`), the cases alternating in one
process: ns per context token of each and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from inductionlab import uniforms
from inductionlab._runtime import tune_process
from inductionlab.models import linear_fused
from inductionlab.tasks import scb
from inductionlab.train.proximal import initial_state, preconditioned_gradients
from inductionlab.train.scb_batch import sampled_gradients
from inductionlab.train.transfer import CHUNK_TOKENS

B = 64


def ours(inst: scb.SCBInstance, steps: int) -> float:
    V, A = initial_state(inst)
    gen = torch.Generator().manual_seed(0)
    t = time.perf_counter()
    for _ in range(steps):
        preconditioned_gradients(V, A, scb.sample(inst, B, gen), inst.mu)
    return steps * B / (time.perf_counter() - t)


def numpy_dense(inst: scb.SCBInstance, steps: int) -> float:
    P, mu, Q = (t[0].numpy() for t in (inst.P, inst.mu, inst.Q))
    N, T = P.shape[0], Q.shape[0]
    V, A = mu[:, None] * np.ones((1, N)), np.full((T, N), 1.0 / T)
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for _ in range(steps):
        g_v, g_a = np.zeros((N, N)), np.zeros((T, N))
        for _ in range(B):
            x = rng.choice(N, T + 1, p=mu)
            X = np.eye(N)[x[:T]].T  # (N, T) one-hot
            k = x[T]
            s = rng.choice(T, p=Q[:, k])
            label = rng.choice(N, p=P[:, x[s]])
            h = X @ A[:, k]
            r = V @ h - np.eye(N)[label]
            g_v += np.outer(r, h) / B
            g_a[:, k] += X.T @ V.T @ r / B
        g_v, g_a = g_v / mu, g_a / mu
        g_v -= g_v.mean(0)
        g_a -= g_a.mean(0)
    return steps * B / (time.perf_counter() - t)


def transfer_chunk(inst: scb.SCBInstance, fused: bool, repeats: int, fast_rand: bool = True) -> float:
    """ns per context token of ``repeats`` chunks of the transfer step's gradient at V₀ (γ = 0.5), A₀ = 11ᵀ/T;
    ``fast_rand`` False: the uniforms by torch.rand itself (docs/conventions.md#fast-uniforms)."""
    S, T, mu = inst.P.shape[0], inst.T, inst.mu.unsqueeze(-1)
    V0, A0 = mu + 0.5 * (inst.P - mu), torch.full_like(inst.Q, 1.0 / T)
    chunk = max(1, min(4096, CHUNK_TOKENS // (S * (T + 1))))
    gen = torch.Generator().manual_seed(0)
    with linear_fused.enabled(fused), uniforms.enabled(fast_rand):
        sampled_gradients(V0, A0, inst, chunk, gen)  # the build and self-check, untimed
        t = time.perf_counter()
        for _ in range(repeats):
            sampled_gradients(V0, A0, inst, chunk, gen)
        return (time.perf_counter() - t) * 1e9 / (repeats * S * chunk * (T + 1))


def transfer(T: int, instances: int, rounds: int, repeats: int) -> None:
    inst = scb.random_instance(scb.SCBConfig(T=T), instances, np.random.default_rng(0))
    cases = {  # (fused loop, fast uniforms)
        "eager, torch.rand": (False, False),
        "fused, torch.rand": (True, False),
        "eager, fast uniforms": (False, True),
        "fused, fast uniforms": (True, True),
    }
    rows: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):  # the cases alternate, so a slower moment of the machine hits both
        for name, (fused, fast) in cases.items():
            rows[name].append(transfer_chunk(inst, fused, repeats, fast))
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"| transfer gradient, T = {T}, {instances} instances, one chunk | ns/token |\n|---|---|")
    for k, v in med.items():
        print(f"| {k} | {v:.2f} |")
    base = med["eager, torch.rand"]
    print(f"\nagainst eager with torch.rand: {', '.join(f'{k} {base / v:.2f}x' for k, v in med.items())}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--transfer", action="store_true", help="time the transfer step's gradient, eager vs fused")
    ap.add_argument("--T", type=int, default=16000, help="--transfer: context length")
    ap.add_argument("--instances", type=int, default=4, help="--transfer: instances")
    ap.add_argument("--repeats", type=int, default=5, help="--transfer: chunks per timed case and round")
    args = ap.parse_args()
    tune_process(1)
    if args.transfer:
        transfer(args.T, args.instances, args.rounds, args.repeats)
        return
    inst = scb.random_instance(scb.SCBConfig(), 1, np.random.default_rng(0))
    rows = {"ours (index sampler, gather/scatter)": [], "NumPy, dense one-hot per sample": []}
    for _ in range(args.rounds):
        rows["ours (index sampler, gather/scatter)"].append(ours(inst, args.steps))
        rows["NumPy, dense one-hot per sample"].append(numpy_dense(inst, max(args.steps // 10, 5)))
    med = {k: statistics.median(v) for k, v in rows.items()}
    print("| case | samples/s (sampling + preconditioned gradient) |\n|---|---|")
    for k, v in med.items():
        print(f"| {k} | {v:,.0f} |")
    a, b = med.values()
    print(f"\nratio = {a / b:.1f} (target ≥ 5)")


if __name__ == "__main__":
    main()
