"""WikiText-2 with the two-layer ALiBi transformer (Wang et al. v3 Fig. 5, workshop Fig. 2; spec §6 item 6, A14):
2 layers, 2 heads of dimension 64, D = 128, FFN 512, a learnable ALiBi slope p per head (the strict φ of the
papers), no LayerNorm, untied embeddings, N(0, 0.01²) initialisation with slopes at 0.01, cross-entropy at
every position of contiguous 200-token chunks, SGD lr 0.1, batch 32, both layers trained together.

Expected: ‖p‖ learned early and fast while ‖(W_K, W_Q)‖ grows slowly (roughly exponentially) from its small
start — the time-scale separation of the theory.  Reported: ``t_half_p_norm`` (first step at which ‖p‖ reaches
half its final value) and ``t_double_wkq_norm`` (first step at which ‖(W_K, W_Q)‖ reaches twice its initial
value), the validation loss, its plateau, and the head diagnostics on repeated random tokens.

Presets.  ``cpu`` (the default): the 2000 most frequent words + <unk>, bf16 autocast for the matrix products
(this CPU has AVX512-BF16: 1.5× per step; `--bf16 false` for float32), about 10 minutes on 2 cores.  The shared
folder has no train split: the default reads ``valid`` as training and ``test`` as validation data.
``paper``: the full vocabulary, 1500 epochs of the 216 k-token training split (51 000 steps), ``--device cuda``;
with the full release's 2.1 M-token train split, 1500 epochs are ``--train.steps 488000``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from inductionlab import plots
from inductionlab.analysis.heads import score_columns
from inductionlab.analysis.phases import first_crossing, plateau
from inductionlab.config import require
from inductionlab.models.transformer import TransformerConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.text import TextConfig, load_corpus
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.text import EvalConfig, fit_lm

NAME = "wikitext"
DESCRIPTION = "WikiText-2: two-layer ALiBi transformer, SGD; ||p|| learned before ||(W_K, W_Q)|| grows (paper Fig. 5)"
RUN_AXIS = True
LM_MODEL = TransformerConfig(d_model=128, n_layers=2, n_heads=2, d_head=64, ffn_width=512, readout="all",
                             init_std=0.01, slope_init=0.01)


@dataclass(frozen=True)
class Config:
    data: TextConfig = field(default_factory=TextConfig)
    model: TransformerConfig = LM_MODEL  # vocab is set from the data
    train: TrainConfig = field(default_factory=lambda: TrainConfig(optimizer="sgd", lr=0.1, steps=3000, batch_size=32,
                                                                   eval_every=100, eval_log_points=25,
                                                                   checkpoint_every=100))
    evals: EvalConfig = field(default_factory=EvalConfig)
    seeds: tuple[int, ...] = (0,)
    device: str = "cpu"
    bf16: bool = True

    def __post_init__(self) -> None:
        require(len(self.seeds) >= 1, "seeds", "give at least one seed")
        require(self.data.L >= 8, "data.L", f"must be ≥ 8 (room for a repeat in repeated-text), got {self.data.L}")
        require(self.device == "cpu" or self.device.startswith("cuda"), "device", f"'cpu' or 'cuda[:i]', got {self.device!r}")


CONFIG = Config()
PRESETS = {"cpu": {},
           "paper": {"data.vocab_size": 0, "train.steps": 51_000, "train.eval_every": 1000, "train.checkpoint_every": 1000,
                     "device": "cuda", "evals.val_batches": 16},
           "smoke": {"data.L": 16, "data.vocab_size": 50, "train.steps": 6, "train.eval_every": 3, "train.batch_size": 4,
                     "evals.val_batches": 1, "evals.score_batch": 2, "evals.score_period": 5, "bf16": False}}


def norm_times(steps: np.ndarray, p_norm: np.ndarray, wkq_norm: np.ndarray) -> dict[str, float]:
    """t_half_p_norm: first step with ‖p‖ ≥ ½ final ‖p‖; t_double_wkq_norm: first with ‖(W_K, W_Q)‖ ≥ 2× initial;
    t_half_wkq_growth: first with ‖(W_K, W_Q)‖ − initial ≥ ½ (final − initial)."""
    return {"t_half_p_norm": first_crossing(steps, p_norm, 0.5 * p_norm[-1], "up"),
            "t_double_wkq_norm": first_crossing(steps, wkq_norm, 2 * wkq_norm[0], "up"),
            "t_half_wkq_growth": first_crossing(steps, wkq_norm, 0.5 * (wkq_norm[0] + wkq_norm[-1]), "up")}


def run(cfg: Config, ctx: RunContext) -> Results:
    corpus = load_corpus(cfg.data)
    model = replace(cfg.model, vocab=len(corpus.vocab))
    _, metrics = fit_lm(model, cfg.train, cfg.evals, corpus.train, corpus.val, cfg.data.L, cfg.seeds, ctx,
                        device=cfg.device, bf16=cfg.bf16, diagnostics=score_columns, desc=NAME)
    mean = metrics.groupby("step").mean(numeric_only=True)
    steps = mean.index.to_numpy(float)
    start, end = plateau(steps, mean.val_loss.to_numpy())
    last = mean.iloc[-1]
    summary = {**norm_times(steps, mean.p_norm.to_numpy(), mean.wkq_norm.to_numpy()),
               "plateau": {"start": start, "end": end, "ongoing": bool(end == steps[-1])}, "vocab_size": len(corpus.vocab),
               "train_tokens": len(corpus.train), "tokens_seen": int(cfg.train.steps * cfg.train.batch_size * cfg.data.L),
               "final": {k: float(last[k]) for k in ("val_loss", "p_norm", "wkq_norm", "previous_token_score",
                                                     "induction_score", "prefix_matching_score")},
               "initial_wkq_norm": float(mean.wkq_norm.iloc[0]),
               "wkq_relative_growth": float(mean.wkq_norm.iloc[-1] / mean.wkq_norm.iloc[0] - 1)}
    return Results({"metrics": metrics}, summary)


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
            tw.semilogy(mean.index[1:], growth.iloc[1:].clip(lower=1e-9), style, color=w_color,
                        label=f"‖(W_K, W_Q)‖ growth, {label} (right)")
    tw.axhline(1.0, color=w_color, lw=0.6, alpha=0.5)
    tw.set_ylabel("‖(W_K, W_Q)‖ / initial − 1   (1 = doubled)", color=w_color)
    for key, color in (("t_half_p_norm", p_color), ("t_double_wkq_norm", w_color)):
        if not math.isnan(plots.num(s.get(key))):
            ax.axvline(s[key], color=color, ls=":", label=f"{key} = {s[key]:.0f}")
    ax.set(xlabel="step", title="time-scale separation")
    ax.set_ylabel("‖p‖ (all slopes)", color=p_color)
    lines = ax.get_legend_handles_labels()
    more = tw.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)


def plot_scores(ax, mean: pd.DataFrame) -> None:
    for col, style in (("previous_token_score", "-"), ("prefix_matching_score", "-"), ("induction_score", "--")):
        ax.plot(mean.index, mean[col], style, label=col.replace("_score", "").replace("_", " "))
    ax.set(xlabel="step", ylabel="score (repeated random tokens)", ylim=(0, 1.02), title="head diagnostics")
    ax.legend(fontsize=7)


def plot(results: Results, out_dir: Path) -> list[Path]:
    mean, s = results.tables["metrics"].groupby("step").mean(numeric_only=True), results.summary
    fig, (ax, bx, cx) = plots.subplots(3, width=4.3, height=3.4)
    ax.plot(mean.index, mean.val_loss, color="black", label="validation loss")
    lo, hi = plots.num(s["plateau"]["start"]), plots.num(s["plateau"]["end"])
    if not math.isnan(lo):
        ax.axvspan(lo, hi, color=plots.PHASE_COLORS[1], alpha=0.7, lw=0, label="detected plateau")
    ax.set(xlabel="step", ylabel="cross-entropy", title=f"WikiText-2 (vocabulary {s['vocab_size']})")
    ax.legend(fontsize=7)
    plot_norms(bx, mean, s)
    plot_scores(cx, mean)
    return [plots.save(fig, Path(out_dir) / "wikitext.png")]
