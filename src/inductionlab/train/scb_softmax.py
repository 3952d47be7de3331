"""The softmax model of Ren et al. (``docs/conventions.md#ren-9``) trained by plain SGD on the loop: the comparison
for the linear model of :mod:`inductionlab.train.proximal`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from inductionlab import rng
from inductionlab.models import linear
from inductionlab.runs import RunContext
from inductionlab.tasks.scb import SCBInstance, sample
from inductionlab.train import loop
from inductionlab.train.proximal import SCBTrainConfig, initial_state, log_row


class SoftmaxStepper:
    """Plain SGD on the softmax model: V (S, N, N), logits W (S, T, N) and the data generator."""

    hint = "Lower lr_V / lr_W."

    def __init__(
        self,
        inst: SCBInstance,
        lr_V: float,
        lr_W: float,
        stage: loop.Stage,
        batch_size: int,
        seed: int,
        Q_sparsity: int,
        C: float,
    ):
        self.inst, self.lr_V, self.lr_W, self.stages, self.B, self.Q, self.C = (
            inst,
            lr_V,
            lr_W,
            [stage],
            batch_size,
            Q_sparsity,
            C,
        )
        self.gen = rng.generator(seed)
        self.V, _ = initial_state(inst)
        self.W = torch.zeros_like(inst.Q)

    @property
    def params(self) -> torch.Tensor:
        return torch.cat([self.V.flatten(1), self.W.flatten(1)], 1)

    def begin_stage(self, index: int, resumed: bool) -> None: ...

    def end_stage(self, index: int) -> None: ...

    def at_boundary(self) -> bool:
        return True

    def evaluate(self, step: int) -> dict[str, np.ndarray]:
        return log_row(self.V, linear.softmax_attention(self.W), self.inst, step, self.B, self.Q, self.C)

    def step(self, step: int, tensors: dict) -> None:
        A = linear.softmax_attention(self.W)
        g_v, g_a = linear.gradients(self.V, A, *sample(self.inst, self.B, self.gen))
        self.V = self.V - self.lr_V * g_v
        self.W = self.W - self.lr_W * A * (g_a - (A * g_a).sum(-2, keepdim=True))  # ∇_w = (diag σ − σσᵀ) ∇_σ per column

    def state_dict(self) -> dict:
        return {"V": self.V, "W": self.W, "gen": self.gen.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.V, self.W = state["V"], state["W"]
        self.gen.set_state(state["gen"])


def train_softmax_scb(
    cfg: SCBTrainConfig,
    inst: SCBInstance,
    Q_sparsity: int,
    lr_V: float,
    lr_W: float,
    ctx: RunContext = RunContext(threads=1),
    hooks: Sequence[loop.Hook] = (),
) -> tuple[torch.Tensor, torch.Tensor, pd.DataFrame]:
    """The softmax model of ``docs/conventions.md#ren-9`` (A = column-wise softmax of logits W) trained by
    plain SGD on ℓ from W₀ = 0, V₀ = μ1ᵀ, with separate learning rates for V and W (near uniform attention the
    softmax Jacobian is ≈ Π/T, so W needs a far larger rate).  From ``cfg`` it takes the steps, batch size,
    evaluation and checkpoint intervals, the data seed and ``threshold_C``, so it draws the same batches as
    :func:`train_scb` with the same config.  Returns V (S, N, N), W (S, T, N) and the :func:`evaluate` metrics of
    (V, softmax(W))."""
    stage = loop.Stage("softmax", cfg.steps, cfg.eval_every, 0, cfg.checkpoint_every, cfg.eval_every)
    stepper = SoftmaxStepper(inst, lr_V, lr_W, stage, cfg.batch_size, cfg.seed, Q_sparsity, cfg.threshold_C)
    metrics = loop.run(stepper, ctx, hooks, desc="softmax")
    return stepper.V, stepper.W, metrics
