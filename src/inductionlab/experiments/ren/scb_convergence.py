"""Fig. 1 of Ren, Wang, Lee 2024 (docs/conventions.md#ren-10): preconditioned projected proximal gradient descent (Algorithm 1)
against vanilla SGD (the same preconditioned, projected updates with λ = 0 and no rounding) at the same
large learning rate η₁ and at η₁/10, all with the same batch size, on one random SCB instance.

Metrics of docs/conventions.md#ren-10 (a)–(e) on a log: μ-distances to (P, Q) raw and after normalisation (Ā, V*(Ā)),
centred μ-cosines, the population loss, α(A), β(V), ‖Δ_A‖_μ, ‖Δ_V‖_μ, and the prox's zeroed entries.  The
summary's ``prox`` / ``sgd_large_lr`` / ``sgd_small_lr`` hold the final ``dist_A_normalized`` (‖Ā − Q‖_μ),
``dist_V_normalized`` (‖V*(Ā) − P‖_μ), ``zeroed_fraction`` (entries of A zeroed by the prox per Stage-2 step, as
a fraction of T·N; 0 for SGD) and ``negative_fraction`` (entries on the prox's negative branch ã < −η_Aλ per
Stage-2 step, of T·N; the paper proves it never fires).

**The role of the ℓ1 step** (docs/conventions.md#ren-11-1): Algorithm 1 also trains at each λ of ``lambda_sweep``
(λ = 0 included: the step-size decay and the rounding without ℓ1), and, in the high-noise regime where Stage 2
keeps the large step (η₂ = η₁, no decay), at λ = 0 and at ``active_lambda``.  All runs share one run axis and
the same batches.

Defaults [P]: N = 5, Q = 3, T = 500, B = 64, 20 000 steps, τ₁ = 2000, λ = 1e-5, η₂ = η₁/10, and η₁ = 0.03 —
the largest value of the proposed grid {1, 0.3, 0.1, 0.03} (normalised mode) at which Algorithm 1 did not
diverge on the default instance (measured: 0.1 diverges).  Note: V*(A) = P for uniform A, so the
normalised V-distance is ≈ 0 at initialisation — uniform attention averages bigrams without bias.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from inductionlab import plots, rng
from inductionlab.config import check_seeds, require, set_here
from inductionlab.experiments.experiment import Experiment
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.scb import SCBConfig, SCBInstance, random_instance, sample
from inductionlab.train.proximal import SCBTrainConfig, preconditioned_gradients, train_scb


@dataclass(frozen=True)
class Config:
    task: SCBConfig = field(default_factory=SCBConfig)
    train: SCBTrainConfig = field(default_factory=lambda: SCBTrainConfig(eta1=0.03, eta2=0.003, eval_every=250))
    small_lr_factor: float = 0.1  # the small-rate SGD run uses η₁ × this
    raw_sgd: bool = False  # also train plain SGD on ℓ (no preconditioning or projection)
    # Algorithm 1 also runs at each ℓ1 weight λ here (the role of the ℓ1 step, ren-11-1)
    lambda_sweep: tuple[float, ...] = (0.0, 1e-2)
    active_lambda: float = 1e-2  # λ of the no-decay (η₂ = η₁) high-noise run
    seeds: tuple[int, ...] = (0,)  # one seed (no run axis), for every random draw; for several: sweep --n-seeds K

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        set_here(self.train, "train", {"method": "proximal"}, "each compared method")
        set_here(self.train, "train", {"seed": 0}, "seeds (each data draw its own batches)")
        require(
            self.train.stage1_steps < self.train.steps,
            "train.stage1_steps",
            f"must be < train.steps = {self.train.steps}: the comparison needs Algorithm 1's Stage 2, got "
            f"{self.train.stage1_steps}",
        )
        require(0 < self.small_lr_factor < 1, "small_lr_factor", f"must be in (0, 1), got {self.small_lr_factor}")
        require(all(lam >= 0 for lam in self.lambda_sweep), "lambda_sweep", "each λ must be ≥ 0")
        require(self.active_lambda >= 0, "active_lambda", f"must be ≥ 0, got {self.active_lambda}")


CONFIG = Config()
PRESETS = {
    "quick": {},  # the default already takes about a minute
    "smoke": {"task.T": 40, "train.steps": 60, "train.stage1_steps": 20, "train.eval_every": 20},
}


def _methods(cfg: Config) -> list[tuple[str, SCBTrainConfig]]:
    """The compared methods, then Algorithm 1 at each λ of the sweep and without step-size decay (η₂ = η₁) at
    λ = 0 and at ``active_lambda``: (name, config, λ of the Stage-2 prox); every one draws its batches from the
    seed (docs/conventions.md#seeds)."""
    t = replace(cfg.train, seed=rng.derive(cfg.seeds[0]))
    out = [
        ("proximal", replace(t, method="proximal")),
        (f"SGD η={t.eta1:g}", replace(t, method="sgd")),
        (f"SGD η={t.eta1 * cfg.small_lr_factor:g}", replace(t, method="sgd", eta1=t.eta1 * cfg.small_lr_factor)),
    ]
    out += [("raw SGD", replace(t, method="raw_sgd"))] if cfg.raw_sgd else []
    out += [(f"proximal λ={lam:g}", replace(t, method="proximal", lam=lam)) for lam in cfg.lambda_sweep]
    no_decay = replace(t, method="proximal", eta2=t.eta1)
    return out + [
        ("no decay λ=0", replace(no_decay, lam=0.0)),
        ("no decay active λ", replace(no_decay, lam=cfg.active_lambda)),
    ]


def run(cfg: Config, ctx: RunContext) -> Results:
    inst = random_instance(cfg.task, 1, rng.numpy_generator(cfg.seeds[0]))
    methods = _methods(cfg)
    names = np.asarray([name for name, _ in methods])
    lams = np.asarray([t.lam if t.method == "proximal" else 0.0 for _, t in methods])
    V, A, metrics = train_scb([t for _, t in methods], inst, cfg.task.Q, ctx.child("methods"))
    metrics = metrics.assign(method=lambda d: names[d.run], lam=lambda d: lams[d.run])
    final = metrics[metrics.step == metrics.step.max()].set_index("method")
    cols = ["dist_A_norm", "dist_V_star", "dist_A", "dist_V", "loss", "alpha", "beta"]
    TN = cfg.task.T * cfg.task.N
    # per Stage-2 step (every step for SGD, which has no Stage 2): entries zeroed / on the negative branch
    stage2 = metrics[(metrics.stage == 2) | ~metrics.method.str.startswith(("proximal", "no decay"))]
    per_step = stage2[stage2.step > 0].groupby("method")[["zeroed", "negative"]].mean() / TN
    noise = _offsupport_noise(V[:1], A[:1], inst, methods[0][1])
    summary: dict[str, Any] = {
        "final": {m: {c: float(final.loc[m, c]) for c in cols} for m in final.index},
        "K_P": float(inst.K_P[0]),
        "K_Q": float(inst.K_Q[0]),
        "prox_zeroed_per_step": float(per_step.loc["proximal", "zeroed"] * TN),
        "prox_negative_branch_per_step": float(per_step.loc["proximal", "negative"] * TN),
        "stage2_fractions": {m: {c: float(per_step.loc[m, c]) for c in per_step.columns} for m in per_step.index},
        "stage2_noise_linf": noise,
    }
    summary["stage2_noise_linf_over_lambda"] = noise / cfg.train.lam if cfg.train.lam else None
    keys = {"prox": names[0], "sgd_large_lr": names[1], "sgd_small_lr": names[2]}
    for key, m in keys.items():
        summary[key] = {
            "dist_A_normalized": float(final.loc[m, "dist_A_norm"]),
            "dist_V_normalized": float(final.loc[m, "dist_V_star"]),
            "zeroed_fraction": float(per_step.loc[m, "zeroed"]),
            "negative_fraction": float(per_step.loc[m, "negative"]),
        }
    sgd = [m for m in names if m.startswith("SGD")]
    for c in ("dist_A_norm", "dist_V_star"):
        summary[f"proximal_beats_sgd_{c}"] = bool(all(final.loc["proximal", c] < final.loc[m, c] for m in sgd))
    return Results({"metrics": metrics}, summary)


def _offsupport_noise(V: torch.Tensor, A: torch.Tensor, inst: SCBInstance, t: SCBTrainConfig, draws: int = 16) -> float:
    """The ℓ∞ norm of the off-support entries of the mini-batch preconditioned A-gradient (eq. 4) at Algorithm 1's
    final (V, A), mean over ``draws`` batches of ``t.batch_size``: what the prox's threshold η_Aλ must clear for the
    useless entries to be zeroed (§3.3, Lemma E.3)."""
    gen, off = rng.generator(t.seed, "eval"), inst.Q[0] == 0
    linf = [
        float(preconditioned_gradients(V, A, sample(inst, t.batch_size, gen), inst.mu)[1][0][off].abs().max())
        for _ in range(draws)
    ]
    return float(np.mean(linf))


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


EXPERIMENT = Experiment(
    name="scb-convergence",
    description="Ren et al. Fig. 1: proximal Algorithm 1 vs vanilla SGD (large and small LR) on sparse contextual bigrams",
    figure="Ren et al. Fig. 1",
    wall="~1 min",  # default preset (58 s measured on one core: 7 runs on one axis)
    cpu_only="the SCB trainers run on an index sampler and small (N × N, T × N) matrices",
    headline=(
        "final.proximal.dist_A_norm",
        "final.sgd_large_lr.dist_A_norm",
        "final.sgd_small_lr.dist_A_norm",
        "proximal_beats_sgd_dist_A_norm",
    ),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
