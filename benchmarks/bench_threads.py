"""Where threads start to pay (docs/conventions.md#threads): one training step (forward, backward, Adam) of the
general transformer on the run axis at growing sizes, on 1 and on 2 torch threads, cases alternated in one process.
The size is the elements of one layer's activations, batch × positions × width (width: max(H·D, L), the attention
scores' row being L long), the quantity ``Experiment.op_size`` declares.  Needs two idle cores: a busy core makes 2
threads look worse than they are.

Run: ``python benchmarks/bench_threads.py`` (prints a markdown table; numbers in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import statistics
import time

import torch

from inductionlab.models import transformer as tf
from inductionlab.tasks.induction import InductionTaskConfig, sample_tokens
from inductionlab.train import optim
from inductionlab.train.autograd import pack

SIZES = ((1, 1, 16), (2, 2, 32), (4, 4, 64), (8, 8, 128), (8, 16, 128), (8, 32, 256), (8, 64, 256))  # (H, D, B)
TASK = InductionTaskConfig(n=4, d=1, L=40)


def step_seconds(H: int, D: int, B: int, threads: int, steps: int = 30) -> float:
    model = tf.TransformerConfig(d_in=1, d_model=D, n_heads=H)
    theta, views = pack(tf.init_params(model, 1, torch.Generator().manual_seed(0)))
    state = optim.new_state("adam", theta)
    lr = torch.full((1, 1), 1e-3)
    g = torch.Generator().manual_seed(1)
    torch.set_num_threads(threads)
    times = []
    for i in range(steps + 5):
        x = sample_tokens((B, TASK.L, 1), "gaussian", g, torch.float32)
        start = time.perf_counter()
        theta.requires_grad_(True)
        out = tf.forward(model, views(theta), x.unsqueeze(0))[0]
        (0.5 * (out - TASK.target(x)).square().sum(-1).mean(-1)).sum().backward()
        grad, theta.grad = theta.grad, None
        theta.requires_grad_(False)
        optim.step(theta, grad, lr, state)
        if i >= 5:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    print("| H, D, B | size (B·L·max(HD, L)) | 1 thread (ms) | 2 threads (ms) | 1 / 2 |")
    print("|---|---|---|---|---|")
    for H, D, B in SIZES:
        one, two = [], []
        for _ in range(3):  # alternated
            one.append(step_seconds(H, D, B, 1))
            two.append(step_seconds(H, D, B, 2))
        a, b = min(one), min(two)
        size = B * TASK.L * max(H * D, TASK.L)
        print(f"| {H}, {D}, {B} | {size} | {a * 1e3:.2f} | {b * 1e3:.2f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
