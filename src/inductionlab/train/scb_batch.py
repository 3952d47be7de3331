"""Mini-batch gradients of the SCB linear model drawn from the task (docs/conventions.md#scb-fused): the uniforms of
:func:`inductionlab.tasks.scb.draw_uniforms` (timed as ``data``), then the fused sampler-and-gradient loop of
:mod:`inductionlab.models.linear_fused`, or eagerly :func:`inductionlab.tasks.scb.from_uniforms` and
:func:`inductionlab.models.linear.gradients` — the same random stream, the same examples, either way."""

from __future__ import annotations

import torch

from inductionlab import timing
from inductionlab.models import linear, linear_fused
from inductionlab.tasks import scb


def eager_gradients(data: linear_fused.Data, V: torch.Tensor, A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The eager composition: the examples (timed as ``data``), shared by V's runs when the data holds one run,
    then their mean gradients (G_V, G_A)."""
    with timing.section("data"):
        batch: tuple[torch.Tensor, ...] = scb.examples_from_uniforms(*data)
    if batch[0].shape[0] != V.shape[0]:
        batch = tuple(b.expand(V.shape[0], *b.shape[1:]) for b in batch)
    return linear.gradients(V, A, *batch)


def sampled_gradients(
    V: torch.Tensor, A: torch.Tensor, inst: scb.SCBInstance, batch: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw mini-batch gradients (G_V (S, N, N), G_A (S, T, N)), means over ``batch`` fresh examples per run of
    ``inst`` — or, when ``inst`` holds one instance and V, A hold S runs, one batch shared by all runs."""
    with timing.section("data"):
        u_tok, u_pl = scb.draw_uniforms(inst, batch, generator)
    data = (u_tok, u_pl, inst.mu_cdf, inst.q_positions, inst.q_cdf, inst.p_cdf)
    return linear_fused.gradients(data, V, A, eager_gradients)
