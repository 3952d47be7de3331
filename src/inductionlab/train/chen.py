"""Staged and joint full-batch training of the Chen et al. model (docs/conventions.md#chen-3).

A schedule is a list of stages; each names the parameter groups it trains — ``c`` (the FFN selector, with the
LayerNorm affine parameters), ``w`` (layer 1: the RPE and, in the full model, W_Q, W_K, W_OV), ``a`` (the
classifier) — with its own learning rate and number of epochs.  The three-stage flow of §3.2 is
("c", "w", "a") with (lr, epochs) (1, 2000), (10⁵, 5000), (1, 5000) (docs/conventions.md#chen-a6); joint training CWa is ("cwa",)
and CW_a ("cw", "a").  One epoch is one full-batch gradient step on the fixed training set (SGD, momentum 0).

The stages are the stages of one :func:`inductionlab.train.autograd.train` run, each with the other groups
frozen, so they share the loop's checkpoints, exact resume, NaN/inf stop and hooks.  Metrics are
taken on a log-spaced epoch grid per stage (not every epoch; docs/conventions.md#chen-6): train and validation loss, a, p_S for
every subset, the RPE weights of every head, and the mean total-variation distance of the model's prediction
to the Bayes, in-context bigram and unigram estimators on the validation set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import torch

from inductionlab.config import require
from inductionlab.models import chen
from inductionlab.runs import RunContext
from inductionlab.tasks.markov import MarkovConfig, reference_predictors
from inductionlab.train import loop
from inductionlab.train.autograd import StageSpec, TrainConfig, pack, train


@dataclass(frozen=True)
class StagedConfig:
    """Stages (letters of the groups trained), their learning rates and lengths in epochs
    (docs/conventions.md#chen-3-2, docs/conventions.md#chen-a6)."""

    # the stages: letters of the groups each trains, c (selector), w (copier), a (classifier)
    stages: tuple[str, ...] = ("c", "w", "a")
    lrs: tuple[float, ...] = (1.0, 1e5, 1.0)  # learning rate of each stage
    epochs: tuple[int, ...] = (2000, 5000, 5000)  # full-batch steps of each stage
    eval_log_points: int = 40  # evaluations at about this many log-spaced epochs per stage
    checkpoint_every: int = 2000  # write a resumable checkpoint every this many epochs
    dtype: Literal["float32", "float64"] = "float32"  # floating-point precision of training

    def __post_init__(self) -> None:
        n = len(self.stages)
        require(n >= 1, "train.stages", "give at least one stage, e.g. c,w,a")
        require(
            len(self.lrs) == n and len(self.epochs) == n,
            "train.lrs/epochs",
            f"need one per stage ({n}), got {len(self.lrs)} and {len(self.epochs)}",
        )
        for s in self.stages:
            require(
                bool(s) and set(s) <= set(chen.GROUPS),
                "train.stages",
                f"each stage is letters of c, w, a (e.g. cwa), got {s!r}",
            )
        require(
            all(lr > 0 and math.isfinite(lr) for lr in self.lrs), "train.lrs", f"must be finite and > 0, got {self.lrs}"
        )
        require(all(e >= 0 for e in self.epochs), "train.epochs", f"must be ≥ 0, got {self.epochs}")
        require(self.checkpoint_every >= 1, "train.checkpoint_every", "must be ≥ 1")


def _distances(y: torch.Tensor, refs: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Mean total-variation distance (S,) of y (S, B, d) to each reference (S, B, d)."""
    return {f"tv_{name}": (0.5 * (y - ref).abs().sum(-1)).mean(-1).numpy() for name, ref in refs.items()}


def param_columns(cfg: chen.ChenConfig, params: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """a, p_{S} per subset and w_h{h}_lag{j} (RPE weights) per run, for the metrics table."""
    w = params["w"].detach().double().numpy().copy()  # a copy: θ is updated in place after this
    row = {"a": params["a"][:, 0].detach().double().numpy().copy()}
    p = chen.selection_weights(params["c"].detach().double())
    row.update({f"p_{chen.subset_label(s)}": p[:, k].numpy() for k, s in enumerate(cfg.subsets)})
    for h in range(cfg.n_heads):
        row.update({f"w_h{h + 1}_lag{j + 1}": w[:, h, j] for j in range(cfg.window)})
    return row


def train_staged(
    model: chen.ChenConfig,
    cfg: StagedConfig,
    task: MarkovConfig,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    ctx: RunContext = RunContext(threads=1),
    hooks: Sequence[loop.Hook] = (),
    desc: str = "markov",
) -> tuple[dict[str, torch.Tensor], pd.DataFrame]:
    """Train S runs (one dataset each: tokens (S, B, L + 1)) through the stages; returns the final parameters
    and the metrics table (run, stage, stage_name, step, epoch, train_loss, val_loss, a, p_*, w_*, tv_*)."""
    S, dtype = train_tokens.shape[0], getattr(torch, cfg.dtype)
    theta, views = pack(chen.init_params(model, S, dtype))
    train_batch, val_batch = chen.make_batch(model, train_tokens, dtype), chen.make_batch(model, val_tokens, dtype)
    refs = reference_predictors(task, val_tokens)

    def loss(th: torch.Tensor, batch: chen.Batch) -> torch.Tensor:
        return chen.loss(model, views(th), batch)

    def evaluate(th: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        params = views(th)
        row = {"train_loss": loss(th, train_batch).double().numpy(), "val_loss": loss(th, val_batch).double().numpy()}
        y = chen.predict(model, params, val_batch).double()
        return {**row, **param_columns(model, params), **_distances(y, refs)}

    specs = []
    for groups, lr, epochs in zip(cfg.stages, cfg.lrs, cfg.epochs):
        names = {n for g in groups for n in chen.GROUPS[g]}
        mask = torch.cat([torch.full((v[0].numel(),), float(k in names)) for k, v in views(theta).items()])
        tc = TrainConfig(
            optimizer="sgd",
            lr=lr,
            steps=epochs,
            batch_size=1,
            eval_every=max(epochs, 1),
            eval_log_points=cfg.eval_log_points,
            checkpoint_every=cfg.checkpoint_every,
        )
        specs.append(StageSpec(groups, tc, mask))
    record = {"family": "chen", "config": model}
    theta, m = train(specs, theta, loss, lambda g: train_batch, evaluate, ctx, hooks=hooks, desc=desc, model=record)
    if "stage" not in m:
        m = m.assign(stage=0)
    m = m[(m.stage == 0) | (m.step > 0)]  # the start of a stage is the end of the previous one
    offsets = np.cumsum([0, *cfg.epochs[:-1]])
    m = m.assign(stage_name=np.asarray(cfg.stages)[m.stage], epoch=m.step + offsets[m.stage]).reset_index(drop=True)
    return {k: v.clone() for k, v in views(theta).items()}, m


def a_log_fit(metrics: pd.DataFrame) -> tuple[float, float]:
    """(slope, R²) of a against ln(epoch within the stage) over the second half (log-scale) of the last stage
    that trains a: a(t) ≈ slope·ln t + c (docs/conventions.md#chen-3-2, docs/conventions.md#chen-8); means over runs.  NaN if no stage
    trains a or it has fewer than three evaluations there."""
    stages = metrics[metrics.stage_name.str.contains("a")]
    if stages.empty:
        return math.nan, math.nan
    a = stages[stages.stage == stages.stage.max()].groupby("step").a.mean()
    t = a.index.to_numpy(float)
    keep = t >= math.sqrt(max(t.max(), 1.0))
    if keep.sum() < 3:
        return math.nan, math.nan
    x, y = np.log(t[keep]), a.to_numpy()[keep]
    coef = np.polyfit(x, y, 1)
    return float(coef[0]), float(1 - (y - np.polyval(coef, x)).var() / max(y.var(), 1e-300))
