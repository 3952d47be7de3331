"""Training the general transformer on an IH_n / GIH_n target (Wang et al. Figs. 3–4, docs/conventions.md#wang-6-4,
docs/conventions.md#wang-6-5):
square loss ½‖TF_{−1}(X) − H(X)‖², online batches, S seeds on the run axis, the loop of
:mod:`inductionlab.train.autograd`.  Metrics per run: the loss on a fixed evaluation sample and, when
asked, the layer-1 linear-probe distance to the patches X_{s−n+1:s} (docs/conventions.md#wang-6-4, docs/conventions.md#wang-a11).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from inductionlab import rng
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.tasks.induction import InductionTaskConfig, patch_targets, sample_tokens
from inductionlab.train import loop
from inductionlab.train.autograd import TrainConfig, pack, train

Probe = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # features (S, N, D), targets (S, N, k) → (S,)


def fit_induction(
    model: tf.TransformerConfig,
    task: InductionTaskConfig,
    cfg: TrainConfig,
    seeds: Sequence[int],
    ctx: RunContext = RunContext(threads=1),
    eval_size: int = 2048,
    eval_seed: int = 2024,
    probe_size: int = 0,
    probe: Probe | None = None,
    hooks: Sequence[loop.Hook] = (),
    desc: str = "train",
) -> tuple[tf.Params, pd.DataFrame]:
    """Train one model per seed (initialisation from the seed; one shared data stream from ``cfg.seed``).

    Metrics: ``loss`` on ``eval_size`` fixed sequences; with ``probe_size`` > 0 and a ``probe`` (e.g.
    :func:`inductionlab.analysis.heads.probe_distance`) also ``probe_distance``: the probe of the layer-1
    residual stream at positions s = n..L of the first ``probe_size`` of them against the patches
    X_{s−n+1:s}."""
    theta0, views = pack(tf.init_per_seed(model, seeds))
    x_eval = sample_tokens((eval_size, task.L, task.d), task.tokens, rng.generator(eval_seed), torch.float32)
    x_eval = x_eval.to(ctx.device)
    probe_x = x_eval[:probe_size]
    probe_y = patch_targets(probe_x, task.n).flatten(0, 1)  # (P·(L−n+1), n·d)

    def loss(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        out = tf.forward(model, views(theta), x.unsqueeze(0))[0]  # (S, B, d)
        return 0.5 * (out - task.target(x)).square().sum(-1).mean(-1)

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        P = views(theta)
        row = {"loss": loss(theta, x_eval).double().cpu().numpy()}
        if probe_size and probe is not None:
            resid = tf.forward(model, P, probe_x.unsqueeze(0), keep=True)[1]["blocks.0.hook_resid_post"]
            feats = resid[:, :, task.n - 1 :].flatten(1, 2)  # (S, P·(L−n+1), D)
            row["probe_distance"] = probe(feats, probe_y.expand(len(seeds), -1, -1)).cpu().numpy()
        return row

    def sample(g: torch.Generator) -> torch.Tensor:
        return sample_tokens((cfg.batch_size, task.L, task.d), task.tokens, g, torch.float32)

    record = {"family": "transformer", "config": model}
    theta, metrics = train(cfg, theta0, loss, sample, evaluate, ctx, hooks=hooks, desc=desc, model=record)
    return {k: v.clone() for k, v in views(theta).items()}, metrics.assign(seed=lambda d: np.asarray(seeds)[d.run])
