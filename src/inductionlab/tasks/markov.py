"""In-context n-gram Markov chains (Chen, Sheen, Wang, Yang 2024; docs/conventions.md#chen-1).

Each sequence has its own kernel π: [d]^n → Δ([d]), every row drawn from Dirichlet(α·1) (docs/conventions.md#chen-1-2), over a
parent set pa = {−r_1, …, −r_n} given here as the lags ``parents = (r_1, …, r_n)`` (any set, not only
contiguous ones).  The first r_n tokens are uniform (docs/conventions.md#chen-a8: uniform start); then x_l ~ π(· | x_{l−r_1}, …,
x_{l−r_n}).  The input is x_{1:L}, the label x_{L+1}.

Parent states are encoded as z = Σ_i x_{l−r_i} d^{i} (i = 0 for the nearest parent r_1).  Generation is
vectorised over sequences: all kernels are one (B, d^n, d) array and time advances in one inverse-CDF step
per position, never a per-token Python loop over sequences.

Baselines: the Bayes-optimal predictor (Dirichlet–categorical posterior mean, docs/conventions.md#chen-1-4) and, as special
cases of :func:`ngram_estimator`, the in-context bigram (parents (1,)) and unigram (no parents) estimators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from inductionlab import rng
from inductionlab.config import require


@dataclass(frozen=True)
class MarkovConfig:
    """Vocabulary size d (``vocab_size``), parent lags, context length L and Dirichlet concentration α
    (defaults d = 3, pa = {−1, −2}, L = 100, α = 0.1, as the authors' code: docs/conventions.md#chen-1)."""

    vocab_size: int = 3  # vocabulary size d
    parents: tuple[int, ...] = (1, 2)  # parent lags r of pa = {−r_1, …}: token l depends on x_{l−r}, e.g. 1,2
    L: int = 100  # context length L (the label is token L + 1)
    alpha: float = 0.1  # α: Dirichlet concentration of each sequence's kernel π (chen-1)

    def __post_init__(self) -> None:
        require(self.vocab_size >= 2, "task.vocab_size", f"needs at least 2 tokens, got {self.vocab_size}")
        require(
            len(self.parents) >= 1 and all(r >= 1 for r in self.parents),
            "task.parents",
            f"give one or more positive lags (e.g. (1, 2) for pa = {{-1, -2}}), got {self.parents}",
        )
        require(
            list(self.parents) == sorted(set(self.parents)),
            "task.parents",
            f"lags must be strictly increasing, got {self.parents}",
        )
        require(self.L > max(self.parents), "task.L", f"must exceed the largest lag {max(self.parents)}, got {self.L}")
        require(self.alpha > 0, "task.alpha", f"must be > 0, got {self.alpha}")
        require(self.vocab_size ** len(self.parents) <= 1 << 20, "task.parents", "d^n parent states exceed 2^20")


def draw_kernels(cfg: MarkovConfig, n: int, generator: rng.AnyGenerator) -> np.ndarray:
    """n kernels (n, d^n, d): every row π(· | z) ~ Dirichlet(α·1) independently (``generator``: a
    ``torch.Generator``, or numpy's: :func:`inductionlab.rng.as_numpy`)."""
    d = cfg.vocab_size
    return rng.as_numpy(generator).dirichlet(np.full(d, cfg.alpha), size=(n, d ** len(cfg.parents)))


def parent_states(tokens: torch.Tensor, parents: tuple[int, ...], d: int) -> torch.Tensor:
    """z_l (B, m) for positions l = 0..m−1 of tokens (B, m) (0-based): the code of (x_{l−r_1}, …, x_{l−r_n});
    −1 where a parent lies before the start.  With no parents every state is 0 (the unigram case)."""
    B, m = tokens.shape
    z = torch.zeros(B, m, dtype=torch.long)
    for i, r in enumerate(parents):
        z[:, r:] += tokens[:, : m - r] * d**i
    if parents:
        z[:, : max(parents)] = -1
    return z


def sample(
    cfg: MarkovConfig, n: int, generator: rng.AnyGenerator, kernels: np.ndarray | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """n sequences: tokens (n, L + 1) int64 — inputs ``tokens[:, :L]``, labels ``tokens[:, L]`` — and their
    kernels (n, d^n, d) float64, drawn from the prior unless given (``generator``: a ``torch.Generator``, or
    numpy's: :func:`inductionlab.rng.as_numpy`)::

        tokens, kernels = sample(MarkovConfig(vocab_size=5, parents=(1, 3), L=32), 64, rng.generator(0))
    """
    require(n >= 1, "n", f"must be ≥ 1, got {n}")
    generator = rng.as_numpy(generator)
    d, L, parents = cfg.vocab_size, cfg.L, cfg.parents
    kernels = draw_kernels(cfg, n, generator) if kernels is None else kernels
    require(
        kernels.shape == (n, d ** len(parents), d),
        "kernels",
        f"need shape {(n, d ** len(parents), d)}, got {kernels.shape}",
    )
    cdf = np.cumsum(kernels, axis=-1)[..., :-1]  # (n, d^n, d − 1)
    u = generator.random((n, L + 1))
    x = np.empty((n, L + 1), dtype=np.int64)
    start = max(parents)
    x[:, :start] = np.minimum((u[:, :start] * d).astype(np.int64), d - 1)
    rows = np.arange(n)
    weights = d ** np.arange(len(parents))
    for t in range(start, L + 1):
        z = x[:, [t - r for r in parents]] @ weights
        x[:, t] = (u[:, t, None] >= cdf[rows, z]).sum(-1)
    return torch.from_numpy(x), torch.from_numpy(kernels)


def ngram_estimator(inputs: torch.Tensor, parents: tuple[int, ...], d: int, alpha: float) -> torch.Tensor:
    """(N_{z,k} + α)/(N_z + dα) (B, d): counts in x_{1:L} of token k after the parent state z of position
    L + 1.  With the true parents and α this is the Bayes-optimal predictor (docs/conventions.md#chen-1-4); parents (1,) give the
    in-context bigram estimator, () the unigram one."""
    B, L = inputs.shape
    padded = torch.cat([inputs, torch.zeros(B, 1, dtype=inputs.dtype)], 1)  # position L + 1 has no token yet
    z = parent_states(padded, parents, d)
    match = (z[:, :L] == z[:, L:]).to(torch.float64)  # (B, L): positions with the query's parent state
    counts = torch.zeros(B, d, dtype=torch.float64).scatter_add_(1, inputs, match)
    return (counts + alpha) / (counts.sum(-1, keepdim=True) + d * alpha)


def bayes_predictor(cfg: MarkovConfig, inputs: torch.Tensor) -> torch.Tensor:
    """p*(x_{L+1} = · | x_{1:L}) (B, d) under the Dirichlet(α) prior and the true parents."""
    return ngram_estimator(inputs, cfg.parents, cfg.vocab_size, cfg.alpha)


def train_val_split(tokens: torch.Tensor, n_val: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A random split of a finite dataset (docs/conventions.md#chen-1-5: 9000 / 1000): (train, val) rows of ``tokens``."""
    require(0 < n_val < tokens.shape[0], "n_val", f"must lie in 1..{tokens.shape[0] - 1}, got {n_val}")
    perm = torch.randperm(tokens.shape[0], generator=generator)
    return tokens[perm[n_val:]], tokens[perm[:n_val]]


def datasets(
    cfg: MarkovConfig, seeds: tuple[int, ...], n_samples: int, n_val: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """One finite dataset per seed, split by the same seed (docs/conventions.md#chen-1-5: 10 000 sequences, 9000 / 1000, seed
    2024): train (S, n_samples − n_val, L + 1) and val (S, n_val, L + 1)."""
    parts = [train_val_split(sample(cfg, n_samples, rng.numpy_generator(s))[0], n_val, rng.generator(s)) for s in seeds]
    return torch.stack([p[0] for p in parts]), torch.stack([p[1] for p in parts])


def reference_predictors(task: MarkovConfig, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """Bayes, in-context bigram and unigram predictions (S, B, d) for tokens (S, B, L + 1)."""
    inputs = tokens[..., :-1].flatten(0, 1)
    d, shape = task.vocab_size, (*tokens.shape[:2], task.vocab_size)
    return {
        "bayes": bayes_predictor(task, inputs).view(shape),
        "bigram": ngram_estimator(inputs, (1,), d, task.alpha).view(shape),
        "unigram": ngram_estimator(inputs, (), d, task.alpha).view(shape),
    }
