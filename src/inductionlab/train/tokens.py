"""The general transformer on any discrete-token task you can sample (docs/own_task.md): next-token cross-entropy,
the loop of :mod:`inductionlab.train.autograd` (checkpoints, exact resume, Ctrl-C keeps the metrics, NaN/inf stop),
one run per seed on the run axis, and the model recorded in the checkpoint so that
:func:`inductionlab.load_model` gives it back.

A task is a function ``sample(generator) → tokens (B, L + 1)`` (int64 ids in 0..V−1) drawing from the
``torch.Generator`` it is given: the model reads x_1..x_L and predicts x_2..x_{L+1} (``positions="all"``) or only
x_{L+1} (``positions="last"``, a task whose label is its last token).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd
import torch

from inductionlab.config import require
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.train import loop
from inductionlab.train.autograd import TrainConfig, pack, train
from inductionlab.train.next_token import token_losses

TokenSampler = Callable[[torch.Generator], torch.Tensor]  # generator → tokens (B, L + 1) int64
Extra = Callable[[tf.TransformerConfig, tf.Params], dict[str, np.ndarray]]  # (model, params) → columns (S,)


def _check_tokens(tokens: torch.Tensor, vocab: int, what: str) -> None:
    ok = tokens.dim() == 2 and tokens.shape[1] >= 2 and not tokens.is_floating_point()
    require(ok, what, f"must be int64 token ids of shape (B, L + 1), L ≥ 1; got {tokens.dtype} {tuple(tokens.shape)}")
    top, low = int(tokens.max()), int(tokens.min())
    require(0 <= low and top < vocab, what, f"ids must lie in 0..{vocab - 1} (model.vocab {vocab}), got {low}..{top}")


def fit_tokens(
    model: tf.TransformerConfig,
    sample: TokenSampler,
    cfg: TrainConfig,
    seeds: Sequence[int],
    eval_tokens: torch.Tensor,
    ctx: RunContext = RunContext(threads=1),
    positions: Literal["all", "last"] = "all",
    extra: Extra | None = None,
    hooks: Sequence[loop.Hook] = (),
    desc: str = "tokens",
) -> tuple[tf.Params, pd.DataFrame]:
    """Train one model per seed (initialised from its seed; batches from ``sample`` with the loop's generator,
    seeded by ``cfg.seed``) on next-token cross-entropy at ``positions``; returns the final parameters (CPU,
    run axis first) and the metrics: per run and evaluation step, ``loss`` (nats) and ``accuracy`` (the argmax
    prediction) on the fixed ``eval_tokens`` (B_eval, L + 1) at the same positions (with ``positions="all"``
    also ``last_loss`` and ``last_accuracy``, of x_{L+1} alone), ``seed``, and ``extra``'s columns (e.g. attention scores from :func:`inductionlab.analysis.heads.head_scores`)::

        params, metrics = fit_tokens(TransformerConfig(vocab=5, readout="all"), my_sampler, TrainConfig(steps=500),
                                     seeds=(0, 1), eval_tokens=my_sampler(rng.generator(0, "held-out")))
    """
    require(model.vocab > 0 and model.readout == "all", "model", "needs vocab > 0 and readout 'all' (token logits)")
    require(positions in ("all", "last"), "positions", f"'all' or 'last', got {positions!r}")
    require(len(seeds) >= 1, "seeds", "give at least one seed")
    _check_tokens(eval_tokens, model.vocab, "eval_tokens")
    dev = torch.device(ctx.device)
    theta0, views = pack({k: v.to(dev) for k, v in tf.init_per_seed(model, seeds).items()})
    x_eval = eval_tokens.to(dev)
    at = slice(None) if positions == "all" else slice(-1, None)

    def batch(g: torch.Generator) -> torch.Tensor:
        tokens = sample(g)
        _check_tokens(tokens, model.vocab, "sample(generator)")
        return tokens.to(dev)

    def loss(theta: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        return token_losses(model, views(theta), tokens)[:, :, at].mean((1, 2))

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        params = views(theta)
        losses = token_losses(model, params, x_eval)  # (S, B, L)
        right = tf.forward(model, params, x_eval[:, :-1].unsqueeze(0))[0].argmax(-1) == x_eval[:, 1:]  # (S, B, L)
        row = {}
        for name, where in {"": at, "last_": slice(-1, None)}.items() if positions == "all" else {"": at}.items():
            row[f"{name}loss"] = losses[:, :, where].mean((1, 2)).double().cpu().numpy()
            row[f"{name}accuracy"] = right[:, :, where].double().mean((1, 2)).cpu().numpy()
        return row | (extra(model, params) if extra is not None else {})

    record = {"family": "transformer", "config": model}
    theta, metrics = train(cfg, theta0, loss, batch, evaluate, ctx, hooks=hooks, desc=desc, model=record)
    return (
        {k: v.detach().cpu().clone() for k, v in views(theta).items()},
        metrics.assign(seed=lambda d: np.asarray(seeds)[d.run]),
    )
