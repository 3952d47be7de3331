"""The induction-head phase change on real words, within a CPU budget (issue 6 §3): the WikiText model of
``wikitext`` trained on text sequences whose second half repeats their first half (the repeated-token task of
Olsson et al. 2022, here over real words; :func:`inductionlab.tasks.text.repeated_chunks`).  Plain text needs
far more tokens than a CPU run sees before induction heads form; with a repeat in every sequence the copy
signal is strong, and the same model shows the plateau, the abrupt drop of the loss on the repeated tokens
and the induction score rising above 0.5 together.

Reported: ``t_loss_drop`` (first step at which the loss on repeated tokens falls below the midpoint between
its plateau level and its final value), ``t_induction_half`` (first step with the best layer-2 induction score
≥ 0.5), ``final_induction_score``, and the times ‖p‖ and ‖(W_K, W_Q)‖ move (as in ``wikitext``).

Choices (config fields): sequences of L = 100 tokens (50 words, then their repeat), Adam with lr 1e-3 — with the
paper's SGD lr 0.1 the plateau outlasts a CPU budget — and bf16 autocast as in ``wikitext``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from inductionlab import plots
from inductionlab.analysis.phases import first_crossing, plateau
from inductionlab.config import require
from inductionlab.experiments.wikitext import LM_MODEL, norm_times, plot_norms, plot_scores
from inductionlab.models.transformer import TransformerConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.text import TextConfig, load_corpus
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.text import EvalConfig, fit_lm

NAME = "repeated-text"
DESCRIPTION = "Real words with a repeated half: the induction-head phase change (loss drop, induction score) on CPU"
RUN_AXIS = True


@dataclass(frozen=True)
class Config:
    data: TextConfig = field(default_factory=lambda: TextConfig(L=100))
    model: TransformerConfig = LM_MODEL
    train: TrainConfig = field(default_factory=lambda: TrainConfig(optimizer="adam", lr=1e-3, steps=2000, batch_size=32,
                                                                   eval_every=50, eval_log_points=20,
                                                                   checkpoint_every=100))
    evals: EvalConfig = field(default_factory=EvalConfig)
    seeds: tuple[int, ...] = (0,)
    device: str = "cpu"
    bf16: bool = True

    def __post_init__(self) -> None:
        require(len(self.seeds) >= 1, "seeds", "give at least one seed")
        require(self.data.L >= 8, "data.L", f"needs room for a repeat (≥ 8), got {self.data.L}")


CONFIG = Config()
PRESETS = {"smoke": {"data.L": 16, "data.vocab_size": 50, "train.steps": 6, "train.eval_every": 3, "train.batch_size": 4,
                     "evals.val_batches": 1, "evals.score_batch": 2, "evals.score_period": 5, "bf16": False}}


def run(cfg: Config, ctx: RunContext) -> Results:
    corpus = load_corpus(cfg.data)
    model = replace(cfg.model, vocab=len(corpus.vocab))
    _, metrics = fit_lm(model, cfg.train, cfg.evals, corpus.train, corpus.val, cfg.data.L, cfg.seeds, repeated=True,
                        device=cfg.device, bf16=cfg.bf16, checkpoint=ctx.checkpoint, resume=ctx.resume,
                        progress=ctx.progress, desc=NAME, threads=ctx.threads)
    mean = metrics.groupby("step").mean(numeric_only=True)
    steps, rep = mean.index.to_numpy(float), mean.loss_repeated.to_numpy()
    start, end = plateau(steps, rep)
    level = rep[steps <= end][-1] if not math.isnan(end) else rep.max()
    t_drop = first_crossing(steps, rep, 0.5 * (level + rep[-1]), "down", start=0.0 if math.isnan(start) else start)
    t_ind = first_crossing(steps, mean.induction_score.to_numpy(), 0.5, "up")
    summary = {"t_loss_drop": t_drop, "t_induction_half": t_ind,
               "final_induction_score": float(mean.induction_score.iloc[-1]),
               "drop_vs_induction_gap_fraction": abs(t_drop - t_ind) / cfg.train.steps,
               "plateau": {"start": start, "end": end, "loss_repeated": float(level)},
               **norm_times(steps, mean.p_norm.to_numpy(), mean.wkq_norm.to_numpy()),
               "final": {k: float(mean[k].iloc[-1]) for k in ("loss_repeated", "loss_other", "val_loss", "p_norm",
                                                              "wkq_norm", "previous_token_score", "prefix_matching_score")}}
    return Results({"metrics": metrics}, summary)


def plot(results: Results, out_dir: Path) -> list[Path]:
    mean, s = results.tables["metrics"].groupby("step").mean(numeric_only=True), results.summary
    fig, (ax, bx, cx) = plots.subplots(3, width=4.3, height=3.4)
    ax.plot(mean.index, mean.loss_repeated, color=plots.CURVE_COLORS["loss_IH2"], label="loss on repeated tokens")
    ax.plot(mean.index, mean.loss_other, color=plots.CURVE_COLORS["loss_G4"], label="loss elsewhere")
    for key, style in (("t_loss_drop", "--"), ("t_induction_half", ":")):
        if not math.isnan(plots.num(s[key])):
            ax.axvline(s[key], color="grey", ls=style, label=f"{key} = {s[key]:.0f}")
    ax.set(xlabel="step", ylabel="cross-entropy (validation)", title="repeated text")
    ax.legend(fontsize=7)
    plot_norms(bx, mean, s)
    plot_scores(cx, mean)
    return [plots.save(fig, Path(out_dir) / "repeated_text.png")]
