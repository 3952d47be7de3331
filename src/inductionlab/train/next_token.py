"""The general transformer's next-token cross-entropy at every position (the fused loss of
docs/conventions.md#fused-cross-entropy), apart from the text trainer (:mod:`inductionlab.train.text`) so that a run
that only scores token sequences imports no text data."""

from __future__ import annotations

import torch

from inductionlab.models import transformer as tf
from inductionlab.models.cross_entropy import cross_entropy


def token_losses(
    cfg: tf.TransformerConfig, params: tf.Params, tokens: torch.Tensor, hooks: tf.Hooks | None = None
) -> torch.Tensor:
    """Next-token cross-entropy (S, B, L − 1) at every position of tokens (B, L); ``hooks``: the model's forward
    hooks (e.g. a head ablation)."""
    logits = tf.forward(cfg, params, tokens[:, :-1].unsqueeze(0), hooks=hooks)[0]  # (S, B, L − 1, V)
    targets = tokens[:, 1:].expand(logits.shape[0], -1, -1)
    return cross_entropy(logits.flatten(0, 2), targets.flatten()).view(targets.shape)  # fused: #fused-cross-entropy
