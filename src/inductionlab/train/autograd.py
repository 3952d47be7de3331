"""A generic autograd training loop over a flat parameter matrix θ (S, P) — one row per run — used by the
general transformer (probe, heads-dims) and the high-dimensional toy (adam-vs-gd-highdim).

All runs step together: the loss is the sum of the per-run losses, so each run's gradient is its own, and
the optimisers of :mod:`inductionlab.train.optim` (SGD, Adam; per-run learning rates) act on θ in place.
Online data: a fresh batch per step from ``sample(generator)``.  Metrics come from ``evaluate(θ, step)``
on the schedule of :func:`inductionlab.train.toy.eval_steps` (every ``eval_every`` steps plus log-spaced
points, so early transitions stay visible).

Reliability as in the toy trainer: a checkpoint every ``checkpoint_every`` steps and on Ctrl-C (θ, optimiser
state, generator state, metrics so far), exact resume, and a NaN/inf check that stops with a clear message
and the last good checkpoint kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from inductionlab._runtime import StopFlag, tune_process
from inductionlab.config import require
from inductionlab.runs import load_checkpoint, save_checkpoint
from inductionlab.train import optim
from inductionlab.train.toy import Interrupted, check_finite, eval_steps, metrics_frame


@dataclass(frozen=True)
class TrainConfig:
    optimizer: Literal["sgd", "adam"] = "adam"
    lr: float = 1e-3
    steps: int = 2000
    batch_size: int = 256
    eval_every: int = 100
    eval_log_points: int = 20
    checkpoint_every: int = 500
    finite_check_every: int = 50
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    momentum: float = 0.0  # SGD heavy-ball momentum (0: plain SGD)
    clip_norm: float = 0.0  # > 0: each run's gradient is clipped to this Euclidean norm (0: no clipping)
    schedule: Literal["constant", "cosine"] = "constant"  # cosine: lr decays to lr_final_fraction·lr
    lr_final_fraction: float = 0.05
    seed: int = 0  # data stream

    def __post_init__(self) -> None:
        require(self.optimizer in ("sgd", "adam"), "train.optimizer", f"must be 'sgd' or 'adam', got {self.optimizer!r}")
        require(self.lr > 0 and math.isfinite(self.lr), "train.lr", f"must be a finite number > 0, got {self.lr}")
        for name in ("steps", "eval_log_points"):
            require(getattr(self, name) >= 0, f"train.{name}", f"must be an integer ≥ 0, got {getattr(self, name)}")
        for name in ("batch_size", "eval_every", "checkpoint_every", "finite_check_every"):
            require(getattr(self, name) >= 1, f"train.{name}", f"must be an integer ≥ 1, got {getattr(self, name)}")
        require(0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1, "train.adam_beta1/adam_beta2", "must lie in [0, 1)")
        require(0 <= self.momentum < 1, "train.momentum", f"must lie in [0, 1), got {self.momentum}")
        require(self.momentum == 0 or self.optimizer == "sgd", "train.momentum", "applies to optimizer 'sgd' only")
        require(self.clip_norm >= 0 and math.isfinite(self.clip_norm), "train.clip_norm",
                f"must be a finite number ≥ 0 (0: no clipping), got {self.clip_norm}")
        require(self.schedule in ("constant", "cosine"), "train.schedule", f"must be 'constant' or 'cosine', got {self.schedule!r}")
        require(0 < self.lr_final_fraction <= 1, "train.lr_final_fraction", "must lie in (0, 1]")

    def lr_factor(self, step: int) -> float:
        """The learning-rate multiplier at ``step``."""
        if self.schedule == "constant" or self.steps == 0:
            return 1.0
        f = self.lr_final_fraction
        return f + (1 - f) * 0.5 * (1 + math.cos(math.pi * step / self.steps))


def pack(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Callable[[torch.Tensor], dict[str, torch.Tensor]]]:
    """A dict of (S, ...) tensors → θ (S, P) and a function θ ↦ dict of views (so autograd reaches θ)."""
    names = list(params)
    S = params[names[0]].shape[0]
    shapes = [tuple(params[n].shape[1:]) for n in names]
    sizes = [math.prod(s) for s in shapes]
    theta = torch.cat([params[n].reshape(S, -1) for n in names], 1)

    def views(t: torch.Tensor) -> dict[str, torch.Tensor]:
        return {n: part.view(S, *shape) for n, part, shape in zip(names, t.split(sizes, 1), shapes)}
    return theta, views


def train(cfg: TrainConfig, theta0: torch.Tensor, loss: Callable[[torch.Tensor, Any], torch.Tensor],
          sample: Callable[[torch.Generator], Any], evaluate: Callable[[torch.Tensor, int], dict[str, np.ndarray]],
          lr: Sequence[float] | None = None, checkpoint: Path | None = None, resume: bool = False,
          progress: bool = False, desc: str = "train", trainable: torch.Tensor | None = None, threads: int = 1
          ) -> tuple[torch.Tensor, pd.DataFrame]:
    """Train S runs from θ0 (S, P); returns the final θ and the metrics table (columns run, step and
    whatever ``evaluate`` returns, one value per run).  ``loss(θ, batch)`` gives the per-run losses (S,);
    ``trainable`` (P,) 0/1 marks the columns that move (staged training; default all); ``threads`` torch
    threads (1 suits tiny models; large matrix products gain from more)."""
    tune_process(threads)
    S = theta0.shape[0]
    lr_t = torch.full((S,), cfg.lr) if lr is None else torch.as_tensor(lr, dtype=theta0.dtype)
    require(lr_t.shape == (S,) and bool((lr_t > 0).all()), "lr", f"need {S} positive learning rates")
    lr_mask = lr_t.view(-1, 1).to(theta0.device, theta0.dtype)
    if trainable is not None:
        require(trainable.shape == theta0.shape[1:], "trainable", f"needs one 0/1 entry per column ({theta0.shape[1]})")
        lr_mask = lr_mask * trainable.to(theta0.device, theta0.dtype)
    gen = torch.Generator().manual_seed(cfg.seed)
    state = {"theta": theta0.detach().clone(), "step": 0, "blocks": [], "done": False, "gen": gen.get_state(),
             "opt": optim.new_state(cfg.optimizer, theta0, (cfg.adam_beta1, cfg.adam_beta2), momentum=cfg.momentum)}
    if resume and checkpoint is not None and checkpoint.exists():
        state = load_checkpoint(checkpoint)
    gen.set_state(state["gen"])
    if not state["done"]:
        with StopFlag() as stop, tqdm(total=cfg.steps, initial=state["step"], disable=not progress, desc=desc,
                                      unit="step", mininterval=1.0) as bar:
            moving = None if trainable is None else trainable.to(theta0.device, theta0.dtype)  # (P,) 0/1
            _loop(cfg, state, gen, lr_mask, moving, loss, sample, evaluate, checkpoint, stop, bar)
        state["done"] = True
        _save(checkpoint, state, gen)
    return state["theta"], metrics_frame(state["blocks"])


def _loop(cfg, state, gen, lr_mask, moving, loss, sample, evaluate, checkpoint, stop, bar) -> None:
    theta, opt = state["theta"], state["opt"]
    evals = set(eval_steps(cfg.steps, cfg.eval_every, cfg.eval_log_points).tolist())
    for step in range(state["step"], cfg.steps + 1):
        state["step"] = step
        if step % cfg.finite_check_every == 0 or step == cfg.steps:
            check_finite(theta, f"by step {step}", checkpoint, "Lower train.lr.")
        if stop.raised or (step and step % cfg.checkpoint_every == 0 and step < cfg.steps):
            _save(checkpoint, state, gen)  # before this step's evaluation and update: resume redoes both
            if stop.raised:
                raise Interrupted(f"interrupted at step {step}; checkpoint at {checkpoint}. "
                                  "Run again with --resume to continue exactly.")
        if step in evals:
            with torch.no_grad():
                row = evaluate(theta, step)
            state["blocks"].append({"run": np.arange(theta.shape[0]), "step": np.full(theta.shape[0], step), **row})
        if step == cfg.steps:
            return
        theta.requires_grad_(True)
        loss(theta, sample(gen)).sum().backward()
        grad, theta.grad = theta.grad, None
        theta.requires_grad_(False)
        if cfg.clip_norm > 0:  # the norm of the columns that move: frozen ones (``moving`` 0) do not count
            optim.clip_rows(grad if moving is None else grad.mul_(moving), cfg.clip_norm)
        optim.step(theta, grad, lr_mask * cfg.lr_factor(step) if cfg.schedule != "constant" else lr_mask, opt)
        bar.update(1)


def _save(path: Path | None, state: dict, gen: torch.Generator) -> None:
    if path is not None and bool(torch.isfinite(state["theta"]).all()):
        state["gen"] = gen.get_state()
        save_checkpoint(path, state)
