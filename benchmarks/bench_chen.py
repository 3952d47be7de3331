"""One full-batch training epoch of the default Chen et al. model (issue 5 §5): 9000 sequences, d = 3, L = 100,
H = 3, M = 3, D = 2; forward, backward and the SGD update, one thread.  Target: ≤ 20 ms.

Baseline ("positions"): the same model computed the way the authors' code lays it out — per head an
(L+1) × (L+1) masked RPE score matrix, softmax, the head outputs at every position, the pairwise kernel
between the query and every position, the classifier softmax — here vectorised with tensors rather than
their Python loops over heads and diagonals, so the baseline is faster than theirs.

``--model authors``: the App. B full model at the authors' configuration (``markov_full.AUTHORS_MODEL``: W_Q, W_K,
W_OV, shared LayerNorm, shifted windows of 5 lags with lag 0 open, so up to 4⁶ window states), 10 000 sequences,
float64 as the experiment trains it, one seed.  Its baseline ("whole table") is the layer-2 kernel over every pair
of occurring window states (S·Z², :func:`chen.kernel_table`) gathered at the entries, where the model computes it
only at the pairs that occur (:func:`chen.pair_kernel`).

``--model joint``: ``markov-joint``'s model, float32.  Every mode also times the epoch with the fused pair and entry
loops against the eager ones (docs/conventions.md#chen-fused), alternated in this process.

Run: ``python benchmarks/bench_chen.py [--model joint|authors]`` (numbers in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from inductionlab._runtime import tune_process
from inductionlab.models import chen, chen_fused
from inductionlab.tasks.markov import MarkovConfig, sample
from inductionlab.train.autograd import pack


def positions_loss(cfg: chen.ChenConfig, P: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """The baseline: dense (L+1)² attention per head over one-hot positions (shared window, ℓ2 norm, CE)."""
    B, L1 = tokens.shape
    x = torch.nn.functional.one_hot(tokens, cfg.vocab_size).to(P["w"].dtype)
    x[:, -1] = 0
    lag = torch.arange(L1).view(-1, 1) - torch.arange(L1).view(1, -1)  # (L+1, L+1): i − j
    valid = (lag >= 1) & (lag <= cfg.window)
    scores = torch.where(valid, P["w"][0][:, (lag.clamp(1, cfg.window) - 1)], float("-inf"))  # (H, L+1, L+1)
    att = torch.nan_to_num(scores.softmax(-1))
    v = torch.einsum("hij,bjd->bhid", att, x)  # (B, H, L+1, d)
    v = v / (v.norm(dim=-1, keepdim=True) + chen.EPS_L2)
    g = torch.einsum("bhd,bhld->bhl", v[:, :, -1], v[:, :, :-1]).relu()  # (B, H, L)
    p = chen.selection_weights(P["c"])[0]
    K = sum(
        p[k] * torch.stack([g[:, h] for h in s]).prod(0) if s else p[k] * torch.ones_like(g[:, 0])
        for k, s in enumerate(cfg.subsets)
    )
    y = torch.einsum("bl,bld->bd", (P["a"][0] * K).softmax(-1), x[:, :-1])
    return -(y.gather(1, tokens[:, -1:]) + chen.EPS_LOG).log().mean()


def whole_table_loss(cfg: chen.ChenConfig, P: dict[str, torch.Tensor], batch: chen.Batch) -> torch.Tensor:
    """The baseline of ``--model authors``: the kernel over all S·Z² pairs of occurring states, gathered (CE)."""
    Z = len(batch.states)
    T = chen.kernel_table(cfg, P, states=batch.states)  # (S, Z, Z)
    logits = P["a"].view(-1).index_select(0, batch.run) * T.view(-1).index_select(
        0, (batch.row * Z + batch.col % Z).index_select(0, batch.pair)
    )
    shift = P["a"].detach().view(-1, 1) * T.detach().amax(-1)  # (S, Z)
    logits = logits - shift.view(-1).index_select(0, batch.row.index_select(0, batch.pair))
    mass = torch.zeros(batch.labels.numel() * cfg.vocab_size, dtype=T.dtype)
    mass = mass.index_add(0, batch.slot, logits.exp() * batch.count)
    y = mass.view(*batch.labels.shape, cfg.vocab_size)
    y = y / y.sum(-1, keepdim=True)
    return -(y.gather(2, batch.labels.unsqueeze(-1)).squeeze(-1) + chen.EPS_LOG).log().mean(-1)


def timed(step, rounds: int, reps: int) -> float:
    step()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            step()
        times.append((time.perf_counter() - t) / reps)
    return statistics.median(times)


def flop_rate(step, seconds: float, dtype: torch.dtype) -> str:
    """The step's matrix-product FLOPs (``torch.utils.flop_counter``), their rate at ``seconds`` per step, and this
    thread's GEMM rate (1024², ``dtype``) beside it."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step()
    a, b = torch.randn(1024, 1024, dtype=dtype), torch.randn(1024, 1024, dtype=dtype)
    gemm = 2 * 1024**3 / timed(lambda: a @ b, 3, 5)
    flops = counter.get_total_flops()
    return (
        f"{flops / 1e6:.2f} MFLOP of products per step = {flops / seconds / 1e9:.3f} GFLOP/s, "
        f"{flops / seconds / gemm:.2%} of the {str(dtype).removeprefix('torch.')} GEMM rate ({gemm / 1e9:.1f} GFLOP/s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=9000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--model", choices=("default", "joint", "authors"), default="default")
    args = ap.parse_args()
    tune_process(1)
    if args.model == "authors":
        authors(args)
        return
    if args.model == "joint":
        joint(args)
        return
    cfg = chen.ChenConfig()
    tokens, _ = sample(MarkovConfig(), args.n, np.random.default_rng(0))
    for dtype in (torch.float32, torch.float64):
        theta, views = pack(chen.init_params(cfg, 1, dtype))
        batch = chen.make_batch(cfg, tokens, dtype)

        def step(loss):
            theta.requires_grad_(True)
            loss().sum().backward()
            with torch.no_grad():
                theta.sub_(theta.grad)
            theta.grad = None
            theta.requires_grad_(False)

        ours = timed(lambda: step(lambda: chen.loss(cfg, views(theta), batch)), args.rounds, args.reps)
        base = timed(
            lambda: step(lambda: positions_loss(cfg, views(theta), tokens)), args.rounds, max(1, args.reps // 4)
        )
        print(
            f"{dtype}: state tables {ours * 1e3:.2f} ms/epoch, positions baseline {base * 1e3:.1f} ms/epoch "
            f"({base / ours:.1f}x); target ≤ 20 ms"
        )
        print("  " + flop_rate(lambda: step(lambda: chen.loss(cfg, views(theta), batch)), ours, dtype))
        fused_against_eager(cfg, batch, dtype, args)


def fused_against_eager(cfg: chen.ChenConfig, batch: chen.Batch, dtype: torch.dtype, args: argparse.Namespace) -> None:
    """One epoch (forward, backward, SGD) with the fused pair and entry loops against the eager ones, alternated
    (docs/conventions.md#chen-fused)."""
    theta, views = pack(chen.init_params(cfg, 1, dtype))

    def step():
        theta.requires_grad_(True)
        chen.loss(cfg, views(theta), batch).sum().backward()
        with torch.no_grad():
            theta.sub_(1e-3 * theta.grad)
        theta.grad = None
        theta.requires_grad_(False)

    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for on in times:
            with chen_fused.enabled(on):
                times[on].append(timed(step, 1, args.reps))
    fused, eager = (statistics.median(times[on]) * 1e3 for on in (True, False))
    print(f"  {dtype}: fused loops {fused:.2f} ms/epoch, eager loops {eager:.2f} ms/epoch ({eager / fused:.2f}x)")


def joint(args: argparse.Namespace) -> None:
    """``--model joint``: ``markov-joint``'s model (shifted windows of 5 lags, ℓ2 heads), float32 as it trains."""
    cfg = chen.ChenConfig(windows="shifted", window=5)
    tokens, _ = sample(MarkovConfig(), 10_000, np.random.default_rng(0))
    batch = chen.make_batch(cfg, tokens, torch.float32)
    print(f"markov-joint's model: Z = {len(batch.states)}, Q = {len(batch.row)}, U = {len(batch.pair)}")
    fused_against_eager(cfg, batch, torch.float32, args)


def authors(args: argparse.Namespace) -> None:
    """``--model authors``: the pairwise kernel against the whole table, float64, one seed, 10 000 sequences."""
    from inductionlab.experiments.chen.markov_full import AUTHORS_MODEL

    cfg = AUTHORS_MODEL.build(3)
    tokens, _ = sample(MarkovConfig(), 10_000, np.random.default_rng(0))
    batch = chen.make_batch(cfg, tokens)
    theta, views = pack(chen.init_params(cfg, 1))

    def step(loss):
        theta.requires_grad_(True)
        loss().sum().backward()
        with torch.no_grad():
            theta.sub_(1e-3 * theta.grad)
        theta.grad = None
        theta.requires_grad_(False)

    gap = (chen.loss(cfg, views(theta), batch) - whole_table_loss(cfg, views(theta), batch)).abs().item()
    ours = timed(lambda: step(lambda: chen.loss(cfg, views(theta), batch)), args.rounds, args.reps)
    base = timed(lambda: step(lambda: whole_table_loss(cfg, views(theta), batch)), args.rounds, max(1, args.reps // 4))
    Z, Q, U = len(batch.states), len(batch.row), len(batch.pair)
    print(f"authors' App. B model: Z = {Z} states, Q = {Q} pairs, U = {U} entries; |loss difference| {gap:.1e}")
    print(f"pairwise kernel {ours * 1e3:.1f} ms/epoch, whole table {base * 1e3:.1f} ms/epoch ({base / ours:.1f}x)")
    print(flop_rate(lambda: step(lambda: chen.loss(cfg, views(theta), batch)), ours, torch.float64))
    fused_against_eager(cfg, batch, torch.float64, args)


if __name__ == "__main__":
    main()
