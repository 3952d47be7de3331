"""Preconditioned projected proximal gradient descent for the SCB model (Ren, Wang, Lee 2024, Algorithm 1;
docs/conventions.md#ren-4 and docs/conventions.md#ren-5), on the run axis (S instances at once), with the baselines of
docs/conventions.md#ren-10.

Updates (eqs. 5–6): V ← V − η_V Π_N G_V D_μ⁻¹; A: gradient step ã = A − η_A Π_T G_A D_μ⁻¹, soft-threshold at
η_Aλ (full two-sided form; the negative branch, which the paper proves never fires, is counted), then each
column re-projected onto 1ᵀa = 1.  ``lr_mode="normalized"``: η_V = η/K_Q, η_A = η/K_P (theory, docs/conventions.md#ren-4);
``"raw"``: η_V = η_A = η.

Algorithm 1: Stage 1 (λ = 0, η₁) until a fixed step or max(α, β) ≥ ρ → rounding at θ₁ → Stage 2 (λ > 0,
η₂) → normalisation at θ₂ → Stage 3: V*(Ā) in closed form (as the experiments do).  Thresholds [P]:
θ = (1 − α̂)/T + α̂/(2CQ) with α̂ = α(A) from the ground truth (synthetic runs only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import rng
from inductionlab.config import check_schedule, require
from inductionlab.models import linear
from inductionlab.runs import RunContext
from inductionlab.tasks.scb import SCBInstance, mu_inner, mu_norm2
from inductionlab.theory.scb import population_loss, signal, v_star
from inductionlab.train import loop
from inductionlab.train.scb_batch import sampled_gradients


def step_sizes(
    inst: SCBInstance, eta: float | torch.Tensor, lr_mode: Literal["normalized", "raw"]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(η_V, η_A) per run (S, 1, 1), for one η or one per run (S,)."""
    eta = torch.as_tensor(eta, dtype=inst.P.dtype).expand(inst.P.shape[0])
    if lr_mode == "normalized":
        return (eta / inst.K_Q).view(-1, 1, 1), (eta / inst.K_P).view(-1, 1, 1)
    return eta.view(-1, 1, 1), eta.view(-1, 1, 1)


def project_columns(A: torch.Tensor) -> torch.Tensor:
    """a_k ← a_k + (1 − 1ᵀa_k)/T · 1: back onto the affine hyperplane of unit column sums."""
    return A + (1 - A.sum(-2, keepdim=True)) / A.shape[-2]


def prox_step(
    A: torch.Tensor, grad: torch.Tensor, eta_A: torch.Tensor, lam: float | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. 6: gradient step, soft-threshold at η_Aλ, affine re-projection.  Returns the new A and, per run,
    how many entries the prox set to 0 and how many hit the negative branch ã < −η_Aλ."""
    a = A - eta_A * grad
    thr = eta_A * lam
    zeroed = (a.abs() < thr).flatten(1).sum(1)
    negative = (a < -thr).flatten(1).sum(1)
    return project_columns(torch.sign(a) * (a.abs() - thr).clamp_min(0)), zeroed, negative


def threshold(alpha_hat: torch.Tensor, T: int, C: float, Q: int) -> torch.Tensor:
    """θ = (1 − α̂)/T + α̂/(2CQ) (S, 1, 1): half-way between off-support and the smallest support entry on
    the line a = (1 − α)/T + α q (docs/conventions.md#ren-5 [P])."""
    return ((1 - alpha_hat) / T + alpha_hat / (2 * C * Q)).view(-1, 1, 1)


def round_columns(A: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Stage 1 → 2: entries below θ set to 0, then the affine re-projection."""
    return project_columns(A * (A >= theta))


def normalize_columns(A: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Stage 2 → 3: ā_k = a_k 1{a_k ≥ θ} / ‖a_k 1{a_k ≥ θ}‖₁ (a column with nothing above θ stays uniform)."""
    kept = A * (A >= theta)
    norm = kept.sum(-2, keepdim=True)
    return torch.where(norm > 0, kept / norm.clamp_min(1e-300), torch.full_like(A, 1.0 / A.shape[-2]))


def preconditioned_gradients(
    V: torch.Tensor, A: torch.Tensor, batch: tuple, mu: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(∇̃_V, ∇̃_A) of eq. 4 from a mini-batch."""
    g_v, g_a = linear.gradients(V, A, *batch)
    return linear.precondition(g_v, mu), linear.precondition(g_a, mu)


@dataclass(frozen=True)
class SCBTrainConfig:
    """One training method on SCB data (docs/conventions.md#ren-5, docs/conventions.md#ren-10; values marked [P] are our proposals).

    ``method``: "proximal" (Algorithm 1: Stage 1 with λ = 0 and η₁ → rounding → Stage 2 proximal with λ and
    η₂), "sgd" (the same preconditioned projected updates with λ = 0 throughout, no rounding, lr η₁ — the
    "vanilla SGD" of docs/conventions.md#ren-10), or "raw_sgd" (plain SGD on ℓ, no preconditioning or projection, lr η₁).
    Stage 1 ends after ``stage1_steps`` or, with ``stage1_end="signal"``, when max(α, β) ≥ ρ.
    ``threshold_C``: the C of θ = (1 − α̂)/T + α̂/(2CQ); the data recipe's weights U[1, 2] give q ≥ 1/(2Q).
    ``eta2_t0`` > 0: Stage 2's rate η₂/(1 + t/t₀) after t of the run's Stage-2 steps (0: App. I's constant η₂)."""

    # proximal (Algorithm 1), sgd (λ = 0, no rounding, lr η₁) or raw_sgd (plain SGD on ℓ)
    method: Literal["proximal", "sgd", "raw_sgd"] = "proximal"
    steps: int = 20_000  # total steps (Stage 1 and Stage 2)
    stage1_steps: int = 2000  # Stage 1 length in steps (stage1_end steps), or its cap (signal)
    # Stage 1 ends after stage1_steps (steps) or once max(α, β) ≥ ρ (signal)
    stage1_end: Literal["steps", "signal"] = "steps"
    rho: float = 0.1  # ρ: the signal threshold ending Stage 1 (stage1_end signal)
    batch_size: int = 64  # sequences per step B
    eta1: float = 0.3  # η₁: Stage 1 learning rate (and sgd's throughout)
    eta2: float = 0.03  # η₂: Stage 2 learning rate
    # > 0: Stage 2's rate decays as η₂/(1 + t/t₀), t the run's steps in Stage 2 (0: constant η₂, App. I)
    eta2_t0: float = 0.0
    lam: float = 1e-5  # λ: ℓ1 weight of Stage 2's proximal step
    # normalized: η_V = η/K_Q, η_A = η/K_P (ren-4); raw: η as given
    lr_mode: Literal["normalized", "raw"] = "normalized"
    threshold_C: float = 2.0  # C of the rounding threshold θ = (1 − α̂)/T + α̂/(2CQ)
    eval_every: int = 200  # evaluate every this many steps
    checkpoint_every: int = 5000  # write a resumable checkpoint every this many steps
    seed: int = 0  # seed of the batch stream (shared by the runs)
    # > 0: once every run's ‖Ā − Q‖_μ ≤ stop_below at an evaluation, the later steps leave V, A as they are (a
    # budget, not a change of the path: the evaluations before are those of the full run)
    stop_below: float = 0.0

    def __post_init__(self) -> None:
        require(
            self.method in ("proximal", "sgd", "raw_sgd"),
            "train.method",
            f"must be 'proximal', 'sgd' or 'raw_sgd', got {self.method!r}",
        )
        require(
            self.lr_mode in ("normalized", "raw"),
            "train.lr_mode",
            f"must be 'normalized' or 'raw', got {self.lr_mode!r}",
        )
        require(self.stage1_end in ("steps", "signal"), "train.stage1_end", "must be 'steps' or 'signal'")
        for name in ("steps", "batch_size", "eval_every", "checkpoint_every"):
            require(getattr(self, name) >= 1, f"train.{name}", f"must be ≥ 1, got {getattr(self, name)}")
        require(0 <= self.stage1_steps <= self.steps, "train.stage1_steps", "must be in 0..steps")
        for name in ("eta1", "eta2"):
            require(getattr(self, name) > 0, f"train.{name}", f"step sizes must be > 0, got {getattr(self, name)}")
        require(self.lam >= 0, "train.lam", f"λ must be ≥ 0, got {self.lam}")
        require(self.eta2_t0 >= 0, "train.eta2_t0", f"must be ≥ 0 (0: constant η₂), got {self.eta2_t0}")
        require(self.stop_below >= 0, "train.stop_below", f"must be ≥ 0 (0: never stop), got {self.stop_below}")
        for name in ("eta1", "eta2", "eta2_t0", "lam", "rho", "threshold_C"):
            require(
                math.isfinite(getattr(self, name)),
                f"train.{name}",
                f"must be a finite number, got {getattr(self, name)}",
            )
        require(0 < self.rho, "train.rho", f"must be > 0 (Stage 1 ends when max(α, β) ≥ ρ), got {self.rho}")
        require(
            self.threshold_C > 0, "train.threshold_C", f"must be > 0 (θ = (1 − α̂)/T + α̂/(2CQ)), got {self.threshold_C}"
        )
        check_schedule("train.steps", self.steps, "train.eval_every", self.eval_every)


def initial_state(inst: SCBInstance) -> tuple[torch.Tensor, torch.Tensor]:
    """Training from scratch (docs/conventions.md#ren-4): V₀ = μ1ᵀ, A₀ = 11ᵀ/T."""
    S, N, T = inst.P.shape[0], inst.N, inst.T
    return inst.mu.unsqueeze(-1).expand(S, N, N).clone(), torch.full((S, T, N), 1.0 / T, dtype=inst.P.dtype)


def evaluate(V: torch.Tensor, A: torch.Tensor, inst: SCBInstance, Q_sparsity: int, C: float) -> dict[str, torch.Tensor]:
    """The metrics of docs/conventions.md#ren-10, per run: μ-distances raw and after normalisation (Ā, V*(Ā)), centred
    μ-cosines, the population loss, α, β and the off-line errors."""
    mu = inst.mu
    sig = signal(V, A, inst)
    A_bar = normalize_columns(A, threshold(sig["alpha"].clamp(0, 1), inst.T, C, Q_sparsity))
    V0, P0 = V - mu.unsqueeze(-1), inst.P - mu.unsqueeze(-1)
    A0, Q0 = A - 1.0 / inst.T, inst.Q - 1.0 / inst.T

    def cos(M, M2):
        return mu_inner(M, M2, mu) / (mu_norm2(M, mu) * mu_norm2(M2, mu)).sqrt().clamp_min(1e-300)

    return {
        "dist_V": mu_norm2(V - inst.P, mu).sqrt(),
        "dist_A": mu_norm2(A - inst.Q, mu).sqrt(),
        "dist_A_norm": mu_norm2(A_bar - inst.Q, mu).sqrt(),
        "dist_V_star": mu_norm2(v_star(A_bar, inst) - inst.P, mu).sqrt(),
        "cos_V": cos(V0, P0),
        "cos_A": cos(A0, Q0),
        "loss": population_loss(V, A, inst),
        **sig,
    }


Oracle = Callable[[torch.Tensor, torch.Tensor, SCBInstance, torch.Generator], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class _Stage(loop.Stage):
    """The loop stage of :class:`SCBStepper`: its schedule also evaluates at ``stage1_steps``, whose evaluation
    applies the Stage 1 → 2 switch — at any ``eval_every``, Stage 1 then ends where the config says."""

    stage1_steps: int = 0

    def evals(self) -> set[int]:
        return super().evals() | {self.stage1_steps}


_STATE = ("V", "A", "stage", "zeroed", "negative", "since", "done", "in_stage2")  # a checkpoint's tensors


class SCBStepper:
    """Algorithm 1 (or its SGD baselines) on the loop: V (S, N, N), A (S, T, N), each run's stage (1 or 2), the
    prox counters since the last evaluation and the data generator.  The evaluation also applies Algorithm 1's
    Stage 1 → 2 switch, which the measured α, β trigger."""

    hint = "Lower train.eta1 / train.eta2 (the largest η that does not diverge is the one to use)."

    def __init__(
        self,
        cfgs: list[SCBTrainConfig],
        inst: SCBInstance,
        data_inst: SCBInstance,
        Q_sparsity: int,
        init: tuple[torch.Tensor, torch.Tensor] | None,
        oracle: Oracle | None,
    ):
        base, S = cfgs[0], inst.P.shape[0]
        self.base, self.inst, self.data_inst, self.Q, self.oracle = base, inst, data_inst, Q_sparsity, oracle
        every = base.eval_every
        self.stages = [_Stage(base.method, base.steps, every, 0, base.checkpoint_every, every, base.stage1_steps)]

        def per_run(values) -> torch.Tensor:
            return torch.as_tensor([float(v) for v in values], dtype=inst.P.dtype).expand(S).clone()

        self.eta1, self.eta2, self.lam = (per_run(getattr(c, n) for c in cfgs) for n in ("eta1", "eta2", "lam"))
        self.prox = torch.tensor([c.method == "proximal" for c in cfgs]).expand(S)
        self.raw = torch.tensor([c.method == "raw_sgd" for c in cfgs]).expand(S).view(-1, 1, 1)
        require(
            oracle is None or not bool(self.raw.any()),
            "train.method",
            "raw_sgd needs mini-batches, not a gradient oracle",
        )
        self.gen = rng.generator(base.seed)
        self.V, self.A = (
            initial_state(inst)
            if init is None
            else (init[0].expand(S, -1, -1).clone(), init[1].expand(S, -1, -1).clone())
        )
        self.stage, self.zeroed, self.negative, self.since = (
            torch.ones(S, dtype=torch.long),
            torch.zeros(S),
            torch.zeros(S),
            0,
        )
        self.in_stage2 = torch.zeros(S)  # each run's steps in Stage 2 so far (η₂'s decay, eta2_t0)
        self.done = torch.tensor(False)  # every run reached stop_below: the later steps are skipped

    @property
    def params(self) -> torch.Tensor:
        return torch.cat([self.V.flatten(1), self.A.flatten(1)], 1)

    def begin_stage(self, index: int, resumed: bool) -> None: ...

    def end_stage(self, index: int) -> None: ...

    def at_boundary(self) -> bool:
        return True

    def evaluate(self, step: int) -> dict[str, np.ndarray]:
        base, since = self.base, max(self.since, 1)
        row = log_row(
            self.V,
            self.A,
            self.inst,
            step,
            base.batch_size,
            self.Q,
            base.threshold_C,
            stage=self.stage.numpy().copy(),
            zeroed=(self.zeroed / since).numpy(),
            negative=(self.negative / since).numpy(),
        )
        self.zeroed, self.negative, self.since = torch.zeros_like(self.zeroed), torch.zeros_like(self.negative), 0
        start = self.prox & (self.stage == 1) & torch.as_tensor(_stage1_over(base, step, row))
        self.A, self.stage = _enter_stage2(self.A, self.stage, start, row["alpha"], self.inst, base.threshold_C, self.Q)
        if base.stop_below > 0 and bool((row["dist_A_norm"] <= base.stop_below).all()):
            self.done = torch.tensor(True)
        return row

    def step(self, step: int, tensors: dict) -> None:
        if bool(self.done):
            return
        V, A, inst, stage, raw = self.V, self.A, self.inst, self.stage, self.raw
        if self.oracle is None:
            g_v, g_a = sampled_gradients(V, A, self.data_inst, self.base.batch_size, self.gen)
            pre_v, pre_a = linear.precondition(g_v, inst.mu), linear.precondition(g_a, inst.mu)
        else:
            pre_v, pre_a = self.oracle(V, A, inst, self.gen)
        eta2 = self.eta2 / (1 + self.in_stage2 / self.base.eta2_t0) if self.base.eta2_t0 > 0 else self.eta2
        eta_v, eta_a = step_sizes(inst, torch.where(stage == 2, eta2, self.eta1), self.base.lr_mode)
        lam_now = torch.where(stage == 2, self.lam, 0.0).view(-1, 1, 1)
        A_prox, z, neg = prox_step(A, pre_a, eta_a, lam_now)
        V_new = V - eta_v * pre_v
        if self.oracle is None and bool(raw.any()):
            V_new = torch.where(raw, V - self.eta1.view(-1, 1, 1) * g_v, V_new)
            A_prox = torch.where(raw, A - self.eta1.view(-1, 1, 1) * g_a, A_prox)
        self.V, self.A = V_new, A_prox
        self.zeroed, self.negative = self.zeroed + z * ~raw.view(-1), self.negative + neg * (stage == 2)
        self.since += 1
        self.in_stage2 = self.in_stage2 + (stage == 2)

    def state_dict(self) -> dict:
        return {k: getattr(self, k) for k in _STATE} | {"gen": self.gen.get_state()}

    def load_state_dict(self, state: dict) -> None:
        for k in _STATE:
            setattr(self, k, state[k])
        self.gen.set_state(state["gen"])


def train_scb(
    cfg: SCBTrainConfig | Sequence[SCBTrainConfig],
    inst: SCBInstance,
    Q_sparsity: int,
    ctx: RunContext = RunContext(threads=1),
    init: tuple[torch.Tensor, torch.Tensor] | None = None,
    oracle: Oracle | None = None,
    hooks: Sequence[loop.Hook] = (),
) -> tuple[torch.Tensor, torch.Tensor, pd.DataFrame]:
    """Train on the run axis: one config for the S instances of ``inst``, or one config per run — then all
    runs train one instance (S = 1) on the *same* batches (methods compared on identical data) and may differ
    in method, η₁, η₂ and λ only.  Returns V, A and the metrics table (run, step, samples, stage, the
    :func:`evaluate` columns, and per step, averaged since the last evaluation, ``zeroed`` — the entries the
    prox set to 0 — and ``negative`` — entries on the negative soft-threshold branch (Stage 2 only; it fires
    whenever α > 1 puts the off-support entries (1 − α)/T below −η_Aλ)).

    ``init``: (V₀, A₀) (S, N, N), (S, T, N) instead of :func:`initial_state` (e.g. the transfer start of
    ``docs/conventions.md#ren-8``; ``stage1_steps=0`` then starts with the rounding and Stage 2).
    ``oracle(V, A, inst, generator)``: preconditioned gradients (∇̃_V, ∇̃_A) replacing the mini-batch ones (e.g.
    the Gaussian-noise simulation of ``docs/conventions.md#ren-10``); not with ``raw_sgd``."""
    cfgs = [cfg] if isinstance(cfg, SCBTrainConfig) else list(cfg)
    base, data_inst = cfgs[0], inst
    if len(cfgs) > 1:
        require(inst.P.shape[0] == 1, "inst", "one config per run needs a single instance (S = 1)")
        require(
            all(replace(c, method=base.method, eta1=base.eta1, eta2=base.eta2, lam=base.lam) == base for c in cfgs),
            "train",
            "runs on one axis may differ only in method, eta1, eta2 and lam",
        )
        inst = SCBInstance(*(t.expand(len(cfgs), *t.shape[1:]) for t in (inst.P, inst.mu, inst.Q)))
    stepper = SCBStepper(cfgs, inst, data_inst, Q_sparsity, init, oracle)
    metrics = loop.run(stepper, ctx, hooks, desc=base.method)
    return stepper.V, stepper.A, metrics


def log_row(
    V: torch.Tensor,
    A: torch.Tensor,
    inst: SCBInstance,
    step: int,
    batch_size: int,
    Q_sparsity: int,
    C: float,
    **extra: np.ndarray,
) -> dict[str, np.ndarray]:
    """One block of the metrics table: run, step, samples seen, the :func:`evaluate` metrics and ``extra``."""
    S = V.shape[0]
    metrics = {k: v.numpy() for k, v in evaluate(V, A, inst, Q_sparsity, C).items()}
    return {"run": np.arange(S), "step": np.full(S, step), "samples": np.full(S, step * batch_size), **extra, **metrics}


def _enter_stage2(
    A: torch.Tensor,
    stage: torch.Tensor,
    start: torch.Tensor,
    alpha: np.ndarray,
    inst: SCBInstance,
    C: float,
    Q_sparsity: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Algorithm 1's Stage 1 → 2 switch for the runs in ``start`` (S,): rounding at θ(α̂), stage set to 2."""
    if not bool(start.any()):
        return A, stage
    theta = threshold(torch.as_tensor(alpha).clamp(0, 1), inst.T, C, Q_sparsity)
    return torch.where(start.view(-1, 1, 1), round_columns(A, theta), A), torch.where(start, 2, stage)


def _stage1_over(cfg: SCBTrainConfig, step: int, row: dict) -> np.ndarray:
    """Per run: Stage 1 is over (a fixed step, or max(α, β) ≥ ρ with ``stage1_end="signal"``)."""
    over = np.full(len(row["alpha"]), step >= cfg.stage1_steps)
    if cfg.stage1_end == "signal":
        over |= np.maximum(row["alpha"], row["beta"]) >= cfg.rho
    return over
