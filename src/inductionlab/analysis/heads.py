"""Induction-head diagnostics on attention patterns, compatible with TransformerLens's ``head_detector``
(Olsson et al. 2022; Elhage et al. 2021), plus the prefix-matching score and a linear probe (Wang et al.
Fig. 3, docs/conventions.md#wang-6-4).

Detection patterns (L, L), query rows i, key columns j (0-indexed), as in TransformerLens:

* previous token — 1 at j = i − 1;
* duplicate token — 1 at j < i with token_j = token_i;
* induction — 1 at 1 ≤ j ≤ i with token_{j−1} = token_i (the token after an earlier copy of the current one).

Scores of a pattern A against a detection pattern P, per sequence, then averaged over the batch:

* ``"mul"`` (TransformerLens's default): Σ A⊙P / Σ A — the share of attention on the detected keys, the plain
  ratio as there: where no attention is left (Σ A = 0, e.g. all of it on key 0 with ``exclude_bos``) it is
  0/0 = NaN, which is what TransformerLens returns;
* ``"abs"``: 1 − Σ|A − P| / L — TransformerLens's other measure (without its rounding to 3 decimals).

``exclude_bos`` zeroes key column 0 and ``exclude_current_token`` the diagonal, as there.  ``rows="all"`` (the
default) is TransformerLens's form.  ``rows="matched"`` (not in TransformerLens) scores only query rows whose
detection row has a target: with strictly causal heads (docs/conventions.md#wang-1) a row without any target
cannot be matched, so the TransformerLens form caps an ideal duplicate or induction head below 1 on sequences
where some tokens have no earlier copy.  The experiments' diagnostics (:func:`score_columns`) use ``matched``.

Patterns follow :func:`inductionlab.models.transformer.forward` (cache ``blocks.{l}.attn.hook_pattern``, the
TransformerLens name): (S, B, H, L, L) per layer.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from inductionlab.config import require
from inductionlab.models import transformer as tf

HeadName = Literal["previous_token", "duplicate_token", "induction"]
HEAD_NAMES: tuple[HeadName, ...] = ("previous_token", "duplicate_token", "induction")


def _same_token(tokens: torch.Tensor) -> torch.Tensor:
    """(B, L, L) bool: token_i == token_j, for integer tokens (B, L) or real tokens (B, L, d)."""
    if tokens.is_floating_point():
        return (tokens.unsqueeze(-2) == tokens.unsqueeze(-3)).all(-1)
    return tokens.unsqueeze(-1) == tokens.unsqueeze(-2)


def detection_pattern(tokens: torch.Tensor, head: HeadName) -> torch.Tensor:
    """The 0/1 detection pattern (B, L, L) of ``head`` for tokens (B, L) or (B, L, d)."""
    require(head in HEAD_NAMES, "head", f"must be one of {HEAD_NAMES}, got {head!r}")
    B, L = tokens.shape[:2]
    if head == "previous_token":
        return torch.diag(torch.ones(L - 1), -1).expand(B, L, L).clone()
    duplicate = (_same_token(tokens) & torch.ones(L, L, dtype=torch.bool).tril(-1)).float()
    if head == "duplicate_token":
        return duplicate
    shifted = torch.zeros_like(duplicate)
    shifted[:, :, 1:] = duplicate[:, :, :-1]  # key j marks token_{j−1} == token_i
    return shifted.tril()


def attention_score(
    pattern: torch.Tensor,
    detection: torch.Tensor,
    measure: Literal["mul", "abs"] = "mul",
    exclude_bos: bool = False,
    exclude_current_token: bool = False,
    rows: Literal["all", "matched"] = "all",
) -> torch.Tensor:
    """Score of attention patterns (..., B, H, L, L) against detection patterns (B, L, L): (..., H), the
    batch mean of the per-sequence TransformerLens score."""
    require(measure in ("mul", "abs"), "measure", f"must be 'mul' or 'abs', got {measure!r}")
    require(rows in ("all", "matched"), "rows", f"must be 'all' or 'matched', got {rows!r}")
    L = pattern.shape[-1]
    keep = torch.ones(L, L, dtype=pattern.dtype)
    if exclude_bos:
        keep[:, 0] = 0
    if exclude_current_token:
        keep.fill_diagonal_(0)
    det = detection.to(pattern.dtype).unsqueeze(-3)  # (B, 1, L, L)
    row_mask = (det.sum(-1, keepdim=True) > 0).to(pattern.dtype) if rows == "matched" else torch.ones_like(det[..., :1])
    if measure == "mul":  # Σ a·det / Σ a with a = pattern·keep·row_mask, one temporary of the pattern's size
        weight = keep * row_mask  # (B, 1, L, L)
        plain = not exclude_bos and not exclude_current_token and rows == "all"
        score = (pattern * (weight * det)).sum((-1, -2)) / (
            pattern.sum((-1, -2)) if plain else (pattern * weight).sum((-1, -2))
        )
    else:
        n_rows = row_mask.sum((-1, -2)).clamp_min(1)
        score = 1 - ((pattern - det).abs() * keep * row_mask).sum((-1, -2)) / n_rows
    return score.mean(-2)


def prefix_matching_score(pattern: torch.Tensor, period: int) -> torch.Tensor:
    """Mean attention from position i ≥ period to i − period + 1 (the token after the previous copy of the
    current token) on sequences that repeat with period ``period``: (..., B, H, L, L) → (..., H)."""
    L = pattern.shape[-1]
    require(2 <= period < L, "period", f"must be in 2..{L - 1}, got {period}")
    return pattern.diagonal(-(period - 1), -2, -1)[..., 1:].mean((-1, -3))


def head_scores(
    cfg: tf.TransformerConfig,
    params: tf.Params,
    tokens: torch.Tensor,
    period: int,
    measure: Literal["mul", "abs"] = "mul",
    rows: Literal["all", "matched"] = "all",
    cache: dict[str, torch.Tensor] | None = None,
) -> dict[str, torch.Tensor]:
    """All diagnostics of every head on repeated sequences: name → (S, n_layers, H) for previous_token,
    duplicate_token, induction (scored on ``rows``, see :func:`attention_score`) and prefix_matching.
    ``cache``: that of a ``tf.forward(..., keep=True)`` already made on ``tokens`` with ``params`` (no hooks), so the
    patterns are not computed twice."""
    if cache is None:
        x = tokens.unsqueeze(0)
        dtype = next(iter(params.values())).dtype
        with torch.no_grad():
            _, cache = tf.forward(cfg, params, x if cfg.vocab else x.to(dtype), keep=True)
    patterns = torch.stack(
        [cache[f"blocks.{l}.attn.hook_pattern"] for l in range(cfg.n_layers)], 1
    )  # (S, nl, B, H, L, L)
    out: dict[str, torch.Tensor] = {
        name: attention_score(patterns, detection_pattern(tokens, name), measure, rows=rows) for name in HEAD_NAMES
    }
    out["prefix_matching"] = prefix_matching_score(patterns, period)
    return out


def probe_distance(features: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Normalised linear-probe residual min_P ‖Y − F P‖²_F / ‖Y‖²_F for features F (..., N, D) and targets
    Y (..., N, k), P (D, k) shared over the N rows, fitted by least squares (docs/conventions.md#wang-6-4,
    docs/conventions.md#wang-a11): (...).  NaN where the features are not finite (an overflowing model): there is
    no least-squares fit to report."""
    require(
        features.shape[:-1] == targets.shape[:-1],
        "features",
        f"rows differ: {tuple(features.shape)} vs {tuple(targets.shape)}",
    )
    f64, y64 = features.double(), targets.double()
    finite = torch.isfinite(f64).flatten(-2).all(-1)  # (...)
    solution = torch.linalg.lstsq(torch.where(finite[..., None, None], f64, 0.0), y64, driver="gelsd").solution
    distance = (y64 - f64 @ solution).square().sum((-1, -2)) / y64.square().sum((-1, -2))
    return torch.where(finite, distance, torch.nan)


def score_columns(cfg: tf.TransformerConfig, params: tf.Params, tokens: torch.Tensor) -> dict[str, np.ndarray]:
    """The head diagnostics (S,): previous-token (best layer-1 head), induction and prefix matching (best
    layer-2 head), on repeated random tokens, scored on matched rows (a row with no target cannot be matched)."""
    s = head_scores(cfg, params, tokens, tokens.shape[1] // 2, rows="matched")
    last = cfg.n_layers - 1
    return {
        "previous_token_score": s["previous_token"][:, 0].amax(-1).double().cpu().numpy(),
        "induction_score": s["induction"][:, last].amax(-1).double().cpu().numpy(),
        "prefix_matching_score": s["prefix_matching"][:, last].amax(-1).double().cpu().numpy(),
    }
