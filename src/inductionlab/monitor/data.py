"""Training data that forms an induction head fast (docs/monitor.md#a-head-in-a-minute): windows of random tokens,
each sequence repeating a window of its own length, so that no fixed offset copies it and only looking back at the
previous occurrence of the current token predicts the next one.  A torch ``Dataset`` for any trainer, and a
``datasets.Dataset`` for a ``transformers.Trainer`` that wants one."""

from __future__ import annotations

import math
from typing import Any

import torch

from inductionlab import rng
from inductionlab.config import require
from inductionlab.extras import require as require_extra


def repeated_window_tokens(
    vocab: int, L: int, periods: tuple[int, int], shape: tuple[int, ...], gen: torch.Generator, shuffled: bool = False
) -> torch.Tensor:
    """Token ids (*shape, L): each sequence a window of k random tokens of ``vocab`` (k uniform on ``periods``)
    repeated to fill L; ``shuffled``: each repeat shows its window in an order of its own, so that a token recurs but
    what follows it does not — nothing for an induction head to predict (the negative control)."""
    n, (lo, hi) = math.prod(shape), periods
    k = torch.randint(lo, hi + 1, (n, 1), generator=gen)
    window = torch.randint(vocab, (n, hi), generator=gen)
    pos = torch.arange(L)
    index = (pos % k).expand(n, -1)  # (n, L): the window's token at each position
    if shuffled:
        repeats = -(-L // lo)
        keys = torch.rand(n, repeats, hi, generator=gen).masked_fill(torch.arange(hi) >= k.unsqueeze(-1), math.inf)
        order = keys.argsort(-1)  # (n, repeats, hi): each row's first k entries permute 0..k − 1
        index = order.gather(2, index.unsqueeze(1).expand(-1, repeats, -1)).gather(1, (pos // k).unsqueeze(1))[:, 0]
    return window.gather(1, index).view(*shape, L)


class RepeatedWindows(torch.utils.data.Dataset):
    """``n`` sequences of :func:`repeated_window_tokens` drawn once from ``seed``: item i is ``{"input_ids": (L,),
    "labels": (L,)}`` (the labels are the ids: a causal LM shifts them itself), as a ``transformers.Trainer`` takes
    it.  ``vocab`` ≥ 2 tokens, ``L`` tokens per sequence, periods 2 ≤ low ≤ high < L."""

    def __init__(self, n: int, vocab: int = 64, L: int = 32, periods: tuple[int, int] = (4, 16), seed: int = 0):
        require(isinstance(n, int) and n >= 1, "n", f"must be an integer ≥ 1, got {n!r}")
        require(isinstance(vocab, int) and vocab >= 2, "vocab", f"must be an integer ≥ 2, got {vocab!r}")
        lo, hi = periods
        require(2 <= lo <= hi < L, "periods", f"need 2 ≤ low ≤ high < L = {L}, got {lo},{hi}")
        self.tokens = repeated_window_tokens(vocab, L, (lo, hi), (n,), rng.generator(seed))

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.tokens[i], "labels": self.tokens[i]}

    def to_datasets(self) -> Any:
        """The same sequences as a ``datasets.Dataset`` (columns ``input_ids``, ``labels``, torch format)."""
        datasets = require_extra("datasets", "RepeatedWindows.to_datasets")
        ids = self.tokens.tolist()
        return datasets.Dataset.from_dict({"input_ids": ids, "labels": ids}).with_format("torch")
