"""What the monitor measures and on which tokens (docs/monitor.md#what-it-measures): its configuration, checked
when built, the head scores of attention patterns (Olsson et al. 2022; :mod:`inductionlab.analysis.heads`), and the
levels a score is read between — a uniform head's (chance) and the ideal head's (attainable)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from inductionlab.analysis import heads as H
from inductionlab.config import ConfigError, require

SCORE_NAMES = (*H.HEAD_NAMES, "prefix_matching")
PATTERN_BYTES = 4 * 2**30  # a measurement's attention patterns in float64: n_layers · H · batch · L² · 8 bytes at most


def pattern_bytes(units: int, batch: int, length: int) -> int:
    """Bytes of ``units`` (layers × heads) attention patterns (batch, L, L) in float64."""
    return units * batch * length * length * 8


def memory_check(units: int, batch: int, period: int, repeats: int, what: str) -> None:
    """Refuse a measurement whose float64 attention patterns exceed :data:`PATTERN_BYTES`, saying the largest
    period that fits."""
    need = pattern_bytes(units, batch, period * repeats)
    if need > PATTERN_BYTES:
        longest = math.isqrt(PATTERN_BYTES // (units * batch * 8))
        raise ConfigError(
            f"period: period · repeats = {period * repeats} tokens need {what} · batch · L² · 8 bytes = "
            f"{need / 2**30:.3g} GiB of attention patterns (float64), over the monitor's {PATTERN_BYTES / 2**30:.0f} "
            f"GiB; with {what} = {units}, batch {batch} and repeats {repeats}, period ≤ {longest // repeats}"
        )


def _integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class MonitorConfig:
    """What the monitor measures and how often (docs/monitor.md#what-it-measures)."""

    every: int = 50  # measure every this many training steps (and at step 0 / the first call)
    batch: int = 16  # repeated-random-token sequences per measurement
    period: int = 25  # tokens of the first copy (sequence = the copy repeated `repeats` times)
    repeats: int = 2  # copies in each sequence (≥ 2: the later ones can be copied from the earlier)
    vocab: int = 0  # tokens drawn from ids below this; 0: the model's vocabulary size
    seed: int = 0  # the fixed measurement tokens come from rng.generator(seed, "held-out")
    icl_early: int = 10  # the in-context-learning score (Olsson et al.) is the loss at icl_late minus at icl_early
    icl_late: int = 45  # the later token index of that score (within the held-out sequences, < their length)
    threshold: float = 0.3  # an induction head once its fitted score reaches this, relative: 0 chance, 1 attainable
    min_rise: float = 0.2  # a fitted rise of the best head's relative score of at most this: no phase change (NaN)
    min_loss_drop: float = 0.1  # nats: a fitted fall of loss_repeated of at most this: no loss drop (NaN)
    confirm: int = 2  # the live decision waits for this many measurements at or above threshold

    def __post_init__(self) -> None:
        for name in ("every", "batch", "period", "repeats", "vocab", "seed", "icl_early", "icl_late", "confirm"):
            value = getattr(self, name)
            require(_integer(value), name, f"must be an integer, got {value!r} ({type(value).__name__})")
        for name in ("every", "batch", "confirm"):
            require(getattr(self, name) >= 1, name, f"must be an integer ≥ 1, got {getattr(self, name)}")
        require(self.period >= 2, "period", f"must be ≥ 2 (a copy of at least two tokens), got {self.period}")
        require(self.repeats >= 2, "repeats", f"must be ≥ 2 (a copy needs an original), got {self.repeats}")
        require(self.vocab == 0 or self.vocab >= 2, "vocab", f"must be 0 (the model's) or ≥ 2, got {self.vocab}")
        require(self.icl_early >= 1, "icl_early", f"must be ≥ 1 (token 0 has no prediction), got {self.icl_early}")
        require(self.icl_late > self.icl_early, "icl_late", f"must be > icl_early = {self.icl_early}")
        ok = isinstance(self.threshold, numbers.Real) and not isinstance(self.threshold, bool)
        require(ok and 0 < self.threshold <= 1, "threshold", f"must be a number in (0, 1], got {self.threshold!r}")
        for name in ("min_rise", "min_loss_drop"):
            value = getattr(self, name)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            require(ok and value >= 0, name, f"must be a number ≥ 0, got {value!r}")
        memory_check(1, self.batch, self.period, self.repeats, "one head")

    @property
    def length(self) -> int:
        """Tokens per measurement sequence: period · repeats."""
        return self.period * self.repeats


def head_scores(patterns: Sequence[torch.Tensor], tokens: torch.Tensor, period: int) -> dict[str, np.ndarray]:
    """Score name → (n_layers, H) float64 for attention patterns [(B, H, L, L) per layer] on tokens (B, L) that
    repeat with period ``period``: TransformerLens's form for the three detection patterns, plus prefix matching."""
    stacked = torch.stack([p.detach().to("cpu", torch.float64) for p in patterns])  # (n_layers, B, H, L, L)
    out: dict[str, np.ndarray] = {"prefix_matching": H.prefix_matching_score(stacked, period).numpy()}
    for name in H.HEAD_NAMES:
        out[name] = H.attention_score(stacked, H.detection_pattern(tokens, name)).numpy()
    return out


def chance_scores(tokens: torch.Tensor, period: int) -> dict[str, float]:
    """Score name → the score of a head attending uniformly to the keys j ≤ i on the same tokens (B, L): the level
    a head scores without looking at the tokens (docs/monitor.md#chance-levels), e.g. previous-token
    (H_L − 1)/L ≈ 0.070 at L = 50."""
    B, L = tokens.shape
    uniform = torch.ones(L, L, dtype=torch.float64).tril()  # (L, L): query rows, key columns j ≤ i
    uniform = (uniform / uniform.sum(-1, keepdim=True)).expand(B, 1, L, L)
    return {name: float(value[0, 0]) for name, value in head_scores([uniform], tokens, period).items()}


def induction_levels(tokens: torch.Tensor, period: int) -> tuple[float, float]:
    """The induction scores of a uniform and of the ideal head on the monitor's tokens (B, L): relative scores 0
    and 1 (docs/monitor.md#chance-levels), for a phase change located from stored tables."""
    return chance_scores(tokens, period)["induction"], attainable_scores(tokens, period)["induction"]


def attainable_scores(tokens: torch.Tensor, period: int) -> dict[str, float]:
    """Score name → the score of the ideal head of that name on the same tokens (B, L): each query row attends
    wholly to the keys its detection pattern marks (spread evenly over them), uniformly where it marks none — the
    most a head can score on these tokens (docs/monitor.md#chance-levels), e.g. induction (repeats − 1)/repeats ≈ 0.5
    on two copies."""
    B, L = tokens.shape
    uniform = torch.ones(L, L, dtype=torch.float64).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    out: dict[str, float] = {}
    for name in H.HEAD_NAMES:
        marked = H.detection_pattern(tokens, name).to(torch.float64)  # (B, L, L)
        rows = marked.sum(-1, keepdim=True)
        ideal = torch.where(rows > 0, marked / rows.clamp_min(1), uniform)  # (B, L, L)
        out[name] = float(H.attention_score(ideal.unsqueeze(1), marked)[0])
    return out
