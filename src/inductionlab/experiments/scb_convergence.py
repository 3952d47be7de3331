"""Fig. 1 of Ren, Wang, Lee 2024 (docs/conventions.md#ren-10): preconditioned projected proximal gradient descent (Algorithm 1)
against vanilla SGD (the same preconditioned, projected updates with λ = 0 and no rounding) at the same
large learning rate η₁ and at η₁/10, all with the same batch size, on one random SCB instance.

Metrics of docs/conventions.md#ren-10 (a)–(e) on a log: μ-distances to (P, Q) raw and after normalisation (Ā, V*(Ā)),
centred μ-cosines, the population loss, α(A), β(V), ‖Δ_A‖_μ, ‖Δ_V‖_μ, and the prox's zeroed entries.  The
summary's ``prox`` / ``sgd_large_lr`` / ``sgd_small_lr`` hold the final ``dist_A_normalized`` (‖Ā − Q‖_μ),
``dist_V_normalized`` (‖V*(Ā) − P‖_μ) and ``zeroed_fraction`` (entries of A zeroed by the prox per Stage-2
step, as a fraction of T·N; 0 for SGD).  If the
prox zeroes nothing at the given λ, λ ∈ ``lambda_sweep`` is run too (docs/conventions.md#ren-11-1).

Defaults [P]: N = 5, Q = 3, T = 500, B = 64, 20 000 steps, τ₁ = 2000, λ = 1e-5, η₂ = η₁/10, and η₁ = 0.03 —
the largest value of the proposed grid {1, 0.3, 0.1, 0.03} (normalised mode) at which Algorithm 1 did not
diverge on the default instance (measured: 0.1 diverges).  Note: V*(A) = P for uniform A, so the
normalised V-distance is ≈ 0 at initialisation — uniform attention averages bigrams without bias.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from inductionlab import plots
from inductionlab.analysis.claims import Between, Claim
from inductionlab.config import check_seeds, require
from inductionlab.experiments.keys_common import set_here
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.scb import SCBConfig, random_instance
from inductionlab.train.proximal import SCBTrainConfig, train_scb

NAME = "scb-convergence"
DESCRIPTION = "Ren et al. Fig. 1: proximal Algorithm 1 vs vanilla SGD (large and small LR) on sparse contextual bigrams"
FIGURE = "Ren et al. Fig. 1"
WALL = "~30 s"  # default preset, 2 cores
CPU_ONLY = "the SCB trainers run on an index sampler and small (N × N, T × N) matrices"
HEADLINE = (
    "final.proximal.dist_A_norm",
    "final.sgd_large_lr.dist_A_norm",
    "final.sgd_small_lr.dist_A_norm",
    "proximal_beats_sgd_dist_A_norm",
)


@dataclass(frozen=True)
class Config:
    task: SCBConfig = field(default_factory=SCBConfig)
    train: SCBTrainConfig = field(default_factory=lambda: SCBTrainConfig(eta1=0.03, eta2=0.003, eval_every=250))
    small_lr_factor: float = 0.1
    raw_sgd: bool = False
    lambda_sweep: tuple[float, ...] = (1e-4, 1e-3, 1e-2)
    seeds: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        set_here(self.train, "train", {"method": "proximal"}, "each compared method")
        require(0 < self.small_lr_factor < 1, "small_lr_factor", f"must be in (0, 1), got {self.small_lr_factor}")


CONFIG = Config()
PRESETS = {
    "quick": {},  # the default already takes about a minute
    "smoke": {"task.T": 40, "train.steps": 60, "train.stage1_steps": 20, "train.eval_every": 20},
}

CLAIMS = (
    Claim(
        "ren-fig1-recovers",
        "ren",
        "Fig. 1, Thm 3.1",
        "Algorithm 1 recovers the sparse attention Q",
        "final.proximal.dist_A_norm",
        "‖Ā − Q‖_μ → 0",
        Between(hi=0.01),
    ),
    Claim(
        "ren-fig1-beats-sgd",
        "ren",
        "Fig. 1",
        "Algorithm 1 beats vanilla SGD at the same learning rate",
        "final.proximal.dist_A_norm",
        "proximal / SGD(η₁) ≤ 0.5",
        Between(hi=0.5),
        over="final.SGD η=0.03.dist_A_norm",
    ),
    Claim(
        "ren-fig1-beats-small-sgd",
        "ren",
        "Fig. 1",
        "Algorithm 1 beats vanilla SGD at a tenth of the learning rate",
        "final.proximal.dist_A_norm",
        "proximal / SGD(η₁/10) ≤ 1",
        Between(hi=1.0),
        over="final.SGD η=0.003.dist_A_norm",
    ),
)


def _methods(cfg: Config) -> list[tuple[str, SCBTrainConfig]]:
    t = cfg.train
    out = [
        ("proximal", replace(t, method="proximal")),
        (f"SGD η={t.eta1:g}", replace(t, method="sgd")),
        (f"SGD η={t.eta1 * cfg.small_lr_factor:g}", replace(t, method="sgd", eta1=t.eta1 * cfg.small_lr_factor)),
    ]
    return out + ([("raw SGD", replace(t, method="raw_sgd"))] if cfg.raw_sgd else [])


def run(cfg: Config, ctx: RunContext) -> Results:
    inst = random_instance(cfg.task, 1, np.random.default_rng(cfg.seeds[0]))
    methods = _methods(cfg)
    names = [name for name, _ in methods]
    _, _, metrics = train_scb([t for _, t in methods], inst, cfg.task.Q, ctx.child("methods"))
    tables = [
        metrics.assign(
            method=lambda d: np.asarray(names)[d.run],
            lam=lambda d: np.asarray([t.lam if t.method == "proximal" else 0.0 for _, t in methods])[d.run],
        )
    ]
    prox = tables[0][tables[0].method == "proximal"]
    if float(prox[prox.stage == 2].zeroed.mean()) == 0 and cfg.lambda_sweep:
        sweep = [replace(cfg.train, method="proximal", lam=lam) for lam in cfg.lambda_sweep]
        extra = train_scb(sweep, inst, cfg.task.Q, ctx.child("lambda_sweep"))[2]
        tables.append(
            extra.assign(
                method=lambda d: np.asarray([f"proximal λ={lam:g}" for lam in cfg.lambda_sweep])[d.run],
                lam=lambda d: np.asarray(cfg.lambda_sweep)[d.run],
            )
        )
    metrics = pd.concat(tables, ignore_index=True)
    final = metrics[metrics.step == metrics.step.max()].set_index("method")
    cols = ["dist_A_norm", "dist_V_star", "dist_A", "dist_V", "loss", "alpha", "beta"]
    summary = {
        "final": {m: {c: float(final.loc[m, c]) for c in cols} for m in final.index},
        "K_P": float(inst.K_P[0]),
        "K_Q": float(inst.K_Q[0]),
        "prox_zeroed_per_step": float(prox[prox.stage == 2].zeroed.mean()),
        "prox_negative_branch_per_step": float(prox[prox.stage == 2].negative.mean()),
    }
    keys = {"prox": names[0], "sgd_large_lr": names[1], "sgd_small_lr": names[2]}
    stage2 = metrics[(metrics.stage == 2) | (metrics.method != "proximal")]
    for key, m in keys.items():
        zeroed = stage2[stage2.method == m].zeroed.mean() / (cfg.task.T * cfg.task.N)
        summary[key] = {
            "dist_A_normalized": float(final.loc[m, "dist_A_norm"]),
            "dist_V_normalized": float(final.loc[m, "dist_V_star"]),
            "zeroed_fraction": float(zeroed),
        }
    sgd = [m for m, _ in methods if m.startswith("SGD")]
    for c in ("dist_A_norm", "dist_V_star"):
        summary[f"proximal_beats_sgd_{c}"] = bool(all(final.loc["proximal", c] < final.loc[m, c] for m in sgd))
    return Results({"metrics": metrics}, summary)


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics = results.tables["metrics"]
    fig, axes = plots.subplots(2, 2, width=4.4, height=3.2)
    panels = [
        ("dist_A_norm", r"$\|\bar A - Q\|_\mu$", "attention error after normalisation"),
        ("dist_A", r"$\|A - Q\|_\mu$", "raw attention error"),
        ("dist_V", r"$\|V - P\|_\mu$", "raw transition error"),
        ("loss", "population loss", "population loss"),
    ]
    for ax, (col, label, title) in zip(axes, panels):
        for method, g in metrics.groupby("method", sort=False):
            ax.plot(g.step, g[col], label=method)
        ax.set_yscale("log" if col != "loss" else "linear")
        ax.set(xlabel="step", ylabel=label, title=title)
    axes[0].legend(fontsize=7)
    fig.suptitle("Algorithm 1 (proximal) against SGD on the same sparse-contextual-bigram data")
    return [plots.save(fig, Path(out_dir) / "scb_convergence.png")]
