"""Export one run of the general transformer to a TransformerLens ``HookedTransformer`` (docs/conventions.md#mech), so
that its tools (activation caching, ``detect_head``, patching helpers) work on a model trained here.

What maps directly: W_E, W_Q, W_K, W_V, W_O, W_U (the run axis dropped; all biases and W_pos zero), the ReLU FFN
(a layer without one gets zero FFN weights, which add nothing), ``scale`` → ``use_attn_scale``; a head without the
dot-product term gets W_Q = 0.  What does not: the learnable per-head slope p_h, the strict causality (keys
j < i) and ``key_start`` — TransformerLens's ALiBi slopes are fixed and its mask is j ≤ i.  A permanent hook on
each layer's ``hook_attn_scores`` adds −p_h (i − j − 1) on the keys key_start ≤ j < i (1-indexed) and −∞
elsewhere, at any input length; a query with no keys gets a NaN row, which TransformerLens sets to 0, as here.
Real-valued tokens and layers without a residual cannot be expressed and are refused.

The model carries a HuggingFace tokenizer, so that ``to_tokens("...")`` works: a text run's own (:func:`hf_tokenizer`),
else one whose words are the token ids ``"0" … "V−1"`` separated by spaces; no BOS token is prepended.  The run
directory form is :func:`inductionlab.to_hooked_transformer` (docs/models.md).

Needs the ``tl`` extra (a TransformerLens release that still has ``HookedTransformer``; docs/conventions.md#extras).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch

from inductionlab.config import require
from inductionlab.extras import require as require_extra
from inductionlab.models import transformer as tf
from inductionlab.tasks.text import EOS, UNK, BPETokenizer, TextTokenizer


def transformer_lens() -> Any:
    """``transformer_lens`` (the ``tl`` extra), or :class:`~inductionlab.extras.MissingExtra` naming it."""
    return require_extra("transformer_lens", "to_hooked_transformer")


def _scores_hook(cfg: tf.TransformerConfig, slopes: torch.Tensor, rpe: torch.Tensor, key_start: int):
    """hook_attn_scores (batch, H, L, L) → the same plus our position bias and strictly causal mask."""

    def hook(scores: torch.Tensor, hook: Any) -> torch.Tensor:
        L = scores.shape[-1]
        allowed = tf.attention_mask(L, key_start, scores.device)  # (L, L): key_start ≤ j < i
        i = torch.arange(L, dtype=scores.dtype, device=scores.device)
        dist = (i.view(-1, 1) - i.view(1, -1) - 1).clamp(min=0)
        bias = -(slopes * rpe).to(scores).view(1, -1, 1, 1) * dist  # (1, H, L, L)
        finite = torch.where(torch.isfinite(scores), scores, torch.zeros_like(scores))
        return torch.where(allowed, finite + bias, torch.full_like(scores, -math.inf))

    return hook


def hf_tokenizer(tokenizer: TextTokenizer | None, vocab: int) -> Any:
    """A HuggingFace ``PreTrainedTokenizerFast`` (what TransformerLens takes) of a text run's tokenizer, or, for
    ``None``, of the ``vocab`` synthetic tokens written as their ids ``"0" … "V−1"`` separated by spaces (a word
    outside them is an error).  Strings of unequal length are padded on the right with <eos> (text: <unk> if the
    vocabulary lacks it) or token 0: a causal model's logits before the padding do not see it."""
    tk = require_extra("tokenizers", "to_hooked_transformer's tokenizer")
    fast = require_extra("transformers", "to_hooked_transformer's tokenizer").PreTrainedTokenizerFast
    if isinstance(tokenizer, BPETokenizer):
        return fast(tokenizer_object=tokenizer.tokenizer, unk_token=UNK, eos_token=EOS, pad_token=EOS)
    words = tokenizer.vocab if tokenizer is not None else [str(i) for i in range(vocab)]
    word_level = tk.Tokenizer(tk.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=UNK))
    word_level.pre_tokenizer = tk.pre_tokenizers.WhitespaceSplit()
    if tokenizer is None:  # a whole word only: "10" stays one token
        return fast(tokenizer_object=word_level, pad_token=tk.AddedToken("0", single_word=True))
    end = tk.AddedToken(EOS if EOS in words else UNK, single_word=True)
    return fast(tokenizer_object=word_level, unk_token=UNK, eos_token=end, pad_token=end)


def _copy_weights(model: Any, cfg: tf.TransformerConfig, params: tf.Params, run: int) -> None:
    """Run ``run`` of our parameters into the HookedTransformer ``model``: biases and W_pos zero, W_Q zero for the
    heads without dot-product attention, FFN weights zero-padded to its common width d_mlp."""
    dtype = params["embed.W_E"].dtype
    state = {k: torch.zeros_like(v) for k, v in model.named_parameters()}  # biases and W_pos stay zero
    state["embed.W_E"] = params["embed.W_E"][run]
    state["unembed.W_U"] = params["unembed.W_U"][run]
    dp = cfg.heads("dp")
    for l, width in enumerate(cfg.layer("ffn_width")):
        a = f"blocks.{l}.attn."
        state[a + "W_Q"] = params[a + "W_Q"][run] * dp[l].to(dtype).view(-1, 1, 1)
        for name in ("W_K", "W_V", "W_O"):
            state[a + name] = params[a + name][run]
        if width:
            m = f"blocks.{l}.mlp."
            for name in ("W_in", "b_in", "W_out", "b_out"):
                padded = state[m + name]
                value = params[m + name][run]
                padded[tuple(slice(0, n) for n in value.shape)] = value  # FFN width < d_mlp: zero-padded
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(state[name])


def to_hooked_transformer(
    cfg: tf.TransformerConfig,
    params: tf.Params,
    run: int = 0,
    n_ctx: int = 1024,
    tokenizer: TextTokenizer | None = None,
) -> Any:
    """A TransformerLens ``HookedTransformer`` equal to run ``run`` of the general transformer ``(cfg, params)``
    (discrete tokens, every layer with a residual); ``n_ctx``: the longest input it accepts; ``tokenizer``: a text
    run's (:mod:`inductionlab.tasks.text`), None for synthetic tokens (:func:`hf_tokenizer`).  Its logits are ours
    at every position (``readout="all"``; with ``readout="last"`` ours is its last position)."""
    require(cfg.vocab > 0, "model.vocab", "only discrete tokens map to TransformerLens (real-valued tokens do not)")
    require(all(cfg.layer("residual")), "model.residual", "TransformerLens blocks always add a residual stream")
    S = params["embed.W_E"].shape[0]
    require(0 <= run < S, "run", f"must lie in 0..{S - 1}, got {run}")
    tl = transformer_lens()
    widths = cfg.layer("ffn_width")
    d_mlp = max(widths)
    dtype = params["embed.W_E"].dtype
    tl_cfg = tl.HookedTransformerConfig(
        n_layers=cfg.n_layers,
        d_model=cfg.d_model,
        n_ctx=n_ctx,
        d_head=cfg.K,
        n_heads=cfg.n_heads,
        d_vocab=cfg.vocab,
        d_vocab_out=cfg.out_dim,
        d_mlp=d_mlp if d_mlp else None,
        attn_only=d_mlp == 0,
        act_fn="relu" if d_mlp else None,
        normalization_type=None,
        use_attn_scale=cfg.scale,
        positional_embedding_type="standard",
        dtype=dtype,
        device="cpu",
        default_prepend_bos=False,  # trained without a BOS token
    )
    with warnings.catch_warnings():  # 3.x announces HookedTransformer's removal in 4.0; the extra pins < 4
        warnings.filterwarnings("ignore", "HookedTransformer is deprecated", DeprecationWarning)
        model = tl.HookedTransformer(tl_cfg)
    _copy_weights(model, cfg, params, run)
    rpe, key_start = cfg.heads("rpe"), cfg.layer("key_start")
    for l in range(cfg.n_layers):
        slopes = params[f"blocks.{l}.attn.p"][run].detach()
        model.blocks[l].attn.hook_attn_scores.add_perma_hook(_scores_hook(cfg, slopes, rpe[l], key_start[l]))
    model.set_tokenizer(hf_tokenizer(tokenizer, cfg.vocab))
    return model
