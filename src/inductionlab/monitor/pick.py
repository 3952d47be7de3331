"""Which adapter a model needs (docs/monitor.md#adapters): :func:`adapter_for` recognises each kind of model by its
class, once that class's package is loaded (none is imported here)."""

from __future__ import annotations

from typing import Any

import torch

from inductionlab.config import ConfigError
from inductionlab.models import transformer as tf
from inductionlab.monitor.adapters import (
    Adapter,
    hf_adapter,
    is_instance,
    patterns_adapter,
    tl_adapter,
    toolkit_adapter,
)
from inductionlab.monitor.bridges import bridge_adapter, nnsight_adapter


def adapter_for(model: Any, **kw: Any) -> Adapter:
    """The adapter of ``model``: an nnsight-wrapped model (``kw``: ``attention``); a TransformerLens
    ``HookedTransformer`` or ``TransformerBridge``; an :class:`Adapter` as it is; a transformers
    ``PreTrainedModel``; a ``(TransformerConfig, params)`` tuple (``kw``: ``run``); any other ``torch.nn.Module``
    with ``patterns=`` (and optionally ``logits=``) in ``kw``."""
    if is_instance(model, "nnsight", "Envoy"):  # before the Adapter check: a wrapper forwards attribute look-ups
        return nnsight_adapter(model, **kw)
    if is_instance(model, "transformer_lens", "HookedTransformer"):
        return tl_adapter(model)
    if is_instance(model, "transformer_lens.model_bridge", "TransformerBridge"):
        return bridge_adapter(model)
    if isinstance(model, Adapter):
        return model
    if is_instance(model, "transformers", "PreTrainedModel"):
        return hf_adapter(model)
    if isinstance(model, tuple) and len(model) == 2 and isinstance(model[0], tf.TransformerConfig):
        return toolkit_adapter(model[0], model[1], **kw)
    if isinstance(model, torch.nn.Module) and "patterns" in kw:
        return patterns_adapter(model, **kw)
    raise ConfigError(
        f"model: cannot read attention patterns from a {type(model).__name__}: pass a transformers causal LM, a "
        "TransformerLens HookedTransformer or TransformerBridge, an nnsight-wrapped transformers model, a "
        "(TransformerConfig, params) tuple, an nn.Module with patterns=fn(model, tokens) → [pattern (B, H, L, L) "
        "per layer], or an Adapter"
    )
