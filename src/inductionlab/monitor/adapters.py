"""Adapters: one interface to the logits and attention patterns of any model, so that the monitor measures a
HuggingFace causal LM, a TransformerLens ``HookedTransformer``, the toolkit's general transformer or any
``torch.nn.Module`` alike (docs/monitor.md#adapters).

An adapter maps tokens (B, L) int64 to ``(logits (B, L, V), [pattern (B, H, L, L) per layer])``: query rows,
key columns, each row a distribution over the keys (the TransformerLens ``hook_pattern`` layout).  It runs
without gradients and in eval mode (no dropout), and puts the model's training flag back afterwards.

``transformers`` and ``transformer_lens`` are never imported here: a model is recognised only when its package is
already loaded (it must be, for the model to exist).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch

from inductionlab.config import ConfigError, require
from inductionlab.models import transformer as tf

Patterns = list[torch.Tensor]  # one (B, H, L, L) attention pattern per layer


@runtime_checkable
class Adapter(Protocol):
    """tokens (B, L) int64 → (logits (B, L, V), [pattern (B, H, L, L) per layer]); no grad; eval mode, the
    model's training flag restored afterwards.  Optional attributes the monitor reads when present: ``vocab``
    (the vocabulary size) and ``n_ctx`` (the longest sequence), 0 where unknown."""

    n_layers: int
    n_heads: int

    def __call__(self, tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]: ...


@dataclass
class FunctionAdapter:
    """An :class:`Adapter` around ``run`` (tokens → logits, patterns): runs it without gradients with ``module``
    (if any) in eval mode, its training flag restored afterwards.  Tokens go to ``device``, or (None) to the
    device of ``module``'s parameters at the time of the call (a Trainer moves the model after the monitor is
    built), or the CPU."""

    n_layers: int
    n_heads: int
    run: Callable[[torch.Tensor], tuple[torch.Tensor, Patterns]]
    module: torch.nn.Module | None = None
    device: torch.device | str | None = None
    vocab: int = 0  # the vocabulary size (0: unknown)
    n_ctx: int = 0  # the longest sequence the model takes (0: unknown)

    def __call__(self, tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        module = self.module
        training = module is not None and module.training
        device = self.device or (_device(module) if module is not None else "cpu")
        if module is not None:
            module.eval()
        try:
            with torch.no_grad():
                logits, patterns = self.run(tokens.to(device))
        finally:
            if module is not None:
                module.train(training)
        return logits, list(patterns)


def _is_instance(model: Any, package: str, name: str) -> bool:
    """``isinstance(model, package.name)`` when ``package`` is loaded (never imports it)."""
    module = sys.modules.get(package)
    cls = getattr(module, name, None) if module is not None else None
    return cls is not None and isinstance(model, cls)


def _device(module: torch.nn.Module) -> torch.device:
    first = next(iter(module.parameters()), None)
    return first.device if first is not None else torch.device("cpu")


ATTN_HINT = (
    'returns no attention weights; build it with attn_implementation="eager", e.g. '
    'GPT2LMHeadModel(GPT2Config(..., attn_implementation="eager")) or '
    'AutoModelForCausalLM.from_pretrained(name, attn_implementation="eager")'
)


def hf_adapter(model: Any) -> FunctionAdapter:
    """A transformers causal LM (``GPT2LMHeadModel``, ...), run with ``output_attentions=True``.  A model whose
    attention implementation returns no weights (sdpa, flash attention) is refused (ConfigError naming
    attn_implementation)."""
    config = model.config
    impl = getattr(config, "_attn_implementation", None) or "eager"
    require(impl == "eager", "attn_implementation", f"the model uses {impl!r}, which {ATTN_HINT}")
    n_layers = int(config.num_hidden_layers)

    def run(tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        out = model(input_ids=tokens, output_attentions=True, use_cache=False)
        attentions = out.attentions or ()
        require(
            len(attentions) == n_layers and all(a is not None for a in attentions),
            "attn_implementation",
            f"the model returned {len(attentions)} attention patterns for {n_layers} layers: it {ATTN_HINT}",
        )
        return out.logits, list(attentions)

    return FunctionAdapter(
        n_layers,
        int(config.num_attention_heads),
        run,
        model,
        None,
        int(getattr(config, "vocab_size", 0) or 0),
        int(getattr(config, "max_position_embeddings", 0) or 0),
    )


def tl_adapter(model: Any) -> FunctionAdapter:
    """A TransformerLens ``HookedTransformer``: ``run_with_cache`` keeping only ``blocks.{l}.attn.hook_pattern``."""
    cfg = model.cfg
    names = [f"blocks.{l}.attn.hook_pattern" for l in range(cfg.n_layers)]

    def run(tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        logits, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
        return logits, [cache[name] for name in names]

    return FunctionAdapter(cfg.n_layers, cfg.n_heads, run, model, None, cfg.d_vocab_out, cfg.n_ctx)


def toolkit_adapter(cfg: tf.TransformerConfig, params: tf.Params, run: int = 0) -> FunctionAdapter:
    """Run ``run`` of the toolkit's general transformer (:func:`inductionlab.models.transformer.forward` with
    ``keep=True``, its logits at every position whatever ``cfg.readout``); discrete tokens only."""
    require(cfg.vocab > 0, "model.vocab", "the monitor feeds token ids: real-valued tokens (vocab = 0) cannot be fed")
    S = params["embed.W_E"].shape[0]
    require(0 <= run < S, "run", f"must lie in 0..{S - 1}, got {run}")
    every = dataclasses.replace(cfg, readout="all")
    one = {name: value[run : run + 1] for name, value in params.items()}
    names = [f"blocks.{l}.attn.hook_pattern" for l in range(cfg.n_layers)]

    def forward(tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        logits, cache = tf.forward(every, one, tokens, keep=True)  # (1, B, L, V); patterns (1, B, H, L, L)
        return logits[0], [cache[name][0] for name in names]

    return FunctionAdapter(cfg.n_layers, cfg.n_heads, forward, None, one["embed.W_E"].device, cfg.vocab)


def _default_logits(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    out = model(tokens)
    return out.logits if hasattr(out, "logits") else out


def patterns_adapter(
    model: torch.nn.Module,
    patterns: Callable[[torch.nn.Module, torch.Tensor], Patterns],
    logits: Callable[[torch.nn.Module, torch.Tensor], torch.Tensor] | None = None,
    n_heads: int = 0,
    n_layers: int = 0,
) -> FunctionAdapter:
    """Any ``torch.nn.Module``: ``patterns(model, tokens)`` gives its attention patterns, one (B, H, L, L) per
    layer, and ``logits(model, tokens)`` its logits (B, L, V) (default: ``model(tokens)``, or its ``.logits``).
    ``n_layers``/``n_heads`` (0: read from the first call's patterns)."""
    score = logits or _default_logits

    def run(tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        return score(model, tokens), list(patterns(model, tokens))

    adapter = FunctionAdapter(n_layers, n_heads, run, model)
    if not (n_layers and n_heads):
        found = adapter(torch.zeros(1, 2, dtype=torch.long))[1]
        adapter.n_layers, adapter.n_heads = len(found), int(found[0].shape[-3])
    return adapter


def adapter_for(model: Any, **kw: Any) -> Adapter:
    """The adapter of ``model``: an :class:`Adapter` as it is; a TransformerLens ``HookedTransformer``; a
    transformers ``PreTrainedModel``; a ``(TransformerConfig, params)`` tuple (``kw``: ``run``); any other
    ``torch.nn.Module`` with ``patterns=`` (and optionally ``logits=``) in ``kw``."""
    if isinstance(model, Adapter):
        return model
    if _is_instance(model, "transformer_lens", "HookedTransformer"):
        return tl_adapter(model)
    if _is_instance(model, "transformers", "PreTrainedModel"):
        return hf_adapter(model)
    if isinstance(model, tuple) and len(model) == 2 and isinstance(model[0], tf.TransformerConfig):
        return toolkit_adapter(model[0], model[1], **kw)
    if isinstance(model, torch.nn.Module) and "patterns" in kw:
        return patterns_adapter(model, **kw)
    raise ConfigError(
        f"model: cannot read attention patterns from a {type(model).__name__}: pass a transformers causal LM, a "
        "TransformerLens HookedTransformer, a (TransformerConfig, params) tuple, an nn.Module with "
        "patterns=fn(model, tokens) → [pattern (B, H, L, L) per layer], or an Adapter"
    )
