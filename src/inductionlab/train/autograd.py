"""The autograd trainer family: a flat parameter matrix θ (S, P) — one row per run — trained on the one loop
(:mod:`inductionlab.train.loop`); used by the general transformer (induction targets and text), the
high-dimensional toy and, staged, the Chen et al. model.

All runs step together: the loss is the sum of the per-run losses, so each run's gradient is its own, and
the optimisers of :mod:`inductionlab.train.optim` (SGD, Adam; per-run learning rates) act on θ in place.
Online data: a fresh batch per step from ``sample(generator)``.  Metrics come from ``evaluate(θ, step)``
on the loop's schedule (every ``eval_every`` steps plus log-spaced points, so early transitions stay
visible).  A run may have several stages, each training a subset of the columns with its own settings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import rng, timing
from inductionlab._runtime import tune_process
from inductionlab.config import check_schedule, require
from inductionlab.runs import RunContext
from inductionlab.train import loop, optim


@dataclass(frozen=True)
class TrainConfig:
    optimizer: Literal["sgd", "adam"] = "adam"  # sgd or adam
    lr: float = 1e-3  # learning rate η
    steps: int = 2000  # training steps
    batch_size: int = 256  # sequences per step
    eval_every: int = 100  # evaluate every this many steps (plus eval_log_points log-spaced steps)
    eval_log_points: int = 20  # extra evaluations at about this many log-spaced steps (0: none)
    checkpoint_every: int = 500  # write a resumable checkpoint every this many steps
    finite_check_every: int = 50  # stop on NaN/inf, checked every this many steps (and at every evaluation)
    adam_beta1: float = 0.9  # Adam β₁ (optimizer adam)
    adam_beta2: float = 0.999  # Adam β₂ (optimizer adam)
    momentum: float = 0.0  # SGD heavy-ball momentum (0: plain SGD)
    clip_norm: float = 0.0  # > 0: each run's gradient is clipped to this Euclidean norm (0: no clipping)
    schedule: Literal["constant", "cosine"] = "constant"  # cosine: lr decays to lr_final_fraction·lr
    lr_final_fraction: float = 0.05  # cosine schedule: the final lr as a fraction of lr
    seed: int = 0  # seed of the batch stream, shared by the runs (not a run axis)

    def __post_init__(self) -> None:
        require(
            self.optimizer in ("sgd", "adam"), "train.optimizer", f"must be 'sgd' or 'adam', got {self.optimizer!r}"
        )
        require(self.lr > 0 and math.isfinite(self.lr), "train.lr", f"must be a finite number > 0, got {self.lr}")
        for name in ("steps", "eval_log_points"):
            require(getattr(self, name) >= 0, f"train.{name}", f"must be an integer ≥ 0, got {getattr(self, name)}")
        for name in ("batch_size", "eval_every", "checkpoint_every", "finite_check_every"):
            require(getattr(self, name) >= 1, f"train.{name}", f"must be an integer ≥ 1, got {getattr(self, name)}")
        require(
            0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1, "train.adam_beta1/adam_beta2", "must lie in [0, 1)"
        )
        require(0 <= self.momentum < 1, "train.momentum", f"must lie in [0, 1), got {self.momentum}")
        require(self.momentum == 0 or self.optimizer == "sgd", "train.momentum", "applies to optimizer 'sgd' only")
        require(
            self.clip_norm >= 0 and math.isfinite(self.clip_norm),
            "train.clip_norm",
            f"must be a finite number ≥ 0 (0: no clipping), got {self.clip_norm}",
        )
        require(
            self.schedule in ("constant", "cosine"),
            "train.schedule",
            f"must be 'constant' or 'cosine', got {self.schedule!r}",
        )
        require(0 < self.lr_final_fraction <= 1, "train.lr_final_fraction", "must lie in (0, 1]")
        check_schedule("train.steps", self.steps, "train.eval_every", self.eval_every)

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


Loss = Callable[[torch.Tensor, Any], torch.Tensor]  # (θ (S, P), batch) → per-run losses (S,)
Sample = Callable[[torch.Generator], Any]  # generator → batch
Evaluate = Callable[[torch.Tensor, int], dict[str, np.ndarray]]  # (θ, step) → metric columns, one value per run


@dataclass(frozen=True)
class StageSpec:
    """One stage of an autograd run: its settings and the 0/1 mask (P,) of the columns it trains (None: all)."""

    name: str
    cfg: TrainConfig
    trainable: torch.Tensor | None = None


class AutogradStepper:
    """θ (S, P), one optimiser state per stage, one data generator (from the first stage's ``seed``).  ``lr``: one
    learning rate per run (S,) for every stage, or None: each stage's ``cfg.lr``."""

    def __init__(
        self,
        specs: Sequence[StageSpec],
        theta0: torch.Tensor,
        loss: Loss,
        sample: Sample,
        evaluate: Evaluate,
        lr: torch.Tensor | None,
        hint: str,
        model: dict | None = None,
    ):
        self.specs, self.loss, self.sample, self.evaluate_fn, self.lr, self.hint = (
            list(specs),
            loss,
            sample,
            evaluate,
            lr,
            hint,
        )
        self.model = model
        self.stages = [
            loop.Stage(
                s.name,
                s.cfg.steps,
                s.cfg.eval_every,
                s.cfg.eval_log_points,
                s.cfg.checkpoint_every,
                s.cfg.finite_check_every,
            )
            for s in self.specs
        ]
        self.theta = theta0.detach().clone()
        self.gen = rng.generator(self.specs[0].cfg.seed)
        self.opt: optim.OptimState | None = None
        self.current = 0

    @property
    def params(self) -> torch.Tensor:
        return self.theta

    def begin_stage(self, index: int, resumed: bool) -> None:
        spec, theta = self.specs[index], self.theta
        self.current = index
        if not resumed:
            self.opt = optim.new_state(
                spec.cfg.optimizer, theta, (spec.cfg.adam_beta1, spec.cfg.adam_beta2), momentum=spec.cfg.momentum
            )
        lr = torch.full((theta.shape[0],), spec.cfg.lr) if self.lr is None else self.lr
        self.lr_mask = lr.view(-1, 1).to(theta.device, theta.dtype)
        self.moving: torch.Tensor | None = None
        if spec.trainable is not None:
            self.moving = spec.trainable.to(theta.device, theta.dtype)  # (P,) 0/1
            self.lr_mask = self.lr_mask * self.moving

    def end_stage(self, index: int) -> None: ...

    def step(self, step: int, tensors: dict[str, Any]) -> None:
        cfg, theta = self.specs[self.current].cfg, self.theta
        theta.requires_grad_(True)
        with timing.section("data"):
            batch = self.sample(self.gen)
        losses = self.loss(theta, batch)  # (S,)
        losses.sum().backward()
        tensors["loss"] = losses.detach()
        grad, theta.grad = theta.grad, None
        theta.requires_grad_(False)
        assert grad is not None  # backward() of losses that depend on theta has filled theta.grad
        assert self.opt is not None  # begin_stage or load_state_dict has set it
        if cfg.clip_norm > 0:  # the norm of the columns that move: frozen ones (``moving`` 0) do not count
            optim.clip_rows(grad if self.moving is None else grad.mul_(self.moving), cfg.clip_norm)
        optim.step(
            theta, grad, self.lr_mask * cfg.lr_factor(step) if cfg.schedule != "constant" else self.lr_mask, self.opt
        )
        tensors["grad"] = grad

    def evaluate(self, step: int) -> dict[str, np.ndarray]:
        S = self.theta.shape[0]
        with torch.no_grad():
            row = self.evaluate_fn(self.theta, step)
        stage = {"stage": np.full(S, self.current)} if len(self.specs) > 1 else {}
        return {"run": np.arange(S), "step": np.full(S, step), **stage, **row}

    def at_boundary(self) -> bool:
        return True

    def state_dict(self) -> dict:
        model = {"model": self.model} if self.model is not None else {}
        return {"theta": self.theta, "opt": self.opt, "gen": self.gen.get_state(), **model}

    def load_state_dict(self, state: dict) -> None:
        self.theta, self.opt = state["theta"], state["opt"]
        self.gen.set_state(state["gen"])


def to_device(batch: Any, device: torch.device) -> Any:
    """A batch — a tensor, or a tuple / list / NamedTuple of them — on ``device`` (``docs/conventions.md#devices``)."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(b, device) for b in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(b, device) for b in batch)
    return batch


def train(
    cfg: TrainConfig | Sequence[StageSpec],
    theta0: torch.Tensor,
    loss: Loss,
    sample: Sample,
    evaluate: Evaluate,
    ctx: RunContext = RunContext(threads=1),
    lr: Sequence[float] | None = None,
    trainable: torch.Tensor | None = None,
    hooks: Sequence[loop.Hook] = (),
    desc: str = "train",
    hint: str = "Lower train.lr.",
    model: dict | None = None,
) -> tuple[torch.Tensor, pd.DataFrame]:
    """Train S runs from θ0 (S, P); returns the final θ and the metrics table (columns run, step — and stage when
    there are several — and whatever ``evaluate`` returns, one value per run).

    ``cfg``: one :class:`TrainConfig` (one stage training the columns ``trainable`` marks, default all), or a list
    of :class:`StageSpec`.  ``loss(θ, batch)`` gives the per-run losses (S,); ``ctx.threads`` torch threads (1
    suits tiny models; large matrix products gain from more); ``hint``: what the NaN/inf message suggests.
    Ctrl-C or SIGTERM raises :class:`~inductionlab.train.loop.Interrupted` (a NaN/inf,
    :class:`~inductionlab.train.loop.NonFiniteError`) whose ``metrics`` holds the table measured so far.
    ``model``: what θ is — ``{"family": "transformer", "config": cfg}`` (θ packed by :func:`pack` from the family's
    parameter dict in its own order), kept in every checkpoint so that :func:`inductionlab.load_model` can rebuild
    the model from the run (docs/models.md)."""
    tune_process(ctx.threads)
    specs = [StageSpec("train", cfg, trainable)] if isinstance(cfg, TrainConfig) else list(cfg)
    S = theta0.shape[0]
    lr_t = None if lr is None else torch.as_tensor(lr, dtype=theta0.dtype)
    require(lr_t is None or (lr_t.shape == (S,) and bool((lr_t > 0).all())), "lr", f"need {S} positive learning rates")
    for spec in specs:
        require(
            spec.trainable is None or spec.trainable.shape == theta0.shape[1:],
            "trainable",
            f"needs one 0/1 entry per column ({theta0.shape[1]})",
        )
    dev = torch.device(ctx.device)
    on_device = sample if dev.type == "cpu" else (lambda g: to_device(sample(g), dev))
    stepper = AutogradStepper(
        specs, theta0.to(dev), loss, on_device, evaluate, None if lr_t is None else lr_t.to(dev), hint, model
    )
    metrics = loop.run(stepper, ctx, hooks, desc=desc)
    return stepper.theta, metrics
