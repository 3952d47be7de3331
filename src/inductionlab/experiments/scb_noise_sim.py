"""The Gaussian-noise SGD simulation of Ren, Wang, Lee 2024 (docs/conventions.md#ren-10) for vocabularies too large for real
mini-batches: exact population gradients plus calibrated Gaussian noise (:func:`gaussian_noise_oracle`),
the same three stages, prox and normalisation, with and without ℓ1.

For each N, one instance with Q = ``task.Q`` and T = ``T_per_NQ``·N·Q trains three runs on one run axis with
the same noise draws: Algorithm 1 (proximal), vanilla SGD at η₁ (λ = 0, no rounding) and vanilla SGD at η₁/10.
σ_V, σ_A are calibrated by Monte Carlo at the truth (P, Q), σ_A scaled by ‖V − μ1ᵀ‖_μ/‖P − μ1ᵀ‖_μ during
training (see :func:`inductionlab.theory.scb.gaussian_noise_oracle`: at V = μ1ᵀ the A-gradient noise is
exactly 0).

Choices [P]: T_per_NQ = 10 by default (the proposal is T = 50NQ, ``--preset spec``: T = 7500 at N = 50
costs ~50 ms a step here); Stage 1 ends when max(α, β) ≥ ρ; η₁ = 0.01 (0.03 diverged at N = 50).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from inductionlab import plots
from inductionlab.analysis.claims import Between, Claim
from inductionlab.config import check_seeds, require
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.scb import SCBConfig, random_instance
from inductionlab.theory.scb import gaussian_noise_oracle, noise_scales
from inductionlab.train.proximal import SCBTrainConfig, train_scb

NAME = "scb-noise-sim"
DESCRIPTION = "Ren et al. §5: Gaussian-noise SGD simulation for large N — proximal vs vanilla SGD"
FIGURE = "Ren et al. App. I (noise)"
WALL = "~2.5 min"  # default preset, 2 cores
CPU_ONLY = "the SCB trainers run on an index sampler and small (N × N, T × N) matrices"
HEADLINE = ("proximal_best_dist_A_norm",)


@dataclass(frozen=True)
class Config:
    task: SCBConfig = field(default_factory=SCBConfig)
    train: SCBTrainConfig = field(
        default_factory=lambda: SCBTrainConfig(
            eta1=0.01, eta2=0.001, steps=6000, stage1_steps=6000, stage1_end="signal", rho=0.1, eval_every=250
        )
    )
    N_values: tuple[int, ...] = (10, 20, 50)
    T_per_NQ: int = 10
    calibration_samples: int = 8192
    small_lr_factor: float = 0.1
    seeds: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        require(len(self.N_values) >= 1 and min(self.N_values) >= 2, "N_values", "give vocabulary sizes ≥ 2")
        require(
            self.T_per_NQ >= 1 and self.calibration_samples >= 2, "T_per_NQ", "T_per_NQ ≥ 1, calibration_samples ≥ 2"
        )
        require(0 < self.small_lr_factor < 1, "small_lr_factor", "must lie in (0, 1)")


CONFIG = Config()
PRESETS = {
    "quick": {"N_values": "10,20"},
    "spec": {"T_per_NQ": 50},
    "smoke": {
        "N_values": (3, 4),
        "T_per_NQ": 3,
        "train.steps": 40,
        "train.stage1_steps": 40,
        "train.eval_every": 20,
        "calibration_samples": 64,
    },
}

CLAIMS = (
    Claim(
        "ren-noise-prox-n10",
        "ren",
        "App. I",
        "Under gradient noise (N = 10) the proximal method beats vanilla SGD",
        "final.10.proximal.dist_A_norm",
        "proximal / SGD(η₁) ≤ 1",
        Between(hi=1.0),
        over="final.10.sgd_large_lr.dist_A_norm",
    ),
    Claim(
        "ren-noise-n50",
        "ren",
        "App. I",
        "At N = 50 the proximal method leaves Stage 1 and recovers Q",
        "final.50.proximal.dist_A_norm",
        "‖Ā − Q‖_μ small",
        Between(hi=0.1),
    ),
)


def run(cfg: Config, ctx: RunContext) -> Results:
    tables, summary = [], {"final": {}, "sigma_V": {}, "sigma_A": {}}
    t = cfg.train
    methods = {
        "proximal": replace(t, method="proximal"),
        "sgd_large_lr": replace(t, method="sgd"),
        "sgd_small_lr": replace(t, method="sgd", eta1=t.eta1 * cfg.small_lr_factor),
    }
    for N in cfg.N_values:
        task = replace(cfg.task, N=N, T=cfg.T_per_NQ * N * cfg.task.Q)
        inst = random_instance(task, 1, np.random.default_rng([cfg.seeds[0], N]))
        sigma_V, sigma_A = noise_scales(
            inst.P, inst.Q, inst, cfg.calibration_samples, torch.Generator().manual_seed(t.seed + 1)
        )
        oracle = gaussian_noise_oracle(sigma_V, sigma_A, t.batch_size)
        _, _, m = train_scb(list(methods.values()), inst, task.Q, ctx.child(f"N{N}"), oracle=oracle)
        m = m.assign(N=N, T=task.T, method=np.asarray(list(methods))[m.run])
        tables.append(m)
        final = m[m.step == m.step.max()].set_index("method")
        summary["final"][N] = {
            k: {c: float(final.loc[k, c]) for c in ("dist_A_norm", "dist_V_star", "loss", "zeroed")} for k in methods
        }
        summary["sigma_V"][N], summary["sigma_A"][N] = float(sigma_V[0]), float(sigma_A[0])
    summary["proximal_best_dist_A_norm"] = {
        N: bool(all(d["proximal"]["dist_A_norm"] <= d[k]["dist_A_norm"] for k in methods))
        for N, d in summary["final"].items()
    }
    return Results({"metrics": pd.concat(tables, ignore_index=True)}, summary)


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics = results.tables["metrics"]
    Ns = sorted(metrics.N.unique())
    fig, axes = plots.subplots(len(Ns), width=3.8, height=3.2)
    for ax, N in zip(axes, Ns):
        sub = metrics[metrics.N == N]
        for method, g in sub.groupby("method", sort=False):
            ax.semilogy(g.step, g.dist_A_norm, label=method)
        ax.set_title(f"N = {N}, T = {int(sub['T'].iloc[0])} (Gaussian-noise SGD)", fontsize=9)
        ax.set_xlabel("step"), ax.set_ylabel("‖Ā − Q‖_μ (normalised)")
    axes[0].legend(fontsize=7)
    return [plots.save(fig, Path(out_dir) / "scb_noise_sim.png")]
