"""What the ``hf-induction`` experiment needs from ``transformers`` (imported inside the functions, so that the
registry loads without it; the ``hf`` extra, :data:`NEEDS`, checked before the run starts): the GPT-2 and its
attention-only variant, the training data with a repeat at a varying offset, the ``Trainer`` run with the monitor's
callback (docs/monitor.md#the-trainer-callback), and the toolkit transformer's head scores on the monitor's tokens
(docs/monitor.md#what-it-measures)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from inductionlab.config import LR_MAX, check_memory, require
from inductionlab.extras import require as require_extra
from inductionlab.models import transformer as tf
from inductionlab.models.transformer import ArchitectureConfig
from inductionlab.monitor.adapters import toolkit_adapter
from inductionlab.monitor.core import Monitor, token_losses
from inductionlab.monitor.phase import PhaseChange
from inductionlab.monitor.pick import adapter_for
from inductionlab.monitor.settings import head_scores
from inductionlab.runs import RunContext
from inductionlab.tasks.text import periodic_chunks


@dataclass(frozen=True)
class ModelConfig:
    """Both models' size: the GPT-2 (``GPT2Config``) and the toolkit's transformer at the same width."""

    n_layer: int = 2  # transformer blocks
    n_head: int = 4  # attention heads per block
    n_embd: int = 64  # residual-stream width
    n_inner: int = 256  # MLP width
    attn_only: bool = False  # MLPs output zero (GPT-2: zeroed and frozen; toolkit: none): attention only

    def __post_init__(self) -> None:
        for name in ("n_layer", "n_head", "n_embd", "n_inner"):
            require(getattr(self, name) >= 1, f"model.{name}", f"must be ≥ 1, got {getattr(self, name)}")
        require(
            self.n_head <= self.n_embd, "model.n_head", f"must be ≤ model.n_embd = {self.n_embd}, got {self.n_head}"
        )
        require(self.n_embd % self.n_head == 0, "model.n_embd", f"must be a multiple of model.n_head = {self.n_head}")

    def own(self) -> ArchitectureConfig:
        """The toolkit's transformer (``repeated-text``'s initialisation) at this size."""
        return ArchitectureConfig(
            d_model=self.n_embd,
            n_layers=self.n_layer,
            n_heads=self.n_head,
            d_head=self.n_embd // self.n_head,
            ffn_width=0 if self.attn_only else self.n_inner,
            init_std=0.01,
            slope_init=0.01,
        )


@dataclass(frozen=True)
class TrainerConfig:
    """The GPT-2's ``transformers.Trainer`` (AdamW, constant learning rate, no weight decay)."""

    steps: int = 2000  # optimiser steps (max_steps)
    lr: float = 1e-3  # AdamW learning rate
    save_every: int = 250  # a checkpoint-STEP folder in RUN/hf every this many steps, for `inductionlab watch`

    def __post_init__(self) -> None:
        require(
            1 <= self.steps <= STEPS_MAX,
            "hf.steps",
            f"must be in 1..{STEPS_MAX:,} (500 times the default): the Trainer's data, hf.steps × batch_size "
            f"sequences, are drawn before it starts; got {self.steps}",
        )
        require(
            math.isfinite(self.lr) and 0 < self.lr <= LR_MAX,
            "hf.lr",
            f"must be a finite number in (0, {LR_MAX:g}] (AdamW at a larger rate diverges at once), got {self.lr}",
        )
        require(self.save_every >= 1, "hf.save_every", f"must be ≥ 1, got {self.save_every}")


NEEDS = {"transformers": "hf-induction (its GPT-2)", "accelerate": "hf-induction (its transformers.Trainer)"}
STEPS_MAX = 1_000_000  # the most optimiser steps of the GPT-2 (its training data are built before the Trainer starts)


# hf-induction's default sizes: a size refused is named by the key grown most over its default
DEFAULT_SIZES = {"hf.steps": 2000, "batch_size": 32, "data.L": 96, "measure.batch": 16, "measure.period": 25}
DEFAULT_SIZES |= {"model.n_embd": 64, "model.n_layer": 2, "model.n_inner": 256, "model.n_head": 4}


def check_sizes(sizes: dict[str, int]) -> None:
    """Refuse, before anything is built, ``sizes`` (the keys of :data:`DEFAULT_SIZES`) whose tensors would not fit
    in memory, naming the key grown most: the Trainer's training data (hf.steps × batch_size sequences of data.L
    int64 tokens, built up front), the GPT-2's weights, Adam state and activations, and the monitor's attention
    patterns (lower bounds)."""
    d, layers, L, batch, heads = (
        sizes[k] for k in ("model.n_embd", "model.n_layer", "data.L", "batch_size", "model.n_head")
    )
    weights = layers * (4 * d * d + 2 * d * sizes["model.n_inner"]) + L * d
    activations = batch * L * layers * (8 * d + sizes["model.n_inner"] + 2 * heads * L)
    needs = (
        ("the Trainer's training data", 8.0 * sizes["hf.steps"] * batch * L, ("hf.steps", "batch_size", "data.L")),
        (
            "the GPT-2's weights, optimiser state and activations",
            4.0 * (4 * weights + 2 * activations),
            ("model.n_embd", "model.n_layer", "model.n_inner", "batch_size", "data.L"),
        ),
        (
            "the monitor's attention patterns",
            4.0 * sizes["measure.batch"] * layers * heads * (2 * sizes["measure.period"]) ** 2,
            ("measure.batch", "measure.period", "model.n_layer", "model.n_head"),
        ),
    )
    for what, n_bytes, keys in needs:
        ranked = sorted(keys, key=lambda k: sizes[k] / DEFAULT_SIZES[k], reverse=True)
        check_memory(ranked[0], n_bytes, what, also=" or ".join(ranked[1:]))


def build_gpt2(model: ModelConfig, vocab: int, L: int, seed: int) -> Any:
    """A randomly initialised ``GPT2LMHeadModel`` (eager attention, no dropout) over ``vocab`` tokens and ``L``
    positions, initialised from ``seed`` (``transformers.set_seed``: the HF models draw from the global
    generator); with ``attn_only`` every MLP's output projection is zero and frozen."""
    transformers = require_extra("transformers", NEEDS["transformers"])
    settings: dict[str, Any] = {  # GPT2Config's keyword arguments (attn_implementation is a PretrainedConfig one)
        "n_layer": model.n_layer,
        "n_head": model.n_head,
        "n_embd": model.n_embd,
        "n_inner": model.n_inner,
        "n_positions": L,
        "vocab_size": vocab,
        "bos_token_id": 0,  # ids inside the vocabulary (GPT-2's 50256 is not); training never reads them
        "eos_token_id": 0,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "attn_implementation": "eager",
    }
    config = transformers.GPT2Config(**settings)
    transformers.set_seed(seed)
    gpt2 = transformers.GPT2LMHeadModel(config)
    gpt2.loss_type = "ForCausalLM"  # the causal-LM loss, named (unnamed, transformers warns and chooses it)
    if model.attn_only:
        with torch.no_grad():
            for name, param in gpt2.named_parameters():
                if ".mlp." in name:  # c_fc and c_proj of every block: the output projection zero, all frozen
                    if ".mlp.c_proj." in name:
                        param.zero_()
                    param.requires_grad_(False)
    return gpt2


def training_data(
    ids: torch.Tensor, L: int, batch: int, steps: int, periods: tuple[int, int], gen: torch.Generator
) -> torch.Tensor:
    """(steps · batch, L) token ids: ``steps`` batches of :func:`~inductionlab.tasks.text.periodic_chunks` of the
    stream ``ids`` (N,) — windows of text repeated with a period drawn from ``periods``, both models' task."""
    return torch.cat([periodic_chunks(ids, L, batch, gen, periods)[0] for _ in range(steps)])


def text_copy_gain(model: Any, ids: torch.Tensor, L: int, periods: tuple[int, int], gen: torch.Generator) -> float:
    """What copying gains on held-out repeated text: loss on the first period − loss on the repeats (nats), over 32
    :func:`~inductionlab.tasks.text.periodic_chunks` of ``ids``."""
    tokens, mask = periodic_chunks(ids, L, 32, gen, periods)  # (32, L)
    logits, _ = adapter_for(model)(tokens)
    losses, repeated = token_losses(logits, tokens), mask[:, :-1]  # (32, L − 1)
    return float(losses[~repeated].double().mean() - losses[repeated].double().mean())


class _Tokens(torch.utils.data.Dataset):
    def __init__(self, data: torch.Tensor):
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.data[i], "labels": self.data[i]}


def train_gpt2(
    model: Any,
    cfg: TrainerConfig,
    data: torch.Tensor,
    batch: int,
    seed: int,
    out: Path,
    monitor: Monitor,
    ctx: RunContext,
    save: bool,
    bf16: bool = False,
) -> None:
    """``transformers.Trainer`` on ``data`` (one pass in an order drawn from ``seed``, ``cfg.steps`` steps of
    ``batch``), on the CPU with ``ctx.threads`` threads, the monitor's callback measuring (outside autocast: in
    float32); ``save``: checkpoint-STEP folders (model only) in ``out``; ``bf16``: the loss's forward (and so its backward)
    under bf16 autocast, the weights and AdamW in float32 (:func:`_bf16_trainer`).  The Trainer prints nothing (its printer callback is
    removed)."""
    from inductionlab.monitor.hf import callback_class

    transformers = require_extra("transformers", NEEDS["transformers"])
    require_extra("accelerate", NEEDS["accelerate"])

    args = transformers.TrainingArguments(
        output_dir=str(out),
        use_cpu=True,
        report_to=[],
        max_steps=cfg.steps,
        learning_rate=cfg.lr,
        per_device_train_batch_size=batch,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        logging_strategy="no",
        save_strategy="steps" if save else "no",
        save_steps=cfg.save_every,
        save_total_limit=None,
        save_only_model=True,
        disable_tqdm=not ctx.progress,
        seed=seed,
        dataloader_num_workers=0,
    )
    threads, bars = torch.get_num_threads(), transformers.utils.logging.is_progress_bar_enabled()
    torch.set_num_threads(ctx.threads)
    if not ctx.progress:
        transformers.utils.logging.disable_progress_bar()  # save_pretrained's "Writing model shards"
    try:
        trainer = (_bf16_trainer() if bf16 else transformers.Trainer)(
            model=model, args=args, train_dataset=_Tokens(data), callbacks=[callback_class()(monitor)]
        )
        trainer.remove_callback(transformers.trainer_callback.PrinterCallback)
        trainer.train()
    finally:
        torch.set_num_threads(threads)
        if bars:
            transformers.utils.logging.enable_progress_bar()


def _bf16_trainer() -> type:
    """A ``transformers.Trainer`` whose loss runs under bf16 autocast, through the hook the Trainer leaves for it.
    ``TrainingArguments(bf16=True)`` would have accelerate wrap ``model.forward`` itself in autocast, so the monitor's
    callback would measure the heads in bf16 too; here it measures in float32 whatever the training precision."""
    trainer: Any = require_extra("transformers", NEEDS["transformers"]).Trainer

    class Bf16Trainer(trainer):
        def autocast_smart_context_manager(self, cache_enabled: bool | None = True):
            return torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=cache_enabled)

    return Bf16Trainer


def own_scores(tokens: torch.Tensor, period: int):
    """``fit_lm``'s diagnostics for the toolkit's transformer, measured as the monitor measures: each head's
    induction score (``induction_l{l}h{h}``), the best of them and the loss on the repeated copy, per run, on the
    monitor's tokens (B, L)."""

    def diagnostics(cfg: tf.TransformerConfig, params: tf.Params, _: torch.Tensor) -> dict[str, np.ndarray]:
        runs = []
        for run in range(params["embed.W_E"].shape[0]):
            logits, patterns = toolkit_adapter(cfg, params, run)(tokens)
            induction = head_scores(patterns, tokens, period)["induction"]  # (n_layers, H)
            loss = float(token_losses(logits, tokens)[:, period:].double().mean())
            cols = {f"induction_l{l}h{h}": v for (l, h), v in np.ndenumerate(induction)}
            runs.append(cols | {"monitor_best_induction": float(np.nanmax(induction)), "monitor_loss_repeated": loss})
        return {k: np.array([r[k] for r in runs], dtype=np.float64) for k in runs[0]}

    return diagnostics


def phase_summary(phase: PhaseChange, seconds: float) -> dict:
    """A model's summary entries from its phase change: a time not reached is +inf, which the summary records as
    never reached (docs/monitor.md#phase-detection, docs/conventions.md#never)."""

    def when(t: float) -> float:
        return float(t) if math.isfinite(t) else math.inf

    return {
        "phase_step": when(phase.step),
        "final_induction_score": float(phase.score),
        "best_head": list(phase.head) if phase.head is not None else None,
        "loss_drop_step": when(phase.loss_drop_step),
        "coincides": bool(phase.coincides),
        "wall_seconds": float(seconds),
    }
