"""WikiText-2 with the two-layer ALiBi transformer (Wang et al. v3 Fig. 5, workshop Fig. 2; docs/conventions.md#wang-6-6):
2 layers, 2 heads of dimension 64, D = 128, FFN 512, a learnable ALiBi slope p per head (the strict φ of the
papers), no LayerNorm, untied embeddings, N(0, 0.01²) initialisation with slopes at 0.01, cross-entropy at
every position of contiguous 200-token chunks, SGD lr 0.1, batch 32, both layers trained together.

Expected: ‖p‖ learned early and fast while ‖(W_K, W_Q)‖ grows slowly (roughly exponentially) from its small
start — the time-scale separation of the theory.  Reported: ``t_half_p_norm`` (first step at which ‖p‖ reaches
half its final value) and ``t_double_wkq_norm`` (first step at which ‖(W_K, W_Q)‖ reaches twice its initial
value), ``p_relative_growth`` (final ‖p‖ over its start, minus 1), the validation loss, its plateau, and the head
diagnostics on repeated random tokens.  The CPU preset learns p but does not reach the doubling of
‖(W_K, W_Q)‖ (it grows exponentially slowly from 0.01 at SGD lr 0.1), so the full order is judged at paper scale.
``--shuffle true`` trains on the training tokens in one random order (the control of ``wang-fig5-p-learned`` and
``wang-fig5-induction``): the slopes are learned because nearby tokens predict the next one, an induction head
because a token predicts the one after an earlier copy of itself, and shuffling removes exactly that.  The control
``adam`` (of ``wang-fig5-p-first-cpu``) trains with Adam, whose per-coordinate steps remove the time-scale
separation of gradient descent (docs/conventions.md#controls).

Presets.  ``cpu`` (the default): the 2000 most frequent words + <unk>, bf16 autocast for the matrix products
(``--bf16 auto``: where the CPU has AVX512-BF16, 1.5× per step; float32 elsewhere, where emulated bf16 is ~8× slower), about 10 minutes on 2 cores.  The shared
folder has no train split: the default reads ``valid`` as training and ``test`` as validation data.
``paper``: the full vocabulary, 1500 epochs of the 216 k-token training split (51 000 steps), ``--device cuda``;
with the full release's 2.1 M-token train split, 1500 epochs are ``--train.steps 488000``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from inductionlab import plots, rng
from inductionlab.analysis.phases import plateau
from inductionlab.experiments.experiment import NATS, Experiment, op_elements
from inductionlab.experiments.wang import _shared
from inductionlab.experiments.wang._shared import (
    SMOKE,
    intervention_windows,
    norm_times,
    plot_norms,
    plot_scores,
    train_on_text,
    use_bf16,
)
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.text import Corpus, load_corpus, tokenizer_needs


@dataclass(frozen=True)
class Config(_shared.Config):
    """The text experiments' config (docs/conventions.md#wang-6-6) and ``shuffle``: train on the training split's
    tokens in a random order (the control ``shuffled``: the unigram statistics stay, the order that makes nearby
    tokens predictive goes)."""

    shuffle: bool = False  # train on the training tokens in one random order (the control shuffled)


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"train.steps": 400, "train.eval_every": 50},
    "cpu": {},
    "paper": {
        "data.vocab_size": 0,
        "train.steps": 51_000,
        "train.eval_every": 1000,
        "train.checkpoint_every": 1000,
        "device": "cuda",
        "eval.val_batches": 16,
    },
    "smoke": SMOKE,
}


def _corpus(cfg: Config) -> Corpus:
    """The corpus; with ``cfg.shuffle`` its training tokens in one random order (from the first seed's data
    stream), the validation split untouched."""
    corpus = load_corpus(cfg.data)
    if not cfg.shuffle:
        return corpus
    order = torch.randperm(len(corpus.train), generator=rng.generator(cfg.seeds[0]))
    return replace(corpus, train=corpus.train[order])


def run(cfg: Config, ctx: RunContext) -> Results:
    corpus, _, _, metrics = train_on_text(cfg, ctx, repeated=False, desc="wikitext", corpus=_corpus(cfg))
    mean = metrics.groupby("step").mean(numeric_only=True)
    steps = mean.index.to_numpy(float)
    start, end = plateau(steps, mean.val_loss.to_numpy())
    last = mean.iloc[-1]
    summary = {
        "precision": "bf16 autocast" if use_bf16(cfg) else "float32",
        **norm_times(steps, mean.p_norm.to_numpy(), mean.wkq_norm.to_numpy()),
        "plateau": {"start": start, "end": end, "ongoing": bool(end == steps[-1])},
        "vocab_size": len(corpus.vocab),
        "train_tokens": len(corpus.train),
        "tokens_seen": int(cfg.train.steps * cfg.train.batch_size * cfg.data.L),
        "final": {
            k: float(last[k])
            for k in (
                "val_loss",
                "p_norm",
                "wkq_norm",
                "previous_token_score",
                "induction_score",
                "prefix_matching_score",
            )
        },
        "initial": {"val_loss": float(mean.val_loss.iloc[0])},
        "initial_wkq_norm": float(mean.wkq_norm.iloc[0]),
        "wkq_relative_growth": float(mean.wkq_norm.iloc[-1] / mean.wkq_norm.iloc[0] - 1),
        "p_relative_growth": float(mean.p_norm.iloc[-1] / mean.p_norm.iloc[0] - 1),
    }
    return Results({"metrics": metrics}, summary | intervention_windows(cfg))


def plot(results: Results, out_dir: Path) -> list[Path]:
    mean, s = results.tables["metrics"].groupby("step").mean(numeric_only=True), results.summary
    fig, (ax, bx, cx) = plots.subplots(3, width=4.3, height=3.4)
    ax.plot(mean.index, mean.val_loss, color="black", label="validation loss")
    lo, hi = plots.num(s["plateau"]["start"]), plots.num(s["plateau"]["end"])
    if not math.isnan(lo):
        ax.axvspan(lo, hi, color=plots.PHASE_COLORS[1], alpha=0.7, lw=0, label="detected plateau")
    ax.set(xlabel="step", ylabel="cross-entropy", title=f"WikiText-2 (vocabulary {s['vocab_size']})")
    plots.mark_windows(ax, s.get("intervention_windows"), float(mean.index.max()))
    ax.legend(fontsize=7)
    plot_norms(bx, mean, s)
    plot_scores(cx, mean)
    return [plots.save(fig, Path(out_dir) / "wikitext.png")]


EXPERIMENT = Experiment(
    op_size=lambda c: op_elements(
        c.train.batch_size, c.data.L, c.data.vocab_size
    ),  # the logits (docs/conventions.md#threads)
    devices=("cpu", "cuda"),
    loss_unit=NATS,
    needs=lambda c: tokenizer_needs(c.data),  # tokenizers for a BPE tokenizer (docs/conventions.md#extras)
    data="data.path",
    name="wikitext",
    description="WikiText-2: two-layer ALiBi transformer, SGD; ||p|| learned before ||(W_K, W_Q)|| grows (paper Fig. 5)",
    figure="Wang et al. Fig. 5",
    wall="~8 min",  # default preset, 2 cores
    headline=("t_half_p_norm", "t_double_wkq_norm", "wkq_relative_growth", "final.val_loss"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
