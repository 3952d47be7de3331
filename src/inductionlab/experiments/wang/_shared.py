"""What the two text experiments (``wikitext``, ``repeated-text``) share: the model and config, the times at which
‖p‖ and ‖(W_K, W_Q)‖ move, the smoke preset and the panels of their figures (what the two IH_n experiments share is
``_learning``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import plots
from inductionlab._runtime import use_bf16 as bf16_chosen
from inductionlab.analysis.heads import score_columns
from inductionlab.analysis.phases import first_crossing
from inductionlab.config import check_device, check_seeds, require, set_here
from inductionlab.models import transformer as tf
from inductionlab.models.transformer import ArchitectureConfig, TransformerConfig
from inductionlab.runs import RunContext
from inductionlab.tasks.text import Corpus, TextConfig, load_corpus, repeated_chunks, save_tokenizer
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.interventions import InterventionConfig, build, check, forward_hooks, windows
from inductionlab.train.next_token import token_losses
from inductionlab.train.text import Diagnostics, EvalConfig, _evaluation_data, fit_lm
from inductionlab.train.transformer_interventions import transformer_family

LM_MODEL = ArchitectureConfig(
    d_model=128, n_layers=2, n_heads=2, d_head=64, ffn_width=512, init_std=0.01, slope_init=0.01
)


@dataclass(frozen=True)
class Config:
    data: TextConfig = field(default_factory=TextConfig)
    model: ArchitectureConfig = LM_MODEL  # its vocabulary is the corpus's
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            optimizer="sgd", lr=0.1, steps=3000, batch_size=32, eval_every=100, eval_log_points=25, checkpoint_every=100
        )
    )
    eval: EvalConfig = field(default_factory=EvalConfig)
    seeds: tuple[int, ...] = (0,)  # the run axis: one model per seed, trained together (docs/conventions.md#seeds)
    device: str = "cpu"  # cpu, cuda or cuda:i
    bf16: Literal["auto", "on", "off"] = "auto"  # auto: bf16 autocast only where the device has it natively
    intervene: InterventionConfig = field(default_factory=InterventionConfig)  # e.g. --intervene.ablate blocks.0.attn

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        require(len(self.seeds) >= 1, "seeds", "give at least one seed")
        set_here(self.train, "train", {"seed": 0}, "seeds (the batches are drawn from the first seed)")
        require(self.data.L >= 8, "data.L", f"must be ≥ 8 (room for a repeat in repeated-text), got {self.data.L}")
        check_device(self.device)
        self.model.check_keys(self.data.L, where="a training sequence (data.L)")
        self.model.check_keys(2 * self.eval.score_period, where="a head-diagnostic sequence (2 × eval.score_period)")
        check(self.intervene, transformer_family(self.model.build(2)), [self.train.steps])  # layout: any vocabulary


SMOKE = {
    "data.L": 16,
    "data.vocab_size": 50,
    "train.steps": 6,
    "train.eval_every": 3,
    "train.batch_size": 4,
    "eval.val_batches": 1,
    "eval.score_batch": 2,
    "eval.score_period": 5,
    "bf16": "off",
}


def use_bf16(cfg: Config) -> bool:
    """bf16 autocast on or off (:func:`inductionlab._runtime.use_bf16` on ``cfg.bf16`` and ``cfg.device``)."""
    return bf16_chosen(cfg.bf16, cfg.device)


def intervention_windows(cfg: Config) -> dict:
    """The summary entry ``intervention_windows`` (steps [start, stop or None]) when the run has interventions."""
    return {"intervention_windows": [list(w) for w in windows(cfg.intervene)]} if cfg.intervene else {}


def train_on_text(
    cfg: Config, ctx: RunContext, repeated: bool, desc: str, corpus: Corpus | None = None, plain: bool = False
) -> tuple[Corpus, TransformerConfig, tf.Params, pd.DataFrame]:
    """Load the corpus (or take ``corpus``), size the model's vocabulary to it and train
    (:func:`inductionlab.train.text.fit_lm`) with the head diagnostics of
    :func:`inductionlab.analysis.heads.score_columns`; returns the corpus, the model's config, its final parameters
    (CPU) and the metrics.  ``plain`` (with ``repeated``): train on plain chunks of text but measure what a repeated
    run measures (:func:`repeated_measures`: a control breaks the mechanism, never the measurement,
    docs/conventions.md#controls).  The run directory keeps the tokenizer (docs/models.md)."""
    corpus = load_corpus(cfg.data) if corpus is None else corpus
    if ctx.run_dir is not None:
        save_tokenizer(corpus.tokenizer, ctx.run_dir)
    model = cfg.model.build(len(corpus.vocab))
    hooks, ablations = build(cfg.intervene, transformer_family(model))
    measured = forward_hooks(ablations)
    diagnostics = repeated_measures(cfg, model, corpus.val, ctx.device, measured) if plain else score_columns
    params, metrics = fit_lm(
        model,
        cfg.train,
        cfg.eval,
        corpus.train,
        corpus.val,
        cfg.data.L,
        cfg.seeds,
        ctx,
        repeated=repeated and not plain,
        bf16=use_bf16(cfg),
        diagnostics=diagnostics,
        hooks=hooks,
        desc=desc,
        forward_hooks=measured,
    )
    return corpus, model, params, metrics


def repeated_measures(
    cfg: Config, model: TransformerConfig, val_ids: torch.Tensor, device: str, hooks: tf.Hooks | None
) -> Diagnostics:
    """The evaluation of a repeated-text run, for a model that trains on plain chunks: the validation loss on the
    batches with a repeated half, on and off the repeated positions, and the head diagnostics, on the very batches
    and tokens that :func:`inductionlab.train.text.fit_lm` draws from ``eval.seed`` for a repeated run."""
    drawn, score_tokens = _evaluation_data(
        val_ids, cfg.data.L, cfg.train.batch_size, cfg.eval, repeated_chunks, model.vocab, torch.device(device)
    )
    batches = [(x, m) for x, m in drawn if m is not None]  # every repeated batch carries its mask

    def measure(net: TransformerConfig, params: tf.Params, _: torch.Tensor) -> dict[str, np.ndarray]:
        losses = [(token_losses(net, params, x, hooks), m) for x, m in batches]
        rep = sum((l * m).sum((1, 2)) for l, m in losses) / sum(m.sum() for _, m in losses)
        rest = sum((l * ~m).sum((1, 2)) for l, m in losses) / sum((~m).sum() for _, m in losses)
        whole = torch.stack([l.mean((1, 2)) for l, _ in losses]).mean(0)
        return {
            "val_loss": whole.double().cpu().numpy(),
            "loss_repeated": rep.double().cpu().numpy(),
            "loss_other": rest.double().cpu().numpy(),
            **score_columns(net, params, score_tokens),
        }

    return measure


def norm_times(steps: np.ndarray, p_norm: np.ndarray, wkq_norm: np.ndarray) -> dict[str, float]:
    """t_half_p_norm: first step with ‖p‖ ≥ ½ final ‖p‖; t_double_wkq_norm: first with ‖(W_K, W_Q)‖ ≥ 2× initial;
    t_half_wkq_growth: first with ‖(W_K, W_Q)‖ − initial ≥ ½ (final − initial)."""
    return {
        "t_half_p_norm": first_crossing(steps, p_norm, 0.5 * p_norm[-1], "up"),
        "t_double_wkq_norm": first_crossing(steps, wkq_norm, 2 * wkq_norm[0], "up"),
        "t_half_wkq_growth": first_crossing(steps, wkq_norm, 0.5 * (wkq_norm[0] + wkq_norm[-1]), "up"),
    }


def plot_norms(ax, mean: pd.DataFrame, s: dict) -> None:
    """‖p‖ (left axis) and the relative growth ‖(W_K, W_Q)‖ / ‖(W_K, W_Q)‖₀ − 1 (right axis, log scale, so that
    a slow exponential growth from the small start shows as a line; 1 marks the doubling), with the marked
    times."""
    p_color, w_color = plots.CURVE_COLORS["p"], plots.CURVE_COLORS["w_KQ"]
    ax.plot(mean.index, mean.p_norm, color=p_color, label="‖p‖ (left)")
    tw = ax.twinx()
    for col, style, label in (("wkq_norm", "-", "all layers"), ("wkq_norm_l2", "--", "layer 2 only")):
        if col in mean:
            growth = (mean[col] / mean[col].iloc[0] - 1).abs()
            tw.semilogy(
                mean.index[1:],
                growth.iloc[1:].clip(lower=1e-9),
                style,
                color=w_color,
                label=f"‖(W_K, W_Q)‖ growth, {label} (right)",
            )
    tw.axhline(1.0, color=w_color, lw=0.6, alpha=0.5)
    tw.set_ylabel("‖(W_K, W_Q)‖ / initial − 1   (1 = doubled)", color=w_color)
    for key, color in (("t_half_p_norm", p_color), ("t_double_wkq_norm", w_color)):
        if math.isfinite(plots.num(s.get(key))):
            ax.axvline(s[key], color=color, ls=":", label=f"{key} = {s[key]:.0f}")
    ax.set(xlabel="step", title="time-scale separation")
    ax.set_ylabel("‖p‖ (all slopes)", color=p_color)
    lines = ax.get_legend_handles_labels()
    more = tw.get_legend_handles_labels()
    ax.legend(
        lines[0] + more[0],
        lines[1] + more[1],
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncols=2,
        frameon=False,
    )


def plot_scores(ax, mean: pd.DataFrame) -> None:
    for col, style in (("previous_token_score", "-"), ("prefix_matching_score", "-"), ("induction_score", "--")):
        ax.plot(mean.index, mean[col], style, label=col.replace("_score", "").replace("_", " "))
    ax.set(xlabel="step", ylabel="score (repeated random tokens)", ylim=(0, 1.02), title="head diagnostics")
    ax.legend(fontsize=7)
