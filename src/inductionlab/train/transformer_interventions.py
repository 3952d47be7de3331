"""The general transformer's interventions (docs/conventions.md#mech): its parameter family for
:mod:`inductionlab.train.interventions` (names ``blocks.0.attn.p``, …, aliases ``layer1``, ``layer2``, …) and
:class:`AblateHeads`, the head ablation only this family offers.  Apart from the generic module so that an experiment
on another model family never imports the transformer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import torch

from inductionlab.models import transformer as tf
from inductionlab.train.interventions import ALL_STEPS, Ablation, Family
from inductionlab.train.loop import LoopState


class AblateHeads(Ablation):
    """Replace the outputs of heads ``heads`` of layer ``layer`` (general transformer, ``hook_z``) by zero or their
    batch mean during ``steps``.  Pass :attr:`forward_hooks` to the model's forward in the loss (and the
    evaluation); the hook switches them on and off with the step."""

    def __init__(
        self, layer: int, heads: Sequence[int] | None, mode: Literal["zero", "mean"] = "zero", steps: range = ALL_STEPS
    ):
        self.layer, self.heads, self.mode, self.steps = layer, heads, mode, steps
        self.active = 0 in steps

    def _replace(self, z: torch.Tensor) -> torch.Tensor:  # (S, B, H, L, K)
        if not self.active:
            return z
        return tf.replace_heads(z, range(z.shape[2]) if self.heads is None else self.heads, self.mode)

    @property
    def forward_hooks(self) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
        return {f"blocks.{self.layer}.attn.hook_z": self._replace}

    def before_step(self, state: LoopState) -> None:
        self.active = state.step in self.steps

    before_evaluate = before_step


def transformer_family(cfg: tf.TransformerConfig) -> Family:
    """The general transformer: its parameter names (``blocks.0.attn.p``, …); aliases ``layer1``, ``layer2``, …;
    its heads ablated by :class:`AblateHeads`."""
    aliases = {f"layer{l + 1}": (f"blocks.{l}",) for l in range(cfg.n_layers)}
    return Family("the general transformer", tf.param_shapes(cfg), aliases, cfg.n_layers, cfg.n_heads, AblateHeads)
