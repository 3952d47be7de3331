"""The induction-head monitor on a HuggingFace model (docs/monitor.md): a randomly initialised two-layer
``transformers.GPT2LMHeadModel`` trained by ``transformers.Trainer`` on WikiText-2 windows repeated with a period of
their own (:func:`inductionlab.tasks.text.periodic_chunks`: k words, k drawn per sequence from ``periods``, repeated
to fill L), with :data:`inductionlab.monitor.InductionCallback` measuring every head
(docs/monitor.md#the-trainer-callback); beside it, at matched size on the same task, the toolkit's own transformer
(:func:`inductionlab.train.text.fit_lm`), measured on the same repeated random tokens.

Reported per model: the phase step (the change point of the best induction head's relative score,
docs/monitor.md#phase-detection),
the final best induction score (TransformerLens's form: at most 0.5 on two copies, since the first copy's rows have
nothing to attend to), the drop of the loss on the repeated random tokens, whether the two coincide, what copying
gains on held-out repeated text (``final_text_copy_gain``) and the wall time.  The HF run keeps ``checkpoint-STEP``
folders in ``RUN/hf`` for ``inductionlab watch RUN/hf`` (docs/monitor.md#the-watch-command).

Choices: GPT-2 (width 64, 4 heads, MLP 256, L = 96) with AdamW (lr 1e-3, constant, no weight decay, no dropout),
batch 32, 2000 steps; the toolkit's transformer with the clipped heavy-ball SGD of ``repeated-text``, 3000 steps.
Both train under bf16 autocast where the CPU computes bf16 natively (``--bf16 auto``; ``on`` / ``off`` force it;
the precision is in the summary), while every measurement runs in float32 (docs/conventions.md#bf16-training).
Why a period of its own: with the repeat always at L/2 (``repeated_chunks``) the GPT-2 learned to copy by absolute
position (its loss on the repeated text fell from 3.8 to 0.7 nats between steps 900 and 1000 at lr 3e-3) while its
induction score on repeated random tokens stayed at chance (0.03) — the monitor does not mistake a positional copy
for an induction head; a period drawn per sequence leaves no fixed offset to copy, and the head forms (measured,
seed 0, 2026-11-25: GPT-2 phase step 1245, final score 0.38, loss drop 1345; ours 1444, 0.34).  Control
``attn-only-1-layer``: one attention-only layer (MLPs zero), where no induction head can form: an induction head
needs a previous-token head below it.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import plots, rng
from inductionlab._runtime import use_bf16
from inductionlab.config import LR_MAX, check_seeds, require
from inductionlab.experiments.across.hf_induction.gpt2 import (
    NEEDS,
    ModelConfig,
    TrainerConfig,
    build_gpt2,
    check_sizes,
    own_scores,
    phase_summary,
    text_copy_gain,
    train_gpt2,
    training_data,
)
from inductionlab.experiments.experiment import NATS, Experiment, op_elements
from inductionlab.keys import keys_as
from inductionlab.monitor.core import Monitor
from inductionlab.monitor.phase import located
from inductionlab.monitor.settings import MonitorConfig, induction_levels
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.text import Corpus, TextConfig, load_corpus, save_tokenizer, tokenizer_needs
from inductionlab.train.autograd import TrainConfig
from inductionlab.train.text import EvalConfig, fit_lm

# The keys that set the library configs the run builds, by the library's name of each (keys.keys_as)
OWN_KEYS = dict(
    lr="own.lr", momentum="own.momentum", clip_norm="own.clip_norm", steps="own.steps", batch_size="batch_size"
)
OWN_KEYS |= {"eval_every": "measure.every", "checkpoint_every": "own.steps"}
MODEL_KEYS = dict(d_model="n_embd", d_head="n_embd", n_layers="n_layer", n_heads="n_head", ffn_width="n_inner")


@dataclass(frozen=True)
class OwnConfig:
    """The toolkit's transformer at the GPT-2's size (``repeated-text``'s optimiser)."""

    steps: int = 3000  # clipped heavy-ball SGD steps of the toolkit's transformer
    lr: float = 0.3  # its learning rate
    momentum: float = 0.9  # its heavy-ball momentum
    clip_norm: float = 0.5  # each step's gradient clipped to this norm

    def __post_init__(self) -> None:
        require(self.steps >= 1, "own.steps", f"must be ≥ 1, got {self.steps}")
        require(0 < self.lr <= LR_MAX, "own.lr", f"must be a finite number in (0, {LR_MAX:g}], got {self.lr}")
        require(0 <= self.momentum < 1, "own.momentum", f"must lie in [0, 1), got {self.momentum}")
        require(self.clip_norm >= 0, "own.clip_norm", f"must be ≥ 0 (0: no clipping), got {self.clip_norm}")

    def train(self, batch_size: int, every: int) -> TrainConfig:
        """The trainer's config (clipped heavy-ball SGD, evaluated every ``every`` steps); its errors name the keys
        that set it (``own.momentum``, not the trainer's ``train.momentum``)."""
        with keys_as(OWN_KEYS):
            return TrainConfig(
                optimizer="sgd",
                lr=self.lr,
                momentum=self.momentum,
                clip_norm=self.clip_norm,
                steps=self.steps,
                batch_size=batch_size,
                eval_every=every,
                eval_log_points=0,
                checkpoint_every=max(every, self.steps // 10),
            )


@dataclass(frozen=True)
class MeasureConfig:
    """What the monitor measures on both models (docs/monitor.md#what-it-measures)."""

    every: int = 50  # measure every this many steps (both models)
    batch: int = 16  # repeated random-token sequences per measurement
    period: int = 25  # tokens of each sequence's first copy (it is repeated once)
    vocab: int = 500  # the random tokens are the corpus's most frequent words below this id (0: every word)
    threshold: float = 0.3  # an induction head once its fitted score reaches this, relative: 0 chance, 1 attainable

    def __post_init__(self) -> None:
        for name in ("every", "batch"):
            require(getattr(self, name) >= 1, f"measure.{name}", f"must be ≥ 1, got {getattr(self, name)}")
        require(self.period >= 2, "measure.period", f"must be ≥ 2, got {self.period}")
        require(self.vocab == 0 or self.vocab >= 2, "measure.vocab", f"must be 0 or ≥ 2, got {self.vocab}")
        require(0 < self.threshold <= 1, "measure.threshold", f"must lie in (0, 1], got {self.threshold}")


@dataclass(frozen=True)
class Config:
    data: TextConfig = field(default_factory=lambda: TextConfig(L=96))  # WikiText-2 (sequences of L tokens)
    model: ModelConfig = field(default_factory=ModelConfig)  # both models' size
    hf: TrainerConfig = field(default_factory=TrainerConfig)  # the GPT-2's Trainer
    own: OwnConfig = field(default_factory=OwnConfig)  # the toolkit's transformer's optimiser
    measure: MeasureConfig = field(default_factory=MeasureConfig)  # the monitor
    periods: tuple[int, int] = (8, 24)  # each sequence repeats a window of k words, k drawn from this range
    batch_size: int = 32  # sequences per training step (both models)
    seeds: tuple[int, ...] = (0,)  # the run axis: one GPT-2 and one toolkit transformer per seed
    bf16: Literal["auto", "on", "off"] = "auto"  # both models train under bf16 autocast; auto: where the CPU has it

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        require(self.batch_size >= 1, "batch_size", f"must be ≥ 1, got {self.batch_size}")
        lo, hi = self.periods
        require(2 <= lo <= hi < self.data.L, "periods", f"need 2 ≤ low ≤ high < data.L = {self.data.L}, got {lo},{hi}")
        require(self.data.L >= 8, "data.L", f"must be ≥ 8 (room for a repeat), got {self.data.L}")
        require(
            2 * self.measure.period <= self.data.L,
            "measure.period",
            f"two copies of {self.measure.period} tokens exceed the models' {self.data.L} positions (data.L)",
        )
        m = self.measure
        model = {f"model.{k}": getattr(self.model, k) for k in ("n_embd", "n_layer", "n_inner", "n_head")}
        check_sizes(
            {"hf.steps": self.hf.steps, "batch_size": self.batch_size, "data.L": self.data.L, **model}
            | {"measure.batch": m.batch, "measure.period": m.period}
        )
        self.own.train(self.batch_size, m.every)  # the library configs the run builds, checked now by our keys
        with keys_as({k: f"model.{v}" for k, v in MODEL_KEYS.items()}):
            self.model.own()
        with keys_as({k: f"measure.{k}" for k in ("every", "batch", "period", "vocab", "threshold")}):
            MonitorConfig(every=m.every, batch=m.batch, period=m.period, vocab=m.vocab, threshold=m.threshold)


CONFIG = Config()
SMOKE: dict[str, Any] = {
    "data.L": 16,
    "data.vocab_size": 50,
    "model.n_embd": 16,
    "model.n_inner": 32,
    "hf.steps": 6,
    "hf.save_every": 3,
    "own.steps": 6,
    "measure.every": 3,
    "measure.batch": 2,
    "measure.period": 5,
    "measure.vocab": 0,
    "periods": "3,6",
    "batch_size": 4,
    "bf16": "off",
}
PRESETS = {"quick": {"hf.steps": 600, "own.steps": 1000}, "smoke": SMOKE}


def run(cfg: Config, ctx: RunContext) -> Results:
    corpus = load_corpus(cfg.data)
    if ctx.run_dir is not None:
        save_tokenizer(corpus.tokenizer, ctx.run_dir)
    m = cfg.measure
    monitor_cfg = MonitorConfig(every=m.every, batch=m.batch, period=m.period, vocab=m.vocab, threshold=m.threshold)
    heads, steps, hf = [], [], []
    for seed in cfg.seeds:
        monitor, gain, seconds = _train_hf(cfg, ctx, corpus, seed, monitor_cfg)
        heads.append(monitor.heads.assign(seed=seed))
        steps.append(monitor.steps.assign(seed=seed))
        hf.append(phase_summary(monitor.phase(), seconds) | {"final_text_copy_gain": gain})
    metrics, own = _train_own(cfg, ctx, corpus, monitor.tokens, monitor_cfg)
    tables = {"hf_heads": pd.concat(heads, ignore_index=True), "hf_steps": pd.concat(steps, ignore_index=True)}
    precision = "bf16 autocast" if use_bf16(cfg.bf16) else "float32"
    return Results(tables | {"own_metrics": metrics}, {"hf": _mean(hf), "own": _mean(own), "precision": precision})


def _train_own(
    cfg: Config, ctx: RunContext, corpus: Corpus, tokens: torch.Tensor, monitor_cfg: MonitorConfig
) -> tuple[pd.DataFrame, list[dict]]:
    """The toolkit's transformer at the GPT-2's size on repeated text (``repeated-text``'s task and optimiser), one
    run per seed, measured every ``measure.every`` steps on the monitor's tokens (B, L); its metrics and per-seed
    summaries."""
    start = time.perf_counter()
    train = cfg.own.train(cfg.batch_size, monitor_cfg.every)
    evals = EvalConfig(val_batches=1, score_batch=monitor_cfg.batch, score_period=monitor_cfg.period)
    model = cfg.model.own().build(len(corpus.vocab))
    _, metrics = fit_lm(
        model,
        train,
        evals,
        corpus.train,
        corpus.val,
        cfg.data.L,
        cfg.seeds,
        ctx.child("own"),
        repeated=True,
        periods=cfg.periods,
        diagnostics=own_scores(tokens, monitor_cfg.period),
        bf16=use_bf16(cfg.bf16),
        desc="hf-induction (own)",
    )
    seconds = (time.perf_counter() - start) / len(cfg.seeds)
    levels = induction_levels(tokens, monitor_cfg.period)
    return metrics, [_own_phase(metrics[metrics.run == r], monitor_cfg, levels, seconds) for r in range(len(cfg.seeds))]


def _train_hf(
    cfg: Config, ctx: RunContext, corpus: Corpus, seed: int, monitor_cfg: MonitorConfig
) -> tuple[Monitor, float, float]:
    """One GPT-2 trained by the Trainer with the monitor's callback; checkpoints in RUN/hf (none without a run
    directory).  Returns the monitor, the final copy gain on repeated text and the wall seconds."""
    start = time.perf_counter()
    model = build_gpt2(cfg.model, len(corpus.vocab), cfg.data.L, rng.derive(seed))
    monitor = Monitor(model, monitor_cfg)
    data = training_data(corpus.train, cfg.data.L, cfg.batch_size, cfg.hf.steps, cfg.periods, rng.generator(seed))
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(ctx.run_dir) / "hf" if ctx.run_dir is not None else Path(scratch)
        name = out if len(cfg.seeds) == 1 else out / f"seed-{seed}"
        save = ctx.run_dir is not None
        train_gpt2(model, cfg.hf, data, cfg.batch_size, rng.derive(seed), name, monitor, ctx, save, use_bf16(cfg.bf16))
    gain = text_copy_gain(model, corpus.val, cfg.data.L, cfg.periods, rng.generator(seed, "eval"))
    return monitor, gain, time.perf_counter() - start


def _own_phase(metrics: pd.DataFrame, monitor_cfg: MonitorConfig, levels: tuple[float, float], seconds: float) -> dict:
    """The toolkit transformer's phase change from its per-head diagnostic columns, as the monitor finds it."""
    columns = [c for c in metrics.columns if c.startswith("induction_l")]
    heads = metrics.melt(id_vars="step", value_vars=columns, var_name="name", value_name="induction")
    where = heads.name.str.extract(r"induction_l(\d+)h(\d+)").astype(int)
    heads = heads.assign(layer=where[0], head=where[1])
    steps = metrics[["step", "monitor_loss_repeated"]].rename(columns={"monitor_loss_repeated": "loss_repeated"})
    phase = located(heads, steps, monitor_cfg, *levels)
    out = phase_summary(phase, seconds)
    gain = float(metrics.loss_other.iloc[-1] - metrics.loss_repeated.iloc[-1])  # on repeated validation text
    return {"t_induction_half": out.pop("phase_step"), **out, "final_text_copy_gain": gain}


def _mean(rows: list[dict]) -> dict:
    """The seeds' summaries in one: numbers averaged (None where a seed has none), flags all true, heads as lists."""
    out: dict[str, Any] = {}
    for key, first in rows[0].items():
        values = [r[key] for r in rows]
        if isinstance(first, bool):
            out[key] = all(values)
        elif isinstance(first, (int, float)) or first is None:
            numbers = [v for v in values if v is not None]
            out[key] = float(np.mean(numbers)) if len(numbers) == len(values) else None
        else:
            out[key] = values if len(values) > 1 else first
    return out


def plot(results: Results, out_dir: Path) -> list[Path]:
    hf, own, s = results.tables["hf_steps"], results.tables["own_metrics"], results.summary
    hf_mean = hf.groupby("step").mean(numeric_only=True)
    own_mean = own.groupby("step").mean(numeric_only=True)
    fig, (ax, bx) = plots.subplots(2, width=4.6, height=3.4)
    models = (
        ("GPT-2 (transformers.Trainer)", hf_mean.best_induction, hf_mean.loss_repeated, s["hf"], "phase_step", "C0"),
        (
            "toolkit transformer",
            own_mean.monitor_best_induction,
            own_mean.monitor_loss_repeated,
            s["own"],
            "t_induction_half",
            "C1",
        ),
    )
    for label, score, loss, summary, key, color in models:
        ax.plot(score.index, score, color=color, label=label)
        bx.plot(loss.index, loss, color=color, label=label)
        for axis, when, style in ((ax, summary.get(key), "--"), (bx, summary.get("loss_drop_step"), ":")):
            if math.isfinite(plots.num(when)):
                axis.axvline(when, color=color, ls=style, lw=1, label=f"{label.split(' (')[0]}: step {when:.0f}")
    ax.set(xlabel="training step", ylabel="best induction score", title="induction head (phase step dashed)")
    bx.set(xlabel="training step", ylabel="loss on repeated tokens (nats)", title="repeated-token loss (drop dotted)")
    for axis in (ax, bx):
        axis.legend(fontsize=7)
    return [plots.save(fig, Path(out_dir) / "hf_induction.png")]


EXPERIMENT = Experiment(
    op_size=lambda c: op_elements(c.batch_size, c.data.L, c.data.vocab_size),  # docs/conventions.md#threads
    loss_unit=NATS,
    needs=lambda c: NEEDS | tokenizer_needs(c.data),  # the hf extra; BPE: tokenizers (docs/conventions.md#extras)
    name="hf-induction",
    description="A HuggingFace GPT-2 trained by transformers.Trainer under the induction-head monitor, beside ours",
    figure="Olsson et al. 2022 (monitor)",
    wall="~4.5 min",  # default, one core beside another run, bf16 on AVX512-BF16: 253–276 s (2026-12-02, AMD EPYC)
    headline=("hf.phase_step", "hf.final_induction_score", "hf.coincides", "own.t_induction_half"),
    config=CONFIG,
    presets=PRESETS,
    data="data.path",  # WikiText-2: `reproduce --data DIR` sets it
    run=run,
    plot=plot,
)
