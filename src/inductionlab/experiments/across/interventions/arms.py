"""The transformer and Chen-model sections of ``interventions``, the companion of its package: the attention-only transformer with and without its layer-1 heads ablated, and
the Chen model's selector with the copier's RPE free or frozen — each trained, summarised and drawn on its panel."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from inductionlab import rng
from inductionlab.analysis.heads import score_columns
from inductionlab.models import chen
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.tasks.induction import repeated_random_tokens
from inductionlab.tasks.markov import MarkovConfig, datasets
from inductionlab.train import interventions as I
from inductionlab.train.autograd import TrainConfig, pack, train
from inductionlab.train.chen import StagedConfig, train_staged
from inductionlab.train.chen_interventions import chen_family
from inductionlab.train.next_token import token_losses
from inductionlab.train.transformer_interventions import transformer_family

SCORE_TOLERANCE = 0.1  # an ablated run's final induction score within 0.1 of its start: no induction head
LOSS_TOLERANCE = 0.1  # nats: the first copy's loss (nothing to copy there) the same with and without layer 1

# the toy and transformer sections at a few steps: a control that reads the Chen section alone
OTHER_SECTIONS_CUT = {
    "train.stage1_steps": 10,
    "train.stage2_steps": 60,
    "train.eval_size": 256,
    "train.eval_every": 10,
    "t0": 2.0,
    "tf_train.steps": 6,
    "tf_train.eval_every": 3,
}


def transformer_variant(
    model: tf.TransformerConfig,
    train_cfg: TrainConfig,
    period: int,
    eval_size: int,
    seeds: tuple[int, ...],
    ctx: RunContext,
    *,
    ablate: bool,
    act: bool,
) -> pd.DataFrame:
    """Train the attention-only transformer on twice-repeated random tokens (one model per seed, each initialised
    from its seed), with or without every layer-1 head ablated (``ablate``; only where ``act``, else the variant
    trains unablated: the negative control); metrics: the loss on the first copy, on the copyable tokens of the
    second, and the head scores (:func:`inductionlab.analysis.heads.score_columns`)."""
    T = period
    theta0, views = pack(tf.init_per_seed(model, seeds))
    entry = ("blocks.0.attn",) if ablate and act else ()
    hooks, ablations = I.build(I.InterventionConfig(ablate=entry), transformer_family(model))
    fwd = I.forward_hooks(ablations)
    held_out = repeated_random_tokens(eval_size, T, 2, rng.generator(seeds[0], "held-out"), vocab=model.vocab)

    def per_position(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:  # x (B, 2T) → (S, B, 2T − 1)
        return token_losses(model, views(theta), x, fwd)

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        losses = per_position(theta, held_out)
        return {
            "loss_first": losses[:, :, : T - 1].mean((1, 2)).double().numpy(),
            "loss_repeated": losses[:, :, T:].mean((1, 2)).double().numpy(),  # x_{i+1} follows a copy of x_i
            **score_columns(model, views(theta), held_out),
        }

    _, metrics = train(
        replace(train_cfg, seed=rng.derive(seeds[0])),  # each data draw its own batches (docs/conventions.md#seeds)
        theta0,
        lambda theta, x: per_position(theta, x).mean((1, 2)),
        lambda g: repeated_random_tokens(train_cfg.batch_size, T, 2, g, vocab=model.vocab),
        evaluate,
        ctx.child("transformer_ablated" if ablate else "transformer", hooks=(*ctx.hooks, *hooks)),
        desc="transformer, layer 1 ablated" if ablate else "transformer",
        model={"family": "transformer", "config": model},
    )
    return metrics.assign(variant="layer 1 ablated" if ablate else "baseline")


def transformer_variants(
    model: tf.TransformerConfig, train_cfg: TrainConfig, cfg: Any, ctx: RunContext
) -> pd.DataFrame:
    """Both transformer variants of ``cfg`` (the experiment's config), unablated then layer 1 ablated; without
    ``cfg.act`` (the control) the ablated variant would train unablated: the baseline's run, relabelled."""
    args = (model, train_cfg, cfg.tf_period, cfg.tf_eval_size, cfg.seeds, ctx)
    baseline = transformer_variant(*args, ablate=False, act=cfg.act)
    if not cfg.act:
        return pd.concat([baseline, baseline.assign(variant="layer 1 ablated")], ignore_index=True)
    return pd.concat([baseline, transformer_variant(*args, ablate=True, act=cfg.act)], ignore_index=True)


def transformer_summary(tfm: pd.DataFrame) -> tuple[dict, dict]:
    """The transformer section of ``summary.json`` (means over runs) and its checks."""
    end = tfm[tfm.step == tfm.step.max()].groupby("variant").mean(numeric_only=True)
    start = tfm[tfm.step == 0].groupby("variant").mean(numeric_only=True).loc["layer 1 ablated"]
    base, ablated = end.loc["baseline"], end.loc["layer 1 ablated"]
    section = {
        "final_induction_score": float(ablated.induction_score),
        "baseline_final_induction_score": float(base.induction_score),
        "initial_induction_score": float(start.induction_score),
        "final_loss_first": float(ablated.loss_first),
        "baseline_final_loss_first": float(base.loss_first),
        "final_loss_repeated": float(ablated.loss_repeated),
        "baseline_final_loss_repeated": float(base.loss_repeated),
    }
    checks = {
        "layer1_ablated_no_induction_head": section["final_induction_score"]
        <= section["initial_induction_score"] + SCORE_TOLERANCE
        and section["baseline_final_induction_score"] >= 0.5,
        "layer1_ablated_first_copy_loss_unchanged": abs(float(ablated.loss_first - base.loss_first)) <= LOSS_TOLERANCE,
    }
    return section, checks


def plot_transformer(dx: Any, table: pd.DataFrame, styles: list[str]) -> None:
    """The induction score and the loss on copyable tokens against step for the variants of
    :func:`transformer_variant`, on axes ``dx`` (the loss on a twin axis)."""
    lx = dx.twinx()
    for style, (variant, g) in zip(styles, table.groupby("variant", sort=False)):
        mean = g.groupby("step")[["induction_score", "loss_repeated"]].mean()
        dx.plot(mean.index, mean.induction_score, style, color="C3", label=f"{variant}: induction score")
        lx.plot(mean.index, mean.loss_repeated, style, color="C7", label=f"{variant}: loss on copyable tokens")
    dx.set_xlabel("step"), dx.set_ylabel("induction score (best layer-2 head)")
    lx.set_ylabel("cross-entropy on copyable tokens (nats)")
    dx.set_title("transformer: layer-1 heads ablated", fontsize=9)
    lines = dx.get_legend_handles_labels(), lx.get_legend_handles_labels()
    dx.legend(lines[0][0] + lines[1][0], lines[0][1] + lines[1][1], fontsize=6, loc="center left")


def copier_frozen(
    task: MarkovConfig,
    model: chen.ChenConfig,
    train: StagedConfig,
    seeds: tuple[int, ...],
    n_samples: int,
    n_val: int,
    ctx: RunContext,
    lag_agnostic: bool = True,
) -> tuple[pd.DataFrame, dict]:
    """The selector's final p_{1,2} trained with the copier's RPE free, frozen at the paper's initialisation, and
    frozen at a lag-agnostic one (w_+ = w_−; with ``lag_agnostic`` False, the negative control, the third arm keeps
    the paper's head-to-lag initialisation) — the metrics of the three (column ``variant``) and a summary."""
    tr, va = datasets(task, seeds, n_samples, n_val)
    label = chen.subset_label((0, 1))
    uniform = replace(model, w_plus=model.w_minus) if lag_agnostic else model
    variants = (("free", model, ()), ("frozen", model, ("copier",)), ("uniform_frozen", uniform, ("copier",)))
    tables, p = [], {}
    for name, variant, freeze in variants:
        hooks, _ = I.build(I.InterventionConfig(freeze=freeze), chen_family(variant))
        _, m = train_staged(variant, train, task, tr, va, ctx.child(f"chen_{name}"), hooks, desc=name)
        tables.append(m.assign(variant=name))
        p[name] = float(m[m.epoch == m.epoch.max()][f"p_{label}"].mean())
    summary = {
        "p_selected": p["frozen"],
        "p_selected_unintervened": p["free"],
        "p_selected_uniform_init_frozen": p["uniform_frozen"],
        "reaches_0.99": {k: v >= 0.99 for k, v in p.items()},
    }
    return pd.concat(tables, ignore_index=True), summary


def plot_copier_frozen(cx: Any, table: pd.DataFrame, summary: dict, styles: list[str]) -> None:
    """The selector's p_{1,2} against epoch for the variants of :func:`copier_frozen`, on axes ``cx``."""
    label = chen.subset_label((0, 1))
    for k, (style, (variant, g)) in enumerate(zip(styles, table.groupby("variant", sort=False))):
        mean = g.groupby("epoch")[f"p_{label}"].mean()
        cx.plot(np.maximum(mean.index, 1), mean.values, style, color=f"C{k}", label=f"RPE {variant.replace('_', ' ')}")
    cx.axhline(0.99, color="0.5", lw=0.8, ls=":")
    cx.set_xscale("log")
    cx.set_xlabel("epoch (stage c)"), cx.set_ylabel(f"selector $p_{{{label[1:-1]}}}$")
    cx.set_title(
        f"Chen model, copier RPE frozen: $p_{{{label[1:-1]}}}$ free {summary['p_selected_unintervened']:.2f}, "
        f"frozen {summary['p_selected']:.2f}, uniform-init frozen {summary['p_selected_uniform_init_frozen']:.2f}",
        fontsize=8,
    )
    cx.legend(fontsize=7)
