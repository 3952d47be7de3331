"""Generation speed of in-context n-gram Markov chains (issue 5 §5): 10 000 sequences at d = 3, L = 100,
pa = {−1, −2}, α = 0.1, one thread.  Target: < 1 s (the authors' per-token loop: ~3 min).

Run: ``python benchmarks/bench_markov.py`` (numbers in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from inductionlab._runtime import tune_process
from inductionlab.tasks import markov


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--L", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tune_process(1)
    cfg = markov.MarkovConfig(L=args.L)
    times = []
    for r in range(args.rounds):
        t = time.perf_counter()
        markov.sample(cfg, args.n, np.random.default_rng(r))
        times.append(time.perf_counter() - t)
    print(
        f"{args.n} sequences at L = {args.L}: median {statistics.median(times) * 1e3:.1f} ms "
        f"(min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f}) over {args.rounds} rounds (target < 1 s)"
    )


if __name__ == "__main__":
    main()
