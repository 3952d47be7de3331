"""Adapters for the interpretability libraries that wrap a transformers model: TransformerLens 3's
``TransformerBridge`` and nnsight (docs/monitor.md#adapters).  Each returns a
:class:`~inductionlab.monitor.adapters.FunctionAdapter`, as the other adapters do, and is picked by
:func:`~inductionlab.monitor.pick.adapter_for` once its package is loaded; neither package is imported here.
"""

from __future__ import annotations

from typing import Any

import torch

from inductionlab.config import ConfigError, require
from inductionlab.extras import require as require_extra
from inductionlab.monitor.adapters import FunctionAdapter, Patterns, cache_adapter, is_instance, require_eager


def bridge_adapter(model: Any) -> FunctionAdapter:
    """A TransformerLens ``TransformerBridge`` (TransformerLens 3's wrapper of a transformers model, e.g. from
    ``TransformerBridge.boot_transformers``): ``run_with_cache`` keeping only ``blocks.{l}.attn.hook_pattern``, which
    the bridge computes itself whatever the wrapped model's attention implementation
    (docs/monitor.md#transformerlens-transformerbridge).  An architecture with a layer without attention (a
    state-space or hybrid model) is refused naming the missing hook."""
    return cache_adapter(model, f"bridge_adapter({type(model.original_model).__name__})")


def _attention_paths(module: torch.nn.Module, n_layers: int) -> list[str]:
    """The paths of a transformers model's attention modules: the outermost modules whose class name ends in
    "Attention" (``GPT2Attention``, ``LlamaAttention``, ...), one per layer, else refused naming ``attention``."""
    paths: list[str] = []
    for path, sub in module.named_modules():
        if type(sub).__name__.endswith("Attention") and not any(path.startswith(p + ".") for p in paths):
            paths.append(path)
    require(
        len(paths) == n_layers,
        "attention",
        f"found {len(paths)} attention modules ({', '.join(paths[:3]) or 'none'}) for {n_layers} layers: give the "
        'path of layer l\'s attention module with {layer} for l, e.g. attention="transformer.h.{layer}.attn"',
    )
    return paths


def _envoys(model: Any, attention: str, n_layers: int) -> list[Any]:
    """The nnsight envoys of the attention modules, one per layer (``attention``: a path template, or "")."""
    if not attention:
        paths = _attention_paths(model._module, n_layers)
    else:
        require("{layer}" in attention, "attention", f"must hold {{layer}} for the layer's number, got {attention!r}")
        paths = [attention.format(layer=l) for l in range(n_layers)]
    envoys = []
    for path in paths:
        try:
            envoys.append(model.get(path))
        except AttributeError:
            raise ConfigError(f"attention: the wrapped model has no module {path!r}") from None
    return envoys


def nnsight_adapter(model: Any, attention: str = "") -> FunctionAdapter:
    """An nnsight ``NNsight`` (or ``TransformersModel``, ``LanguageModel``) wrapping a transformers causal LM with
    eager attention: one ``model.trace(tokens)`` saving the logits and each layer's attention weights — its attention
    module's ``output[1]`` (docs/monitor.md#nnsight).  ``attention``: the path of layer l's attention module with
    ``{layer}`` for l (default: the modules whose class name ends in "Attention").  A model not yet dispatched (its
    weights on the meta device) is dispatched here."""
    if not getattr(model, "dispatched", True):
        model.dispatch()
    module = model._module
    require(
        is_instance(module, "transformers", "PreTrainedModel"),
        "model",
        f"nnsight_adapter reads a transformers model's attention modules, not a {type(module).__name__}'s: "
        "use patterns_adapter(model._module, patterns) for any other module",
    )
    config = module.config
    require_eager(config, "the wrapped model")
    n_layers = int(config.num_hidden_layers)
    envoys = _envoys(model, attention, n_layers)
    save = require_extra("nnsight", "nnsight_adapter").save  # imported already: the model is an nnsight wrapper

    def run(tokens: torch.Tensor) -> tuple[torch.Tensor, Patterns]:
        with model.trace(tokens, use_cache=False):
            patterns = save([envoy.output[1] for envoy in envoys])  # eager attention returns (output, weights)
            logits = save(model.output.logits)
        return logits, patterns

    return FunctionAdapter(
        n_layers,
        int(config.num_attention_heads),
        run,
        module,
        None,
        int(getattr(config, "vocab_size", 0) or 0),
        int(getattr(config, "max_position_embeddings", 0) or 0),
        f"nnsight_adapter({type(module).__name__})",
    )
