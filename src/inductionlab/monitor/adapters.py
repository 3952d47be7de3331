"""Adapters: one interface to the logits and attention patterns of any model, so that the monitor measures a
HuggingFace causal LM, a TransformerLens ``HookedTransformer`` or ``TransformerBridge``, an nnsight-wrapped model,
the toolkit's general transformer or any ``torch.nn.Module`` alike (docs/monitor.md#adapters).

An adapter maps tokens (B, L) int64 to ``(logits (B, L, V), [pattern (B, H, L, L) per layer])``: query rows,
key columns, each row a distribution over the keys (the TransformerLens ``hook_pattern`` layout).  It runs
without gradients and in eval mode (no dropout), and puts the model's training flag back afterwards.

``transformers``, ``transformer_lens`` and ``nnsight`` are never imported here: a model is recognised only when its
package is already loaded (it must be, for the model to exist).
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
ROW_TOL = 1e-3  # a pattern row's sum over keys j ≤ i must be within this of 1 (or 0); 4·eps of its dtype if larger


class AdapterError(ConfigError):
    """What an adapter returned is not logits (B, L, V) and one causal attention pattern (B, H, L, L) per layer
    whose rows are distributions over the keys j ≤ i, all finite; the message names the adapter and the layer."""


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
    name: str = ""  # how errors name it (default: FunctionAdapter(<run's name>))

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


def is_instance(model: Any, package: str, name: str) -> bool:
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


def require_eager(config: Any, what: str) -> None:
    """Refuse (ConfigError naming attn_implementation) a transformers config whose attention returns no weights."""
    impl = getattr(config, "_attn_implementation", None) or "eager"
    require(impl == "eager", "attn_implementation", f"{what} uses {impl!r}, which {ATTN_HINT}")


def hf_adapter(model: Any) -> FunctionAdapter:
    """A transformers causal LM (``GPT2LMHeadModel``, ...), run with ``output_attentions=True``.  A model built with
    an attention that returns no weights (sdpa, flash attention) is switched to eager attention for each measurement
    and back after it (``set_attn_implementation``, transformers ≥ 5), so the trainer's own steps keep their kernel;
    one without that switch is refused (ConfigError naming attn_implementation)."""
    config = model.config
    if not callable(getattr(model, "set_attn_implementation", None)):
        require_eager(config, "the model")
    n_layers = int(config.num_hidden_layers)

    def run(tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        impl = getattr(model.config, "_attn_implementation", None) or "eager"
        if impl != "eager":
            model.set_attn_implementation("eager")
        try:
            out = model(input_ids=tokens, output_attentions=True, use_cache=False)
        finally:
            if impl != "eager":
                model.set_attn_implementation(impl)
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
        f"hf_adapter({type(model).__name__})",
    )


def cache_adapter(model: Any, name: str) -> FunctionAdapter:
    """A TransformerLens model (``HookedTransformer``, ``TransformerBridge``) named ``name`` in errors:
    ``run_with_cache`` keeping only ``blocks.{l}.attn.hook_pattern``; a layer without that hook is refused by name."""
    cfg = model.cfg
    names = [f"blocks.{l}.attn.hook_pattern" for l in range(cfg.n_layers)]
    missing = [hook for hook in names if hook not in model.hook_dict]
    if missing:
        raise ConfigError(f"model: {name} has no hook {missing[0]}: every layer must have attention")

    def run(tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        logits, cache = model.run_with_cache(tokens, names_filter=lambda hook: hook in names)
        return logits, [cache[hook] for hook in names]

    return FunctionAdapter(cfg.n_layers, cfg.n_heads, run, model, None, cfg.d_vocab_out, cfg.n_ctx, name)


def tl_adapter(model: Any) -> FunctionAdapter:
    """A TransformerLens ``HookedTransformer``: ``run_with_cache`` keeping only ``blocks.{l}.attn.hook_pattern``."""
    return cache_adapter(model, f"tl_adapter({type(model).__name__})")


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

    device = one["embed.W_E"].device
    return FunctionAdapter(
        cfg.n_layers, cfg.n_heads, forward, None, device, cfg.vocab, 0, f"toolkit_adapter(run={run})"
    )


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

    adapter = FunctionAdapter(n_layers, n_heads, run, model, name=f"patterns_adapter({type(model).__name__})")
    if not (n_layers and n_heads):  # the patterns' shapes only: a hand-set pattern fits its own tokens alone
        found = checked(adapter, torch.zeros(1, 2, dtype=torch.long), patterns=False)[1]
        if not (found and isinstance(found[0], torch.Tensor) and found[0].dim() == 4):
            raise AdapterError(
                f"adapter {adapter.name}: patterns(model, tokens) must return one (B, H, L, L) attention pattern per "
                f"layer, got {len(found)} patterns" + (f", the first of {_shape(found[0])}" if found else "")
            )
        adapter.n_layers, adapter.n_heads = len(found), int(found[0].shape[1])
    return adapter


def adapter_name(adapter: Any) -> str:
    """How errors name an adapter: its ``name``, else its type's."""
    name = getattr(adapter, "name", "")
    if not name and isinstance(adapter, FunctionAdapter):
        name = f"FunctionAdapter({getattr(adapter.run, '__name__', type(adapter.run).__name__)})"
    return name or type(adapter).__name__


def _shape(x: Any) -> str:
    return f"shape {tuple(x.shape)} {x.dtype}" if isinstance(x, torch.Tensor) else f"a {type(x).__name__}"


def _check_logits(name: str, logits: Any, tokens: torch.Tensor) -> None:
    B, L = tokens.shape
    ok = isinstance(logits, torch.Tensor) and logits.is_floating_point() and logits.dim() == 3
    if not (ok and tuple(logits.shape[:2]) == (B, L) and logits.shape[2] >= 2):
        raise AdapterError(f"adapter {name}: logits must be (B, L, V) = ({B}, {L}, V ≥ 2) floats, got {_shape(logits)}")
    bad = int((~torch.isfinite(logits)).sum())
    if bad:
        raise AdapterError(
            f"adapter {name}: its logits hold {bad} NaN or infinite values of {logits.numel()}: the model has "
            "diverged (or the adapter returns something else than logits)"
        )
    top, V = int(tokens.max()), logits.shape[-1]
    if top >= V:
        raise AdapterError(f"adapter {name}: token id {top} lies beyond the model's vocabulary size {V} (its logits)")


def _check_rows(where: str, pattern: torch.Tensor) -> None:
    """Finite, non-negative, no weight on later keys (j > i), each row summing to 1 — or 0, a query without keys —
    over the keys j ≤ i, within ``ROW_TOL`` (or 4·eps of the pattern's dtype, if larger)."""
    x = pattern.detach().double()
    bad = int((~torch.isfinite(x)).sum())
    if bad:
        raise AdapterError(f"{where}: the attention pattern holds {bad} NaN or infinite weights of {x.numel()}")
    tol = max(ROW_TOL, 4 * torch.finfo(pattern.dtype).eps)
    if float(x.min()) < -tol:
        raise AdapterError(f"{where}: the attention pattern has negative weights (down to {float(x.min()):.3g})")
    later = float(x.triu(1).sum(-1).max())
    if later > tol:
        raise AdapterError(
            f"{where}: a query puts {later:.3g} of its attention on later keys (j > i): not a causal model's pattern "
            "(the monitor measures causal language models; an encoder such as BERT attends both ways)"
        )
    sums = x.tril().sum(-1)  # (B, H, L)
    off = torch.minimum((sums - 1).abs(), sums.abs())
    if float(off.max()) > tol:
        b, h, i = (int(v) for v in torch.unravel_index(off.argmax(), off.shape))
        raise AdapterError(
            f"{where}: each query's attention must sum to 1 (or 0: a query without keys) over the keys j ≤ i, within "
            f"{tol:.3g}; head {h}, query {i} of sequence {b} sums to {float(sums[b, h, i]):.6g} (raw scores rather "
            "than softmax weights?)"
        )


def _check_patterns(adapter: Any, name: str, patterns: Any, tokens: torch.Tensor) -> None:
    B, L = tokens.shape
    n_layers, n_heads = int(getattr(adapter, "n_layers", 0) or 0), int(getattr(adapter, "n_heads", 0) or 0)
    if not patterns or (n_layers and len(patterns) != n_layers):
        raise AdapterError(
            f"adapter {name}: returned {len(patterns)} attention patterns; it must return one (B, H, L, L) per layer"
            + (f" ({n_layers})" if n_layers else "")
        )
    first = patterns[0]
    heads = n_heads or (int(first.shape[1]) if isinstance(first, torch.Tensor) and first.dim() == 4 else 0)
    for layer, pattern in enumerate(patterns):
        where = f"adapter {name}, layer {layer}"
        ok = isinstance(pattern, torch.Tensor) and pattern.is_floating_point() and pattern.dim() == 4
        if not (ok and tuple(pattern.shape) == (B, heads, L, L) and heads >= 1):
            raise AdapterError(
                f"{where}: the attention pattern must be (B, H, L, L) = ({B}, {heads or 'H'}, {L}, {L}) floats "
                f"(every layer with the same number of heads), got {_shape(pattern)}"
            )
        _check_rows(where, pattern)


def checked(adapter: Any, tokens: torch.Tensor, patterns: bool = True) -> tuple[torch.Tensor, Patterns]:
    """``adapter(tokens)``, its output checked (:class:`AdapterError` naming the adapter and the layer): logits
    (B, L, V), finite, V above every token id; one pattern (B, H, L, L) per layer, the same H in each, finite, each
    query's weights non-negative, on keys j ≤ i only, summing to 1 (or 0: a query without keys) within
    ``ROW_TOL`` (or 4·eps of the pattern's dtype, if larger).  ``patterns=False``: the logits only."""
    name = adapter_name(adapter)
    out = adapter(tokens)
    if not (isinstance(out, tuple | list) and len(out) == 2 and isinstance(out[1], list | tuple)):
        raise AdapterError(f"adapter {name}: must return (logits, [pattern per layer]), got {type(out).__name__}")
    logits, found = out[0], list(out[1])
    _check_logits(name, logits, tokens)
    if patterns:
        _check_patterns(adapter, name, found, tokens)
    return logits, found
