"""The architecture keys of Wang et al.'s transformer (docs/conventions.md#wang-1) for the experiments whose token
space comes from elsewhere — the chain's ``task.vocab_size``, the corpus, ``tf_vocab``, or the induction task's
``task.d`` — so that it is one value, never a second key that must agree.  The output width follows from the tokens
and the read-out from the task, so neither is a key either."""

from __future__ import annotations

from dataclasses import dataclass, fields

from inductionlab.config import require
from inductionlab.models.transformer import PerHead, PerLayer, TransformerConfig


@dataclass(frozen=True)
class ArchitectureConfig:
    """The architecture less its token space: :meth:`build` adds a vocabulary (a language model, all positions read
    out), :meth:`real_valued` a token dimension (the induction task, the last position read out); the fields mean
    what they mean in :class:`TransformerConfig`."""

    d_model: int = 8  # residual-stream width D
    n_layers: int = 2  # attention layers
    n_heads: int = 1  # heads H per layer
    d_head: int = 0  # dimension K of each head's queries, keys and values (0: d_model)
    dp: PerHead = True  # dot-product score ⟨W_Q x_i, W_K x_j⟩ on: one bool, or per layer a JSON list of per-head bools
    rpe: PerHead = True  # relative-position term −p(i − j − 1) on (wang-1-1): one bool, or per layer per head as dp
    residual: PerLayer = True  # residual connection around attention: one bool, or one per layer: true,false
    ffn_width: int | tuple[int, ...] = 0  # FFN width (0: none), one for every layer or one per layer: 512,0
    # first key position (1-indexed), one for every layer or one per layer: 1,2 (wang-a1)
    key_start: int | tuple[int, ...] = 1
    scale: bool = False  # divide the dot-product scores by √d_head (the paper has no scaling)
    init_std: float = 0.01  # weights start N(0, init_std²)
    slope_init: float = 0.01  # every head's RPE slope p starts here

    def __post_init__(self) -> None:
        self.build(2)  # validates every field as TransformerConfig does

    def build(self, vocab: int) -> TransformerConfig:
        """The full architecture over ``vocab`` tokens (lookup embedding, ``vocab`` outputs at every position)."""
        require(vocab >= 1, "vocab", f"must be ≥ 1, got {vocab}")
        return TransformerConfig(vocab=vocab, readout="all", **self.keys())

    def keys(self) -> dict:
        """Every field by name (read one by one, so a config whose reads are traced sees each read)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def real_valued(self, d: int) -> TransformerConfig:
        """The full architecture over real-valued tokens of dimension ``d`` (``d`` outputs at the last position)."""
        return TransformerConfig(d_in=d, readout="last", **self.keys())

    def check_keys(self, L: int, prefix: str = "model", where: str = "a sequence") -> None:
        """:meth:`TransformerConfig.check_keys`: refuse a ``key_start`` beyond the last key of ``L`` positions."""
        self.build(2).check_keys(L, prefix, where)
