"""Batches of the toy model (:mod:`inductionlab.train.toy`): tokens with their mixed targets and the model's fixed
keys, a fixed evaluation sample, and the stream of fresh batches drawn a block at a time (optionally by a
prefetch thread)."""

from __future__ import annotations

import math
import queue
import threading

import torch

from inductionlab import rng
from inductionlab.models import toy
from inductionlab.ops import abs_bound
from inductionlab.tasks.mixed import MixedTarget, mixed_target, new_tokens, sample_tokens


def make_batch(x: torch.Tensor, target: MixedTarget, layer1: toy.Layer1, a: torch.Tensor | None = None) -> toy.Batch:
    """Tokens x (S or 1, L, B) — or with a block axis, (S, K, L, B), and ``target`` repeated to match (S·K runs) —
    with their mixed targets and, when layer 1 does not train, the model's fixed keys (``a``: frozen layer-1 rows
    (S, L−2, L)).  The ideal keys' scores x_L·x_{s−1} are the target's too, so they are computed once."""
    L = x.shape[-2]
    flat = x.reshape(-1, L, x.shape[-1])
    bound = abs_bound(flat)
    keys, scores = toy.fixed_keys(x, layer1, a)
    ideal_scores = None if scores is None or layer1 != "ideal" else scores.reshape(flat.shape[0], L - 2, -1)
    targets = mixed_target(flat, target, bound, ideal_scores).view((-1,) + x.shape[1:-2] + (2, x.shape[-1]))
    return toy.Batch(x, targets, bound, keys, scores)


def twins(states: list[torch.Tensor], target: MixedTarget, a: torch.Tensor | None) -> list[int]:
    """For each run, the first run that would draw the same batch: the same generator state, target (α*, w*)
    and frozen layer-1 rows ``a`` (S, L−2, L) — a run's own index when none before it does."""
    first: list[int] = []
    for r, state in enumerate(states):
        same = (
            q
            for q in range(r)
            if first[q] == q
            and torch.equal(states[q], state)
            and bool(target.alpha_star[q] == target.alpha_star[r])
            and bool(target.w_star[q] == target.w_star[r])
            and (a is None or torch.equal(a[q], a[r]))
        )
        first.append(next(same, r))
    return first


class EvalSet:
    """Fixed evaluation sample (shared by all runs, drawn from ``eval_seed``) with cached targets."""

    def __init__(self, target: MixedTarget, size: int, seed: int, chunk: int = 8192):
        gen = [rng.generator(seed)]
        self.batches = [
            make_batch(new_tokens(1, target.L, min(chunk, size - start), gen, target.tokens), target, "learned")
            for start in range(0, size, chunk)
        ]
        self.size = size

    def losses(self, theta: torch.Tensor, layer1: toy.Layer1) -> tuple[torch.Tensor, ...]:
        """(loss, loss_G4, loss_IH2, relative standard error of loss_IH2), each (S,)."""
        sums = torch.zeros(3, theta.shape[0], dtype=torch.float64)
        for batch in self.batches:
            st = toy.loss_and_grad(theta, batch, layer1, need_grad=False, per_sample=True)
            per_sample = st.partial.double()  # (S, 2, B)
            sums[:2] += per_sample.sum(-1).T
            sums[2] += per_sample[:, 1].square().sum(-1)
        g4, ih, ih2 = sums / self.size
        rse = torch.sqrt(torch.clamp(ih2 - ih * ih, min=0) / self.size) / ih
        return g4 + ih, g4, ih, rse


class BatchStream:
    """Fresh batches for online training, drawn and prepared ``block`` steps at a time.

    Targets (and keys, when layer 1 is fixed) do not depend on the trained parameters, so one batched
    call prepares a whole block; run r's tokens always come from ``generators[r]``, so a batched job
    equals separate runs.  With ``prefetch`` a background thread draws the next blocks while the trainer
    computes (torch releases the GIL inside ops: RNG and compute overlap on two cores); the numbers are
    identical either way.  ``states`` are the generator states at the start of the current block, so a
    checkpoint taken at a block boundary resumes exactly.
    """

    def __init__(
        self,
        target: MixedTarget,
        batch: int,
        gens: list[torch.Generator],
        layer1: toy.Layer1,
        a: torch.Tensor | None,
        align: int,
        prefetch: bool = False,
        block_bytes: int = 4 << 20,
    ):
        S, L = target.n_runs, target.L
        fits = max(1, min(64, block_bytes // (4 * S * L * batch)))
        self.block = math.gcd(1 << (fits.bit_length() - 1), align)  # a power of two dividing the checkpoint interval
        self.shape = (S, self.block, L, batch)
        self.base, self.target = target, target.repeat_runs(self.block)
        self.gens, self.layer1, self.a = gens, layer1, a
        self.k = self.block
        self.prepared: toy.Batch | None = None
        self.states: list[torch.Tensor] | None = None
        self.end_states = [g.get_state() for g in gens]  # where the generators stand after the current block
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if prefetch:
            self._queue = queue.Queue(maxsize=2)
            self._thread = threading.Thread(target=self._produce, daemon=True)
            self._thread.start()

    def _make(self) -> tuple[list[torch.Tensor], list[torch.Tensor], toy.Batch]:
        """The next block: runs that would draw the same tokens (docs/conventions.md#shared-batches) draw them once."""
        start = [g.get_state() for g in self.gens]
        first = twins(start, self.base, self.a)
        unique = sorted(set(first))
        if len(unique) == len(first):
            x = sample_tokens(torch.empty(self.shape), self.gens, self.target.tokens)
            return start, [g.get_state() for g in self.gens], make_batch(x, self.target, self.layer1, self.a)
        x = sample_tokens(
            torch.empty((len(unique), *self.shape[1:])), [self.gens[r] for r in unique], self.target.tokens
        )
        for r, f in enumerate(first):
            if f != r:
                self.gens[r].set_state(self.gens[f].get_state())  # where its own draw would have left it
        own = torch.tensor(unique)
        target = self.base.select_runs(own).repeat_runs(self.block)
        shared = make_batch(x, target, self.layer1, None if self.a is None else self.a[own])
        at = torch.tensor([unique.index(f) for f in first])  # each run's row among the drawn ones
        if len(unique) == 1:  # one batch for all: tokens, keys and scores stay (1, …) and broadcast in the step
            targets = shared.targets.expand(len(first), *shared.targets.shape[1:])
            batch = toy.Batch(shared.x, targets, shared.bound, shared.keys, shared.scores)
        else:
            keys, scores = (None if t is None else t.index_select(0, at) for t in (shared.keys, shared.scores))
            batch = toy.Batch(shared.x[at], shared.targets[at], shared.bound, keys, scores)
        return start, [g.get_state() for g in self.gens], batch

    def _produce(self) -> None:
        assert self._queue is not None  # the thread runs only with prefetch, which makes the queue
        while not self._stop.is_set():
            try:
                item: tuple[list[torch.Tensor], list[torch.Tensor], toy.Batch] | Exception = self._make()
            except Exception as err:  # noqa: BLE001 - handed to the consumer, which raises it
                item = err
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if isinstance(item, Exception):
                return

    def _take(self) -> None:
        item = self._make() if self._queue is None else self._queue.get()
        if isinstance(item, Exception):
            raise item
        (self.states, self.end_states, self.prepared), self.k = item, 0

    def at_block_start(self) -> bool:
        """Whether the next step starts a block; fetches that block, so that ``states`` are its start."""
        if self.k == self.block:
            self._take()
        return self.k == 0

    def next(self) -> toy.Batch:
        self.at_block_start()
        b, k = self.prepared, self.k
        assert b is not None  # at_block_start has fetched a block
        self.k += 1
        return toy.Batch(
            b.x[:, k],
            b.targets[:, k],
            b.bound,
            None if b.keys is None else b.keys[:, k],
            None if b.scores is None else b.scores[:, k],
        )

    def close(self) -> None:
        """Stop the producer and leave the generators just after the current block (as without prefetch)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for g, st in zip(self.gens, self.end_states):
            g.set_state(st)
