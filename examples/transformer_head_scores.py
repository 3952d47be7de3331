"""Train the general two-layer transformer on the IH_2 target and read its head scores.

    python examples/transformer_head_scores.py [--smoke]

Extras: none (the core install).

Two seeds train on the run axis; at the end the previous-token score of every layer-1 head and the induction
score of every layer-2 head are printed, on repeated random sequences (TransformerLens's definitions).
"""

import argparse

import torch

from inductionlab import (
    InductionTaskConfig,
    TrainConfig,
    TransformerConfig,
    fit_induction,
    head_scores,
    repeated_random_tokens,
)

parser = argparse.ArgumentParser()
parser.add_argument("--smoke", action="store_true", help="seconds (a previous-token head forms) instead of minutes")
smoke = parser.parse_args().smoke

model = TransformerConfig(d_in=1, d_model=4, n_heads=2)
task = InductionTaskConfig(n=2, d=1, L=20, w_scale=1.0)
train = TrainConfig(
    optimizer="adam", lr=1e-2, steps=600 if smoke else 3000, batch_size=64, eval_every=100 if smoke else 250
)
params, metrics = fit_induction(model, task, train, seeds=(0, 1), eval_size=256)
print(metrics.groupby("step").loss.mean().iloc[[0, -1]].rename("loss (mean over seeds)"))

tokens = repeated_random_tokens(16, 10, 2, torch.Generator().manual_seed(0))  # (B, 20, d = 1)
scores = head_scores(model, params, tokens, period=10)
for seed, run in zip((0, 1), range(2)):
    print(
        f"seed {seed}: previous-token (layer 1) {[round(x, 2) for x in scores['previous_token'][run, 0].tolist()]}, "
        f"induction (layer 2) {[round(x, 2) for x in scores['induction'][run, 1].tolist()]}"
    )
