"""The mixed 4-gram + in-context 2-gram target (Wang, Yu, E, Wu; dynamics paper eq. 2, docs/conventions.md#wang-5-1).

    f*(X) = ( α*/(1+α*) · x_{L-2},  1/(1+α*) · Σ_{s=2}^{L-1} x_s softmax_s(w*² x_L x_{s-1}) )

Scalar tokens, i.i.d. N(0, 1) ("gaussian") or Unif{±1} ("boolean", workshop Fig. 3).  The key range
s = 2..L-1 follows docs/conventions.md#wang-a1.  Tensors use the token-major layout (S, L, B) of :mod:`inductionlab.ops`;
positions are 1-indexed in the docs and 0-indexed in code (x_s is ``x[:, s-1]``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from inductionlab.config import require
from inductionlab.ops import abs_bound, needs_shift, softmax_average

Tokens = Literal["gaussian", "boolean"]


@dataclass(frozen=True)
class MixedTaskConfig:
    """Mixed-target parameters. ``L ≥ 5`` so that x_{L-2} and at least two keys exist."""

    alpha_star: float = 1.0  # α*: the 4-gram part x_{L−2} weighs α*/(1+α*), the in-context 2-gram 1/(1+α*) (wang-5-1)
    w_star: float = 0.49  # w*: the induction part's score softmax_s(w*² x_L x_{s−1}); the closed form needs w* < 1/√2
    L: int = 40  # sequence length L (tokens x_1..x_L), ≥ 5
    tokens: Tokens = "gaussian"  # token law: gaussian N(0, 1), or boolean uniform on {±1} (workshop Fig. 3)

    def __post_init__(self) -> None:
        require(
            self.alpha_star > 0 and math.isfinite(self.alpha_star),
            "task.alpha_star",
            f"must be a finite number > 0, got {self.alpha_star}",
        )
        require(
            self.w_star > 0 and math.isfinite(self.w_star),
            "task.w_star",
            f"must be a finite number > 0, got {self.w_star}",
        )
        require(self.L >= 5, "task.L", f"must be an integer ≥ 5 (the target needs x_(L-2) and two keys), got {self.L}")


@dataclass(frozen=True)
class MixedTarget:
    """Per-run target parameters on the run axis: α* and w* of shape (S,), with cached derived columns."""

    alpha_star: torch.Tensor  # (S,)
    w_star: torch.Tensor  # (S,)
    L: int
    tokens: Tokens = "gaussian"
    gh_star: torch.Tensor = field(init=False, repr=False, compare=False)  # the caches __post_init__ sets
    c_star: torch.Tensor = field(init=False, repr=False, compare=False)
    c_star_max: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        require(
            self.alpha_star.shape == self.w_star.shape and self.alpha_star.dim() == 1,
            "target",
            "alpha_star and w_star must be 1-D tensors of the same length (one entry per run)",
        )
        cached = {
            "gh_star": torch.stack((self.g_star, self.h_star), 1).unsqueeze(-1),  # (S, 2, 1)
            "c_star": self.w_star**2,
            "c_star_max": float(self.w_star.max()) ** 2,
        }
        for name, value in cached.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_config(cls, cfg: MixedTaskConfig, n_runs: int, dtype: torch.dtype = torch.float32) -> MixedTarget:
        ones = torch.ones(n_runs, dtype=dtype)
        return cls(cfg.alpha_star * ones, cfg.w_star * ones, cfg.L, cfg.tokens)

    @classmethod
    def per_run(
        cls,
        alpha_star: Sequence[float],
        w_star: Sequence[float],
        L: int,
        tokens: Tokens = "gaussian",
        dtype: torch.dtype = torch.float32,
    ) -> MixedTarget:
        for a, w in zip(alpha_star, w_star, strict=True):
            MixedTaskConfig(alpha_star=a, w_star=w, L=L, tokens=tokens)  # validates each run
        return cls(torch.tensor(alpha_star, dtype=dtype), torch.tensor(w_star, dtype=dtype), L, tokens)

    @property
    def n_runs(self) -> int:
        return self.alpha_star.shape[0]

    @property
    def g_star(self) -> torch.Tensor:
        """Optimal 4-gram value weight α*/(1+α*), (S,)."""
        return self.alpha_star / (1 + self.alpha_star)

    @property
    def h_star(self) -> torch.Tensor:
        """Optimal induction-head value weight 1/(1+α*), (S,)."""
        return 1 / (1 + self.alpha_star)

    def select_runs(self, runs: torch.Tensor) -> MixedTarget:
        """The runs ``runs`` (indices) alone, in that order."""
        return MixedTarget(self.alpha_star[runs], self.w_star[runs], self.L, self.tokens)

    def repeat_runs(self, k: int) -> MixedTarget:
        """Each run repeated k times in a row (S·k runs), to match a (S, k, L, B) block of batches."""
        return MixedTarget(self.alpha_star.repeat_interleave(k), self.w_star.repeat_interleave(k), self.L, self.tokens)


def sample_tokens(out: torch.Tensor, generators: Sequence[torch.Generator], tokens: Tokens) -> torch.Tensor:
    """Fill ``out`` (S, L, B) in place with i.i.d. tokens, run r drawn from ``generators[r]``."""
    require(
        out.shape[0] == len(generators),
        "generators",
        f"need one per run: {out.shape[0]} runs, {len(generators)} generators",
    )
    for run, gen in enumerate(generators):
        if tokens == "gaussian":
            out[run].normal_(generator=gen)
        else:
            out[run].bernoulli_(0.5, generator=gen).mul_(2).sub_(1)
    return out


def new_tokens(
    n_runs: int,
    L: int,
    batch: int,
    generators: Sequence[torch.Generator],
    tokens: Tokens,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """A fresh (S, L, B) token tensor."""
    return sample_tokens(torch.empty(n_runs, L, batch, dtype=dtype), generators, tokens)


def mixed_target(
    x: torch.Tensor, target: MixedTarget, x_bound: float | None = None, scores: torch.Tensor | None = None
) -> torch.Tensor:
    """The two target coordinates for tokens x (S, L, B): (S, 2, B) = (4-gram, induction head).

    ``scores`` may pass in x_L·x_{s-1} (S, L-2, B) when the caller has it already.
    """
    L = x.shape[1]
    require(L == target.L, "x", f"has {L} positions but the target was built for L = {target.L}")
    bound = abs_bound(x) if x_bound is None else x_bound
    if scores is None:
        scores = x[:, L - 1 : L] * x[:, 0 : L - 2]  # x_L x_{s-1}, s = 2..L-1
    ih, _, _ = softmax_average(target.c_star, scores, x[:, 1 : L - 1], needs_shift(bound * bound * target.c_star_max))
    return target_columns(x, ih, target)


def target_columns(x: torch.Tensor, ih: torch.Tensor, target: MixedTarget) -> torch.Tensor:
    """Stack (α*/(1+α*) x_{L-2}, 1/(1+α*) IH_2(x)) into (S, 2, B) from the raw induction-head average."""
    four_gram = x[:, x.shape[1] - 3].expand_as(ih)  # x may be shared by all runs (S = 1)
    return torch.stack((four_gram, ih), 1) * target.gh_star
