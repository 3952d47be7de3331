"""Training loop of the toy model (Wang et al., dynamics paper §3.1.3 and appendix B.1).

Online SGD (fresh batch per step), GD on a fixed sample, or Adam; per-run learning rates on the run
axis; layerwise stages (Stage I trains p̃ only, Stage II the five layer-2 parameters) or joint training.
Metrics are measured on a fixed evaluation sample on a schedule of every ``eval_every`` steps plus
log-spaced points, so plateaus and jumps stay visible; time is t = lr × step within a stage.

The toy's step and state run on :mod:`inductionlab.train.loop` (checkpoints, exact resume, Ctrl-C, NaN/inf
stop, hooks); what stays here is what makes it fast: the hand-written (optionally compiled) step, batches drawn
a block at a time by a prefetch thread, and evaluations in a background thread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import rng
from inductionlab._runtime import compiled, tune_process
from inductionlab.config import check_memory, check_schedule, require
from inductionlab.models import toy
from inductionlab.runs import RunContext
from inductionlab.tasks.mixed import MixedTarget, new_tokens
from inductionlab.train import loop, optim
from inductionlab.train.toy_batches import BatchStream, EvalSet, make_batch


@dataclass(frozen=True)
class ToyTrainConfig:
    """Optimiser, stages and measurement of a toy-model run (defaults: the paper, appendix B.1).

    ``stage2_layer1``: "trained" keeps layer 1 as Stage I left it (the literal paper protocol); "ideal"
    trains Stage II on y_s = x_{s-1}, the p̃ → ∞ limit the theory assumes (Lemma 5.3).  At the paper's
    budget Stage I only reaches p̃ ≈ 0.94 (its drift is ≈ 1e-4·e^{-p̃}, docs/conventions.md#wang-5-3), so y_s keeps about 40%
    of its weight off x_{s-1}: L_G4 then has a floor near 20% of its start and the fixed point moves.  The
    default is therefore "ideal"; Stage I is still run and p̃ is reported.

    ``eval_size`` 2^18 keeps the relative standard error of the measured L_IH2 below 1% through every
    phase of the paper run (it peaks at ~0.9% late in the emergence, where L_IH2 ≈ 1e-6).

    ``compile``: the step through ``torch.compile`` (:func:`inductionlab.models.toy.straight_step`;
    1.3–1.7× per step at one run); "auto" compiles when the
    stage has ≥ 20 000 steps (the seconds spent compiling pay off) and ≤ 4 runs (at 32 runs the
    compiled step was measured slower than the eager one beside the prefetch thread).  Checked against eager at
    each new shape; falls back to eager on a disagreement or a compile failure (:class:`inductionlab._runtime.Checked`).
    """

    # sgd: online, a fresh batch each step; gd: full batch on n_samples fixed sequences; adam
    optimizer: Literal["sgd", "gd", "adam"] = "sgd"
    lr: float = 0.1  # learning rate η; time is t = η × step
    batch_size: int = 1000  # sequences per step (sgd and adam)
    n_samples: int = 10_000  # the fixed training sample of optimizer gd (sequences)
    # layerwise: Stage I trains p̃, then Stage II layer 2 (wang-5-3); joint: all six at once, for both budgets
    schedule: Literal["layerwise", "joint"] = "layerwise"
    stage1_steps: int = 100_000  # Stage I steps (layer 1's slope p̃)
    stage2_steps: int = 100_000  # Stage II steps (the five layer-2 parameters)
    # Stage II's layer 1: ideal y_s = x_{s−1} (p̃ → ∞) or as Stage I trained it (the literal protocol)
    stage2_layer1: Literal["trained", "ideal"] = "ideal"
    adam_beta1: float = 0.9  # Adam β₁ (optimizer adam)
    adam_beta2: float = 0.999  # Adam β₂ (optimizer adam)
    eval_size: int = 262_144  # sequences of the fixed evaluation sample on which L_G4 and L_IH2 are measured
    eval_every: int = 2000  # evaluate every this many steps (plus eval_log_points log-spaced steps)
    eval_log_points: int = 40  # extra evaluations at about this many log-spaced steps per stage (0: none)
    eval_seed: int = 2024  # seed of the fixed evaluation sample (not a run axis)
    checkpoint_every: int = 20_000  # write a resumable checkpoint every this many steps
    finite_check_every: int = 100  # stop on NaN/inf, checked every this many steps (and at every evaluation)
    # run the step through torch.compile: auto (long stages, ≤ 4 runs), on or off
    compile: Literal["auto", "on", "off"] = "auto"

    def __post_init__(self) -> None:
        require(self.lr > 0 and math.isfinite(self.lr), "train.lr", f"must be a finite number > 0, got {self.lr}")
        for name in ("batch_size", "n_samples", "eval_size", "eval_every", "checkpoint_every", "finite_check_every"):
            require(getattr(self, name) >= 1, f"train.{name}", f"must be an integer ≥ 1, got {getattr(self, name)}")
        for name in ("stage1_steps", "stage2_steps", "eval_log_points"):
            require(getattr(self, name) >= 0, f"train.{name}", f"must be an integer ≥ 0, got {getattr(self, name)}")
        require(
            0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1, "train.adam_beta1/adam_beta2", "must lie in [0, 1)"
        )
        require(
            not (self.schedule == "joint" and self.stage2_layer1 == "ideal"),
            "train.stage2_layer1",
            "joint training trains layer 1 too, so it needs stage2_layer1='trained'",
        )
        for name in ("stage1_steps", "stage2_steps"):
            check_schedule(f"train.{name}", getattr(self, name), "train.eval_every", self.eval_every)

    def check_sizes(self, L: int, runs: int) -> None:
        """Refuse, naming the key, a batch, sample or evaluation sample of ``runs`` × L-token sequences that cannot
        fit in memory (tokens, keys, scores and targets: ≈ 16 bytes a token and run)."""
        sizes = {
            "batch_size": ("the batch size", self.batch_size),
            "eval_size": ("the evaluation sample", self.eval_size),
        }
        if self.optimizer == "gd":
            sizes["n_samples"] = ("the training sample", self.n_samples)
        for name, (what, n) in sizes.items():
            check_memory(
                f"train.{name}",
                16 * n * L * runs,
                f"{what}, {n} sequences of L = {L} tokens × {runs} run(s),",
                also="task.L" if L > n else "",
            )


@dataclass(frozen=True)
class Stage:
    name: str
    steps: int
    trains: tuple[int, ...]  # parameter columns (models.toy.PARAMS order)
    layer1: toy.Layer1
    wrt: toy.Wrt


def stages_of(cfg: ToyTrainConfig) -> list[Stage]:
    """The stage list: layerwise = [I: p̃ on the learned layer 1, II: layer 2]; joint = one stage, all six."""
    if cfg.schedule == "joint":
        return [Stage("joint", cfg.stage1_steps + cfg.stage2_steps, tuple(range(6)), "learned", "all")]
    layer1: toy.Layer1 = "ideal" if cfg.stage2_layer1 == "ideal" else "learned"
    return [
        Stage("I", cfg.stage1_steps, (toy.P_TILDE,), "learned", "layer1"),
        Stage("II", cfg.stage2_steps, toy.LAYER2, layer1, "layer2"),
    ]


def _eval_row(
    stage: Stage, step: int, lr: torch.Tensor, seeds: Sequence[int], theta: torch.Tensor, evalset: EvalSet
) -> dict[str, np.ndarray]:
    """One block of metric rows: the losses on the evaluation sample and the parameters, per run."""
    losses = evalset.losses(theta, stage.layer1)
    S = theta.shape[0]
    block = {
        "run": np.arange(S),
        "seed": np.asarray(seeds),
        "stage": np.full(S, stage.name),
        "step": np.full(S, step),
        "t": (lr.double() * step).numpy(),
        "loss": losses[0].numpy(),
        "loss_G4": losses[1].numpy(),
        "loss_IH2": losses[2].numpy(),
        "rse_IH2": losses[3].numpy(),
    }
    th = theta.double().numpy()
    for i, name in enumerate(toy.PARAMS):
        block[name] = th[:, i]
    block["w_KQ"] = toy.w_kq(theta.double()).numpy()
    return block


@dataclass
class TrainResult:
    theta: torch.Tensor  # (S, 6) final parameters
    metrics: pd.DataFrame
    p_tilde_after_stage1: np.ndarray  # (S,)


class ToyStepper:
    """The toy's step and state on the loop: θ (S, 6), the optimiser, one data generator per run, and per stage
    the learning-rate mask of the trained columns, the batch source and the gradient function."""

    hint = "Lower train.lr or use a smaller model.sigma_init."

    def __init__(
        self,
        cfg: ToyTrainConfig,
        target: MixedTarget,
        theta0: torch.Tensor,
        seeds: Sequence[int],
        lr: torch.Tensor,
        evaluator: ThreadPoolExecutor | None,
    ):
        self.cfg, self.target, self.seeds, self.lr, self.evaluator = cfg, target, list(seeds), lr, evaluator
        self.toy_stages = stages_of(cfg)
        self.stages = [
            loop.Stage(
                s.name, s.steps, cfg.eval_every, cfg.eval_log_points, cfg.checkpoint_every, cfg.finite_check_every
            )
            for s in self.toy_stages
        ]
        self.evalset = EvalSet(target, cfg.eval_size, cfg.eval_seed)
        self.theta = theta0.clone()
        self.opt: optim.OptimState | None = None
        self.p_tilde_after_stage1: torch.Tensor | None = None
        self.compiled: bool | None = None  # the current stage's step implementation (compiled or eager)
        self.gens = [rng.generator(s) for s in seeds]
        self.stream: BatchStream | None = None
        self.fixed: toy.Batch | None = None
        self.current = 0  # the stage under way (begin_stage)

    @property
    def params(self) -> torch.Tensor:
        return self.theta

    def begin_stage(self, index: int, resumed: bool) -> None:
        cfg, stage, theta = self.cfg, self.toy_stages[index], self.theta
        self.current = index
        S, L = theta.shape[0], self.target.L
        if not resumed:
            self.opt = None
            if index and self.toy_stages[index - 1].name == "I":
                self.p_tilde_after_stage1 = theta[:, toy.P_TILDE].clone()
        self.lr_mask = torch.zeros(S, 6, dtype=theta.dtype)
        self.lr_mask[:, list(stage.trains)] = self.lr.view(-1, 1).to(theta.dtype)
        if self.opt is None:
            self.opt = optim.new_state(
                "adam" if cfg.optimizer == "adam" else "sgd", theta, (cfg.adam_beta1, cfg.adam_beta2)
            )
        frozen_a = (
            None if stage.wrt != "layer2" or stage.layer1 == "ideal" else toy.layer1_matrix(theta[:, toy.P_TILDE], L)[0]
        )
        if cfg.optimizer == "gd":
            gens = [rng.generator(s, "stage", index) for s in self.seeds]
            self.fixed = make_batch(
                new_tokens(S, L, cfg.n_samples, gens, self.target.tokens), self.target, stage.layer1, frozen_a
            )
        else:
            self.stream = BatchStream(
                self.target,
                cfg.batch_size,
                self.gens,
                stage.layer1,
                frozen_a,
                cfg.checkpoint_every,
                prefetch=self.evaluator is not None and stage.steps > 0,
            )
        if not resumed or self.compiled is None:  # chosen once per stage; a resume uses the recorded choice
            self.compiled = _use_compiled(cfg, stage.steps, S)
        self.grad_of = _grad_fn(stage, self.compiled)

    def end_stage(self, index: int) -> None:
        if self.stream is not None:
            self.stream.close()
        self.stream, self.fixed = None, None

    def step(self, step: int, tensors: dict[str, Any]) -> None:
        batch = self.fixed
        if batch is None:
            assert self.stream is not None  # begin_stage gives each stage a fixed batch or a stream
            batch = self.stream.next()
        assert self.opt is not None  # begin_stage or load_state_dict has set it
        grad = self.grad_of(self.theta, batch)
        optim.step(self.theta, grad, self.lr_mask, self.opt)
        tensors["grad"] = grad

    def evaluate(self, step: int) -> dict[str, np.ndarray] | Future:
        stage = self.toy_stages[self.current]
        args = (stage, step, self.lr, self.seeds, self.theta.clone(), self.evalset)
        return self.evaluator.submit(_eval_row, *args) if self.evaluator else _eval_row(*args)

    def at_boundary(self) -> bool:
        return self.stream is None or self.stream.at_block_start()

    def state_dict(self) -> dict:
        gens = self.stream.states if self.stream is not None else [g.get_state() for g in self.gens]
        return {
            "theta": self.theta,
            "opt": self.opt,
            "gens": gens,
            "p_tilde_after_stage1": self.p_tilde_after_stage1,
            "compiled": self.compiled,
            # what θ is, for inductionlab.load_model: the layer 1 its current stage (the last, once done) trains on
            "model": {"family": "toy", "layer1": self.toy_stages[min(self.current, len(self.toy_stages) - 1)].layer1},
        }

    def load_state_dict(self, state: dict) -> None:
        self.theta, self.opt, self.p_tilde_after_stage1 = state["theta"], state["opt"], state["p_tilde_after_stage1"]
        self.compiled = state.get("compiled")
        for g, st in zip(self.gens, state["gens"]):
            g.set_state(st)


def layer2_metrics(metrics: pd.DataFrame) -> pd.DataFrame:
    """The rows of the stage that trains layer 2: Stage II, or the joint stage."""
    last = "joint" if "joint" in set(metrics.stage) else "II"
    return metrics[metrics.stage == last]


def train_from(
    cfg: ToyTrainConfig, target: MixedTarget, sigma_init: float | torch.Tensor, seeds: Sequence[int], ctx: RunContext
) -> tuple[TrainResult, pd.DataFrame]:
    """Train one toy model per seed from θ(0) = σ_init·1 (:func:`inductionlab.models.toy.init_params`; a tensor:
    one σ per run); return the result and its layer-2 rows (:func:`layer2_metrics`), where the phases of
    Theorem 5.5 are read (:func:`inductionlab.analysis.phases.phase_times_by_run`)."""
    out = train_toy(cfg, target, toy.init_params(sigma_init, len(seeds)), seeds, ctx)
    return out, layer2_metrics(out.metrics)


def train_toy(
    cfg: ToyTrainConfig,
    target: MixedTarget,
    theta0: torch.Tensor,
    seeds: Sequence[int],
    ctx: RunContext = RunContext(),
    lr: Sequence[float] | None = None,
    hooks: Sequence[loop.Hook] = (),
) -> TrainResult:
    """Train S toy models at once (one per row of ``theta0``, data of run r from ``seeds[r]``).

    Args:
        cfg: optimiser, stages, evaluation schedule.
        target: per-run target parameters (S,).
        theta0: (S, 6) initial parameters (see :func:`inductionlab.models.toy.init_params`).
        seeds: one data seed per run.
        ctx: checkpoint, resume and progress (:class:`~inductionlab.runs.RunContext`); ``ctx.threads`` 2 draws the
            next batches and evaluates in background threads, on a second core; 1 does everything in the calling
            thread.  The numbers are the same either way.
        lr: per-run learning rates (S,); default ``cfg.lr`` for every run.
        hooks: :class:`~inductionlab.train.loop.Hook` objects (besides ``ctx.hooks``).
    """
    tune_process()
    S = theta0.shape[0]
    require(len(seeds) == S, "seeds", f"need one seed per run: {S} runs, {len(seeds)} seeds")
    lr_t = torch.full((S,), cfg.lr) if lr is None else torch.as_tensor(lr, dtype=torch.float32)
    require(lr_t.shape == (S,) and bool((lr_t > 0).all()), "lr", f"need {S} positive learning rates")
    evaluator = ThreadPoolExecutor(max_workers=1) if ctx.threads > 1 else None
    stepper = ToyStepper(cfg, target, theta0, seeds, lr_t, evaluator)
    try:
        metrics = loop.run(stepper, ctx, hooks, desc="train")
    finally:
        if evaluator is not None:
            evaluator.shutdown()
    p1 = stepper.p_tilde_after_stage1
    return TrainResult(
        stepper.theta, metrics, (p1 if p1 is not None else stepper.theta[:, toy.P_TILDE]).double().numpy()
    )


def _use_compiled(cfg: ToyTrainConfig, stage_steps: int, stage_runs: int) -> bool:
    """Whether a stage runs the compiled step: ``compile="on"``, or "auto" on a stage of ≥ 20 000 steps at ≤ 4 runs.
    Chosen from the stage's length, once; the checkpoint records it, so a resumed stage runs the same code."""
    return cfg.compile == "on" or (cfg.compile == "auto" and stage_steps >= 20_000 and stage_runs <= 4)


def _grad_fn(stage: Stage, use_compiled: bool):
    """(θ, batch) → gradient: the hand-written eager step, or its straight-line form compiled (checked against the
    same form run eagerly at each new shape, :class:`inductionlab._runtime.Compiled`)."""
    if not use_compiled:
        return lambda theta, b: toy.loss_and_grad(theta, b, stage.layer1, wrt=stage.wrt).grad
    fn = compiled(toy.straight_step)  # Stage I trains p̃ only: the learning-rate mask keeps the rest still
    return lambda theta, b: fn(theta, b.x, b.targets, toy.needs_shift(theta, b.bound), b.keys, b.scores)[1]
