"""Ablation, activation patching and direct logit attribution for a trained general transformer
(:mod:`inductionlab.models.transformer`), on its forward hooks (TransformerLens names; docs/conventions.md#mech).

Shapes: S runs, B batch, L positions, H heads per layer, n_layers layers, K = d_head.  Every function works on
all runs of the run axis at once and returns a leading S.

* :func:`head_ablation` — each head's output (``hook_z``) set to zero or to its batch mean, one head at a time:
  the change in the mean per-example loss, over every scored position and over the positions of ``where``
  (e.g. the repeated tokens, where copying is what helps);
* :func:`patch_heads` / :func:`patch_layers` — activation patching: the corrupted input is run with one head's
  output (or one layer's residual stream) at one position taken from the clean run; reported as the share of
  the metric recovered, (m_patched − m_corrupted) / (m_clean − m_corrupted) (1: that activation carries all
  of the difference, 0: none of it);
* :func:`direct_logit_attribution` — each head's direct contribution to the output along a direction (the
  target): z_h W_O,h W_U at the read-out positions, zero for heads whose output does not reach the read-out
  through residual connections (a later layer without a residual overwrites it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import torch

from inductionlab.config import require
from inductionlab.models import transformer as tf

PerExampleLoss = Callable[[torch.Tensor], torch.Tensor]  # model output → losses (S, B) or (S, B, L)
Metric = Callable[[torch.Tensor], torch.Tensor]  # model output → (S,)


def replace_heads(heads: list[int], mode: Literal["zero", "mean"]) -> Callable[[torch.Tensor], torch.Tensor]:
    """A ``hook_z`` hook (S, B, H, L, K) → same: the chosen heads' outputs replaced by zero, or by their mean over
    the batch at each position (:func:`inductionlab.models.transformer.replace_heads`)."""
    require(mode in ("zero", "mean"), "mode", f"must be 'zero' or 'mean', got {mode!r}")
    return lambda z: tf.replace_heads(z, heads, mode)


def _mean(losses: torch.Tensor, where: torch.Tensor | None) -> torch.Tensor:
    """Mean per run (S,) of losses (S, B, ...) over all entries, or over those where ``where`` (B, ...) is true."""
    if where is None:
        return losses.flatten(1).mean(1)
    w = where.to(losses.dtype).expand_as(losses)
    return (losses * w).flatten(1).sum(1) / w.flatten(1).sum(1)


def head_ablation(
    cfg: tf.TransformerConfig,
    params: tf.Params,
    x: torch.Tensor,
    per_example_loss: PerExampleLoss,
    mode: Literal["zero", "mean"] = "zero",
    where: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Loss change of ablating each head alone: {"total": (S, n_layers, H), "where": (S, n_layers, H) (the mean
    over the positions where ``where`` is true; NaN-free only if some are), "base": (S,)}.  ``x``: the model's
    input (1 or S, B, L[, d]); ``per_example_loss``: output → (S, B) or (S, B, L) losses."""
    with torch.no_grad():
        base = per_example_loss(tf.forward(cfg, params, x)[0])
        S = base.shape[0]
        total = torch.zeros(S, cfg.n_layers, cfg.n_heads, dtype=base.dtype)
        masked = torch.zeros_like(total)
        for l in range(cfg.n_layers):
            for h in range(cfg.n_heads):
                hooks = {f"blocks.{l}.attn.hook_z": replace_heads([h], mode)}
                losses = per_example_loss(tf.forward(cfg, params, x, hooks=hooks)[0])
                total[:, l, h] = _mean(losses, None) - _mean(base, None)
                if where is not None:
                    masked[:, l, h] = _mean(losses, where) - _mean(base, where)
    out = {"total": total, "base": _mean(base, None)}
    if where is not None:
        out["where"] = masked
    return out


def _take(clean: torch.Tensor, position: int, head: int | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """A hook writing the clean activation at ``position`` (and ``head``) into the corrupted one."""

    def hook(z: torch.Tensor) -> torch.Tensor:
        z = z.clone()
        if head is None:  # residual stream (S, B, L, D)
            z[:, :, position] = clean[:, :, position]
        else:  # head outputs (S, B, H, L, K)
            z[:, :, head, position] = clean[:, :, head, position]
        return z

    return hook


def _patch(
    cfg: tf.TransformerConfig,
    params: tf.Params,
    clean: torch.Tensor,
    corrupted: torch.Tensor,
    metric: Metric,
    sites: Sequence[tuple[str, int | None]],
) -> torch.Tensor:
    """Share of ``metric`` recovered by patching each site (activation name, head or None) at each position:
    (S, len(sites) · L), sites outer, positions inner."""
    require(
        clean.shape == corrupted.shape,
        "corrupted",
        f"must match clean: {tuple(corrupted.shape)} vs {tuple(clean.shape)}",
    )
    with torch.no_grad():
        out, cache = tf.forward(cfg, params, clean, keep=True)
        m_clean, m_corrupted = metric(out), metric(tf.forward(cfg, params, corrupted)[0])
        got = [
            metric(tf.forward(cfg, params, corrupted, hooks={name: _take(cache[name], i, head)})[0])
            for name, head in sites
            for i in range(clean.shape[2])
        ]
    return (torch.stack(got, 1) - m_corrupted[:, None]) / (m_clean - m_corrupted)[:, None]


def patch_heads(
    cfg: tf.TransformerConfig, params: tf.Params, clean: torch.Tensor, corrupted: torch.Tensor, metric: Metric
) -> torch.Tensor:
    """Share of ``metric`` recovered by patching one head's clean output at one position into the corrupted run:
    (S, n_layers, H, L).  ``clean``, ``corrupted``: inputs of the same shape; ``metric``: output → (S,)."""
    sites = [(f"blocks.{l}.attn.hook_z", h) for l in range(cfg.n_layers) for h in range(cfg.n_heads)]
    return _patch(cfg, params, clean, corrupted, metric, sites).view(-1, cfg.n_layers, cfg.n_heads, clean.shape[2])


def patch_layers(
    cfg: tf.TransformerConfig, params: tf.Params, clean: torch.Tensor, corrupted: torch.Tensor, metric: Metric
) -> torch.Tensor:
    """As :func:`patch_heads` for each layer's residual stream after the layer (``hook_resid_post``) at each
    position: (S, n_layers, L)."""
    sites = [(f"blocks.{l}.hook_resid_post", None) for l in range(cfg.n_layers)]
    return _patch(cfg, params, clean, corrupted, metric, sites).view(-1, cfg.n_layers, clean.shape[2])


def reaches_readout(cfg: tf.TransformerConfig) -> list[bool]:
    """Per layer: whether its attention output reaches the read-out directly (every later layer has a residual)."""
    residual = cfg.layer("residual")
    return [all(residual[l + 1 :]) for l in range(cfg.n_layers)]


def direct_logit_attribution(
    cfg: tf.TransformerConfig, params: tf.Params, x: torch.Tensor, direction: torch.Tensor
) -> torch.Tensor:
    """Each head's direct contribution to the output along ``direction``, averaged over the batch (and the
    read-out positions): (S, n_layers, H).  ``direction``: (B, d_out) for a last-position read-out, (B, L, d_out)
    for ``readout="all"`` — e.g. the target vector, or for tokens a one-hot of the correct next token minus its
    mean (the correct logit against the average logit)."""
    with torch.no_grad():
        _, cache = tf.forward(cfg, params, x, keep=True)
        reach = reaches_readout(cfg)
        out = []
        for l in range(cfg.n_layers):
            z = cache[f"blocks.{l}.attn.hook_z"]  # (S, B, H, L, K)
            if cfg.readout == "last":
                z = z[:, :, :, -1:]
            # per head: z_h W_O,h W_U → (S, B, H, L', d_out)
            per_head = torch.einsum("sbhlk,shkd,sdo->sbhlo", z, params[f"blocks.{l}.attn.W_O"], params["unembed.W_U"])
            d = direction.to(per_head.dtype).view(1, direction.shape[0], 1, -1, direction.shape[-1])
            score = (per_head * d).sum(-1).mean((1, 3))  # (S, H)
            out.append(score if reach[l] else torch.zeros_like(score))
    return torch.stack(out, 1)
