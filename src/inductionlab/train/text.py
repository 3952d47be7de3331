"""Language-model training of the general transformer on text (Wang et al. docs/conventions.md#wang-6-6): cross-entropy
at every position, the loop of :mod:`inductionlab.train.autograd` (checkpoints, exact resume, NaN/inf stop),
seeds on the run axis, optional device and bf16 autocast.

Metrics at each evaluation (per run): validation loss on fixed batches, the norms the paper plots — ‖p‖
(Frobenius norm of all RPE slopes) and ‖(W_K, W_Q)‖ (over all layers and heads) — and, when a ``diagnostics``
function is given (e.g. :func:`inductionlab.analysis.heads.score_columns`), its columns on repeated random
tokens.  With
``repeated=True`` the data are :func:`~inductionlab.tasks.text.repeated_chunks` (with ``periods``,
:func:`~inductionlab.tasks.text.periodic_chunks`) and the loss is also split into
the predictable repeated positions and the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from inductionlab import rng
from inductionlab.config import require
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.tasks.induction import repeated_random_tokens
from inductionlab.tasks.text import periodic_chunks, random_chunks, repeated_chunks
from inductionlab.train import loop
from inductionlab.train.autograd import TrainConfig, pack, train
from inductionlab.train.next_token import token_losses

Diagnostics = Callable[[tf.TransformerConfig, tf.Params, torch.Tensor], dict[str, np.ndarray]]


@dataclass(frozen=True)
class EvalConfig:
    """Fixed evaluation data: ``val_batches`` batches of the training batch size from the validation split, and
    ``score_batch`` sequences of ``score_period`` random tokens repeated twice for the head diagnostics."""

    val_batches: int = 4  # validation batches (of train.batch_size chunks) per evaluation
    score_batch: int = 16  # sequences of the repeated-random-token head diagnostics
    score_period: int = 25  # tokens of each diagnostic sequence's first copy (it is repeated twice)
    seed: int = 2024  # seed of the fixed evaluation data (not a run axis)

    def __post_init__(self) -> None:
        for name in ("val_batches", "score_batch"):
            require(getattr(self, name) >= 1, f"eval.{name}", f"must be ≥ 1, got {getattr(self, name)}")
        require(
            self.score_period >= 2,
            "eval.score_period",
            f"must be ≥ 2 (the diagnostics score the second copy against the first), got {self.score_period}",
        )


def weight_norms(cfg: tf.TransformerConfig, params: tf.Params) -> dict[str, np.ndarray]:
    """‖p‖ and ‖(W_K, W_Q)‖ per run (S,), and ‖(W_K, W_Q)‖ of each layer (``wkq_norm_l1``, ``wkq_norm_l2``, …)."""
    p = torch.stack([params[f"blocks.{l}.attn.p"].flatten(1) for l in range(cfg.n_layers)], 1).flatten(1)
    per_layer = torch.stack(
        [
            torch.cat([params[f"blocks.{l}.attn.{w}"].flatten(1) for w in ("W_K", "W_Q")], 1).norm(dim=1)
            for l in range(cfg.n_layers)
        ],
        1,
    )  # (S, n_layers)
    out = {"p_norm": p.norm(dim=1), "wkq_norm": per_layer.norm(dim=1)}
    out |= {f"wkq_norm_l{l + 1}": per_layer[:, l] for l in range(cfg.n_layers)}
    return {k: v.double().cpu().numpy() for k, v in out.items()}


Chunks = Callable[[torch.Tensor, int, int, torch.Generator], tuple[torch.Tensor, torch.Tensor]]


def _repeats(periods: tuple[int, int] | None) -> Chunks:
    """The sequences with repeats: a repeated half, or with ``periods`` a window repeated with its own period."""
    return repeated_chunks if periods is None else functools.partial(periodic_chunks, periods=periods)


def _evaluation_data(
    val_ids: torch.Tensor,
    L: int,
    batch_size: int,
    evals: EvalConfig,
    repeated: Chunks | None,
    vocab: int,
    dev: torch.device,
) -> tuple[list, torch.Tensor]:
    """Fixed validation batches [(tokens (B, L + 1), repeated-position mask (B, L) or None)] and the repeated
    random tokens of the head diagnostics, all drawn from ``evals.seed``."""
    eval_gen = rng.generator(evals.seed)
    batches: list[tuple[torch.Tensor, torch.Tensor | None]]
    if repeated:
        batches = [repeated(val_ids, L + 1, batch_size, eval_gen) for _ in range(evals.val_batches)]
    else:
        batches = [(random_chunks(val_ids, L, batch_size, eval_gen), None) for _ in range(evals.val_batches)]
    batches = [(x.to(dev), None if m is None else m[:, :-1].to(dev)) for x, m in batches]
    score_tokens = repeated_random_tokens(evals.score_batch, evals.score_period, 2, eval_gen, vocab).to(dev)
    return batches, score_tokens


def fit_lm(
    model: tf.TransformerConfig,
    cfg: TrainConfig,
    evals: EvalConfig,
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    L: int,
    seeds: Sequence[int],
    ctx: RunContext = RunContext(threads=1),
    repeated: bool = False,
    periods: tuple[int, int] | None = None,
    bf16: bool = False,
    diagnostics: Diagnostics | None = None,
    hooks: Sequence[loop.Hook] = (),
    desc: str = "lm",
    forward_hooks: tf.Hooks | None = None,
) -> tuple[tf.Params, pd.DataFrame]:
    """Train one model per seed on ``train_ids`` (windows of L tokens), one batch a step from the first seed's data
    stream (docs/conventions.md#seeds); returns the final parameters (CPU) and the metrics (run, step, seed, …).
    ``diagnostics``: columns on ``evals.score_batch`` repeated random tokens; ``forward_hooks``: in every loss and
    evaluation (ablations); ``periods``: with ``repeated``, repeat windows of those periods (``periodic_chunks``)."""
    require(model.vocab > 0 and model.readout == "all", "model", "a language model needs vocab > 0 and readout 'all'")
    require(cfg.seed == 0, "train.seed", f"the batches are drawn from the first seed ({seeds[0]}); leave it 0")
    top = int(train_ids.max())
    require(top < model.vocab, "model.vocab", f"must exceed the largest token id {top}")
    dev = torch.device(ctx.device)
    theta0, views = pack({k: v.to(dev) for k, v in tf.init_per_seed(model, seeds).items()})
    chunks = _repeats(periods) if repeated else None
    batches, score_tokens = _evaluation_data(val_ids, L, cfg.batch_size, evals, chunks, model.vocab, dev)

    autocast = functools.partial(torch.autocast, dev.type, dtype=torch.bfloat16, enabled=bf16)

    def loss(theta: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        with autocast():
            return token_losses(model, views(theta), tokens, forward_hooks).mean((1, 2))

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        params = views(theta)
        with autocast():
            losses = [(token_losses(model, params, x, forward_hooks), m) for x, m in batches]
            row = {"val_loss": torch.stack([l.mean((1, 2)) for l, _ in losses]).mean(0).double().cpu().numpy()}
            if repeated:
                rep = sum((l * m).sum((1, 2)) for l, m in losses) / sum(m.sum() for _, m in losses)
                rest = sum((l * ~m).sum((1, 2)) for l, m in losses) / sum((~m).sum() for _, m in losses)
                row |= {"loss_repeated": rep.double().cpu().numpy(), "loss_other": rest.double().cpu().numpy()}
        if diagnostics is not None:  # measured in float32 whatever the training precision
            row |= diagnostics(model, params, score_tokens)
        return row | weight_norms(model, params)

    def sample(g: torch.Generator) -> torch.Tensor:
        B = cfg.batch_size
        return (chunks(train_ids, L + 1, B, g)[0] if chunks else random_chunks(train_ids, L, B, g)).to(dev)

    record = {"family": "transformer", "config": model}
    stream = replace(cfg, seed=rng.derive(seeds[0]))  # each data draw its own batches (docs/conventions.md#seeds)
    theta, metrics = train(stream, theta0, loss, sample, evaluate, ctx, hooks=hooks, desc=desc, model=record)
    return (
        {k: v.detach().cpu().clone() for k, v in views(theta).items()},
        metrics.assign(seed=lambda d: np.asarray(seeds)[d.run]),
    )
