"""The Gaussian-noise SGD simulation of Ren, Wang, Lee 2024 (docs/conventions.md#ren-10) for vocabularies too large for
real mini-batches: exact population gradients plus calibrated Gaussian noise (:func:`gaussian_noise_oracle`), the same
three stages, prox and normalisation, with and without ℓ1.

For each N, one instance with Q = ``task.Q`` and T = ``T_per_NQ``·N·Q trains three runs on one run axis with the same
noise draws: Algorithm 1 (proximal), vanilla SGD at η₁ (λ = 0, no rounding) and vanilla SGD at η₁/10. σ_V, σ_A are
calibrated by Monte Carlo at the truth (P, Q), σ_A scaled by ‖V − μ1ᵀ‖_μ/‖P − μ1ᵀ‖_μ during training (at V = μ1ᵀ the
A-gradient noise is exactly 0). Choices [P]: T_per_NQ = 10 (the proposal's T = 50NQ: ``--preset spec``); Stage 1 ends at
max(α, β) ≥ ρ; η₁ = 0.01 (0.03 diverged at N = 50); the noise model's B is ``train.batch_size`` = 64.

**Batch sweep**: at every N the proximal method also trains at each batch of ``sweep_batches`` (noise scaled by
B^{-1/2}, one run axis); ``stage1_exit_step`` (None if never) and ``min_batch_to_recover`` (the smallest B ending with
‖Ā − Q‖_μ ≤ ``target``; +inf if none) say how the batch Stage 1 needs grows with N: its signal is O(Q/T), the noise σ_V
B^{-1/2}, independent of T.

**After τ₁, in Thm 3.1's batches** (:class:`AfterTau1`; App. I: the prox "performs better … with a small batch size
(when the noise is large)"): before τ₁ Algorithm 1 *is* SGD at η₁, so the comparison is made after it. At each N of
``after_tau1.N``, Stage 1 runs once at a large batch B₁ until max(α, β) ≥ ``after_tau1.rho`` (τ₁); from there Algorithm
1 and SGD at η₁ train at that N's small batch B₂ on the same noise. Summary ``after_tau1.<N>``: τ₁ (+inf if not within
``stage1_cap``), both final ‖Ā − Q‖_μ and ``final_ratio``, Algorithm 1's over SGD's.

**Stage 2 in the theorem's regime** (:class:`Regime`; §3.3, Lemmas E.3–E.4): one more proximal run at ``regime.N``, T =
``regime.T`` (Assumption 2.1(d)) and a large effective batch; its summary ``regime`` holds the prox's zeroed and
negative-branch entries per Stage-2 step (of T·N) and the three hypotheses measured (:func:`_theorem_regime`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from inductionlab import plots, rng
from inductionlab.analysis.scaling import power_law_exponent
from inductionlab.config import check_schedule, check_seeds, require, set_here
from inductionlab.experiments.experiment import Experiment
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.scb import SCBConfig, random_instance
from inductionlab.theory.scb import gaussian_noise_oracle, noise_scales
from inductionlab.train import loop
from inductionlab.train.proximal import SCBTrainConfig, train_scb


@dataclass(frozen=True)
class Regime:
    """The Stage-2 run in the hypotheses of Thm 3.1's proof (§3.3; docs/conventions.md#ren-10 noise model) [P]:
    η_Aλ = η₂λ/K_P must exceed the useless entries' (1 − ρ)/T after the rounding and λ the ℓ∞ gradient noise, which
    at η₂ = η₁/10 needs T ≈ 10⁵; so η₂ = η₁ here and T = 20 000 (T/(NQ) ≈ 670)."""

    N: int = 10  # vocabulary size N
    T: int = 20_000  # context length T (Assumption 2.1(d): T ≥ poly(N, Q))
    batch: int = 100_000_000  # effective batch B of the noise model (Lemma E.3: ℓ∞ noise ≪ λ)
    lam: float = 1e-3  # λ of Stage 2 (between the ℓ∞ noise and the useful entries' signal, Lemma E.4)
    eta2: float = 0.01  # η₂ of Stage 2 (normalised: η_A = η₂/K_P)
    steps: int = 1500  # total steps; Stage 2 reaches αβ ≈ 1 by about step 1100
    eval_every: int = 20  # evaluation (and Stage-1 exit check) period
    calibration_samples: int = 2048  # Monte-Carlo samples for σ_V, σ_A (per-entry scales, T-independent)

    def __post_init__(self) -> None:
        require(self.N >= 2 and self.T >= 2, "regime.N", "needs N ≥ 2 and T ≥ 2")
        require(self.batch >= 1 and self.lam >= 0 and self.eta2 > 0, "regime.lam", "batch ≥ 1, λ ≥ 0, η₂ > 0")
        require(self.steps >= 1 and self.eval_every >= 1, "regime.steps", "steps and eval_every ≥ 1")
        require(self.calibration_samples >= 2, "regime.calibration_samples", "must be ≥ 2")
        check_schedule("regime.steps", self.steps, "regime.eval_every", self.eval_every)


@dataclass(frozen=True)
class AfterTau1:
    """Thm 3.1's two batches for App. I's comparison after τ₁ [P] (module docstring): Stage 1 at B₁ (poly(T); the
    noise model costs the same at any B), Stage 2 compared at B₂, where SGD(η₁)'s noise floor is large."""

    N: tuple[int, ...] = (10, 50)  # the vocabulary sizes compared (those of N_values that the run trains)
    # B₂ at each N of ``N``: where SGD(η₁) ends near 0.1 (calibration seeds, docs/conventions.md#calibration)
    batch: tuple[int, ...] = (32, 256)
    stage1_batch: int = 65_536  # B₁ of the shared Stage 1
    stage1_cap: int = 3000  # Stage 1's steps at most (τ₁ +inf beyond)
    rho: float = 0.1  # τ₁: the first evaluation with max(α, β) ≥ rho
    steps: int = 6000  # steps after τ₁

    def __post_init__(self) -> None:
        n, b = self.N, self.batch
        require(len(set(n)) == len(n) >= 1 and min(n) >= 2 and self.rho > 0, "after_tau1.N", "distinct N ≥ 2, ρ > 0")
        require(len(b) == len(n), "after_tau1.batch", "give one B₂ per N of after_tau1.N")
        require(min(self.stage1_batch, *b, self.stage1_cap, self.steps) >= 1, "after_tau1.batch", "must be ≥ 1")

    def batch_at(self, N: int) -> int:
        """B₂ at vocabulary size ``N`` (one of ``N``)."""
        return self.batch[self.N.index(N)]


@dataclass(frozen=True)
class Config:
    task: SCBConfig = field(default_factory=SCBConfig)
    train: SCBTrainConfig = field(
        default_factory=lambda: SCBTrainConfig(
            eta1=0.01, eta2=0.001, steps=6000, stage1_steps=6000, stage1_end="signal", rho=0.1, eval_every=250
        )
    )
    N_values: tuple[int, ...] = (10, 20, 50)  # vocabulary sizes N, one instance each
    T_per_NQ: int = 10  # context length T = T_per_NQ·N·Q
    T_fixed: int = 0  # 0: T = T_per_NQ·N·Q; else this T at every N (the control of ren-noise-stage1-poly)
    calibration_samples: int = 8192  # Monte-Carlo samples calibrating the noise scales σ_V, σ_A
    small_lr_factor: float = 0.1  # the small-rate SGD run uses η₁ × this
    # batch sizes B of the proximal batch sweep (noise ∝ B^{-1/2})
    sweep_batches: tuple[int, ...] = (16, 64, 256, 1024, 4096)
    target: float = 0.05  # a batch recovers Q if the final ‖Ā − Q‖_μ ≤ target
    regime: Regime = field(default_factory=Regime)  # the Stage-2 run in the theorem's regime
    after_tau1: AfterTau1 = field(default_factory=AfterTau1)  # after τ₁ (ren-noise-prox-n10, ren-noise-n50)
    # one seed (no run axis), for every random draw; for several: sweep --n-seeds K.  Moved from 0 when ren-noise-n50
    # became the comparison after τ₁ (docs/conventions.md#calibration: 0–3 were seen under the old one)
    seeds: tuple[int, ...] = (100,)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        set_here(self.train, "train", {"method": "proximal"}, "each compared method")
        set_here(self.train, "train", {"seed": 0}, "seeds (each data draw its own batches)")
        require(self.T_fixed == 0 or self.T_fixed >= self.task.Q, "T_fixed", "0, or a context length T ≥ Q")
        set_here(self.task, "task", {"N": 5, "T": 500}, "N_values / T_per_NQ")
        require(len(self.N_values) >= 1 and min(self.N_values) >= 2, "N_values", "give vocabulary sizes ≥ 2")
        require(
            self.T_per_NQ >= 1 and self.calibration_samples >= 2, "T_per_NQ", "T_per_NQ ≥ 1, calibration_samples ≥ 2"
        )
        require(0 < self.small_lr_factor < 1, "small_lr_factor", "must lie in (0, 1)")
        require(
            len(self.sweep_batches) >= 1 and min(self.sweep_batches) >= 1,
            "sweep_batches",
            "give at least one batch size, each ≥ 1",
        )
        require(self.target > 0, "target", "must be > 0")
        for n in ("stage1_cap", "steps"):
            check_schedule(f"after_tau1.{n}", getattr(self.after_tau1, n), "train.eval_every", self.train.eval_every)


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"N_values": "10,20"},
    "spec": {"T_per_NQ": 50},
    "n10": {"N_values": "10", "sweep_batches": "64"},
    "n50": {"N_values": "50"},
    "smoke": {
        "N_values": (3, 4),
        "T_per_NQ": 3,
        "train.steps": 40,
        "train.stage1_steps": 40,
        "train.eval_every": 20,
        "calibration_samples": 64,
        "sweep_batches": "16,256",
        "regime.T": 60,
        "regime.steps": 600,
        "regime.calibration_samples": 64,
        "after_tau1.N": "3,4",
        "after_tau1.batch": "64,256",
        "after_tau1.stage1_cap": 40,
        "after_tau1.rho": 0.02,
        "train.rho": 0.02,  # Algorithm 1's own rule, so that it leaves Stage 1 at τ₁ here too
        "after_tau1.steps": 40,
    },
}


def _drawn(cfg: Config) -> SCBTrainConfig:
    """``train`` with the seed's data stream: each data draw its own noise (docs/conventions.md#seeds)."""
    return replace(cfg.train, seed=rng.derive(cfg.seeds[0]))


def run(cfg: Config, ctx: RunContext) -> Results:
    tables, sweeps, after = [], [], []
    summary: dict[str, Any] = {"final": {}, "sigma_V": {}, "sigma_A": {}, "after_tau1": {}}
    t = _drawn(cfg)
    methods = {
        "proximal": replace(t, method="proximal"),
        "sgd_large_lr": replace(t, method="sgd"),
        "sgd_small_lr": replace(t, method="sgd", eta1=t.eta1 * cfg.small_lr_factor),
    }
    for N in cfg.N_values:
        task = replace(cfg.task, N=N, T=cfg.T_fixed or cfg.T_per_NQ * N * cfg.task.Q)
        inst = random_instance(task, 1, rng.numpy_generator(cfg.seeds[0], N))
        sigma_V, sigma_A = noise_scales(inst.P, inst.Q, inst, cfg.calibration_samples, rng.generator(t.seed, "eval"))
        oracle = gaussian_noise_oracle(sigma_V, sigma_A, t.batch_size)
        _, _, m = train_scb(list(methods.values()), inst, task.Q, ctx.child(f"N{N}"), oracle=oracle)
        m = m.assign(N=N, T=task.T, method=np.asarray(list(methods))[m.run])
        tables.append(m)
        final = m[m.step == m.step.max()].set_index("method")
        summary["final"][N] = {
            k: {c: float(final.loc[k, c]) for c in ("dist_A_norm", "dist_V_star", "loss", "zeroed")} for k in methods
        }
        summary["sigma_V"][N], summary["sigma_A"][N] = float(sigma_V[0]), float(sigma_A[0])
        sweeps.append(_batch_sweep(cfg, inst, sigma_V[0], sigma_A[0], ctx.child(f"N{N}_batches")).assign(N=N))
        if N in cfg.after_tau1.N:
            a, summary["after_tau1"][N] = _after_tau1(cfg, inst, sigma_V[0], sigma_A[0], ctx.child(f"N{N}_after_tau1"))
            after.append(a.assign(N=N))
    summary["proximal_best_dist_A_norm"] = {
        N: bool(all(d["proximal"]["dist_A_norm"] <= d[k]["dist_A_norm"] for k in methods))
        for N, d in summary["final"].items()
    }
    sweep = pd.concat(sweeps, ignore_index=True)
    summary.update(_sweep_summary(sweep, cfg.target), target=cfg.target)
    regime, summary["regime"] = _theorem_regime(cfg, ctx.child("regime"))
    out = {"metrics": pd.concat(tables, ignore_index=True), "batch_sweep": sweep, "regime": regime}
    out |= {"after_tau1": pd.concat(after, ignore_index=True)} if after else {}
    return Results(out, summary)


class _AtCrossing(loop.Hook):
    """The parameters at the first evaluation with max(α, β) ≥ ρ (one run): τ₁ of Algorithm 1's signal rule."""

    def __init__(self, rho: float):
        self.rho = rho
        self.reset()

    def reset(self) -> None:
        self.step: int | None = None
        self.params: torch.Tensor | None = None
        self.seen: dict[int, torch.Tensor] = {}  # the parameters of the evaluations not yet gathered

    def before_evaluate(self, state: loop.LoopState) -> None:
        if self.step is None:
            self.seen[state.step] = state.params.clone()

    def on_evaluate(self, state: loop.LoopState, block: dict[str, np.ndarray]) -> None:
        step, params = int(block["step"][0]), self.seen.pop(int(block["step"][0]), None)
        if self.step is None and params is not None and float(np.maximum(block["alpha"], block["beta"])[0]) >= self.rho:
            self.step, self.params, self.seen = step, params, {}

    def state_dict(self) -> dict:
        return {"step": self.step, "params": self.params}

    def load_state_dict(self, state: dict) -> None:
        self.step, self.params = state["step"], state["params"]


def _after_tau1(cfg: Config, inst, sigma_V: torch.Tensor, sigma_A: torch.Tensor, ctx: RunContext) -> tuple:
    """App. I's comparison after τ₁ in Thm 3.1's batches (:class:`AfterTau1`) at the instance's N: SGD at η₁ and
    batch B₁ until τ₁, then from that state Algorithm 1 and SGD(η₁) at that N's B₂ on the same noise: their metrics
    (``arm``: stage1 / proximal / sgd) and the summary."""
    a, t, N, T = cfg.after_tau1, _drawn(cfg), inst.N, inst.T
    hook = _AtCrossing(a.rho)
    s1 = replace(t, method="sgd", steps=a.stage1_cap, stage1_steps=a.stage1_cap)
    oracle = gaussian_noise_oracle(sigma_V, sigma_A, a.stage1_batch)
    m1 = train_scb(s1, inst, cfg.task.Q, ctx.child(f"{ctx.name}_stage1"), oracle=oracle, hooks=[hook])[2].assign(
        arm="stage1"
    )
    out: dict[str, Any] = {"stage1_batch": a.stage1_batch, "batch": a.batch_at(N), "stage1_exit_step": math.inf}
    if hook.params is None or hook.step is None:
        return m1, out | {"final": None, "final_ratio": None}
    tau1 = hook.step
    init = (hook.params[:, : N * N].reshape(1, N, N), hook.params[:, N * N :].reshape(1, T, N))
    s2 = replace(t, steps=a.steps, stage1_steps=a.steps)  # Algorithm 1's rule ends Stage 1 at its first evaluation
    runs = [replace(s2, method="proximal"), replace(s2, method="sgd")]
    oracle = gaussian_noise_oracle(sigma_V, sigma_A, a.batch_at(N))
    m2 = train_scb(runs, inst, cfg.task.Q, ctx.child(f"{ctx.name}_stage2"), init=init, oracle=oracle)[2]
    m2 = m2.assign(arm=np.asarray(["proximal", "sgd"])[m2.run], step=m2.step + tau1)
    final = m2[m2.step == m2.step.max()].set_index("arm").dist_A_norm
    out |= {"stage1_exit_step": tau1, "final": {k: float(final[k]) for k in ("proximal", "sgd")}}
    out["final_ratio"] = out["final"]["proximal"] / out["final"]["sgd"]
    switched = m2[(m2.arm == "proximal") & (m2.stage == 2)].step
    # the evaluation that switched it (the one before its first Stage-2 row), after τ₁: 0 at τ₁ itself
    out["proximal_switch_step"] = int(switched.min()) - t.eval_every - tau1 if len(switched) else math.inf
    return pd.concat([m1, m2], ignore_index=True), out


def _theorem_regime(cfg: Config, ctx: RunContext) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Algorithm 1 in the hypotheses of §3.3 / Lemmas E.3–E.4 (:class:`Regime`): the metrics and the prox's zeroed
    and negative-branch entries per Stage-2 step (of T·N), with the three hypotheses measured at the rounding:
    ``useless_over_threshold`` = ((1 − α)/T)/(η_Aλ) (< 1), ``noise_linf_over_lambda`` (< 1: the noise model's largest
    ℓ∞ noise over Stage 2, σ_A‖V − μ1ᵀ‖_μ K_P^{-1/2} (B μ_min)^{-1/2} √(2 ln 2TN), over λ) and ``signal_over_lambda``
    = K_Pβ(1 − αβ)q_min/λ (> 1: the useful entries still grow)."""
    r = cfg.regime
    task = replace(cfg.task, N=r.N, T=r.T)
    inst = random_instance(task, 1, rng.numpy_generator(cfg.seeds[0], r.N))
    t = replace(_drawn(cfg), stage1_end="signal", steps=r.steps, stage1_steps=r.steps, eval_every=r.eval_every)
    sigma_V, sigma_A = noise_scales(inst.P, inst.Q, inst, r.calibration_samples, rng.generator(t.seed, "eval"))
    t = replace(t, eta2=r.eta2, lam=r.lam)
    _, _, m = train_scb(t, inst, task.Q, ctx, oracle=gaussian_noise_oracle(sigma_V, sigma_A, r.batch))
    TN, K_P = r.T * r.N, float(inst.K_P[0])
    stage2 = m[m.stage == 2]
    if stage2.empty:
        return m, {"stage1_exit_step": math.inf, "zeroed_fraction": None, "negative_fraction": None}
    start = m[m.step == stage2.step.min() - r.eval_every].iloc[0]  # the evaluation that ended Stage 1
    noise_scale = float(sigma_A[0]) * np.sqrt((stage2.beta**2 + stage2.delta_V**2 / K_P).max())
    noise_linf = noise_scale * np.sqrt(2 * np.log(2 * TN) / (r.batch * float(inst.mu.min())))
    q_min = float(inst.Q[inst.Q > 0].min())
    per_lambda = {  # a hypothesis measured against λ (None at λ = 0)
        "useless_over_threshold": (1 - start.alpha) / r.T / (r.eta2 / K_P * r.lam) if r.lam else None,
        "noise_linf_over_lambda": noise_linf / r.lam if r.lam else None,
        "signal_over_lambda": K_P * start.beta * (1 - start.alpha * start.beta) * q_min / r.lam if r.lam else None,
    }
    return m, {
        "stage1_exit_step": int(start.step),
        "alpha_at_exit": float(start.alpha),
        "beta_at_exit": float(start.beta),
        "zeroed_fraction": float(stage2.zeroed.mean() / TN),
        "negative_fraction": float(stage2.negative.mean() / TN),
        "useless_share": 1 - cfg.task.Q / r.T,
        **{k: None if v is None else float(v) for k, v in per_lambda.items()},
        "final_dist_A_norm": float(m.dist_A_norm.iloc[-1]),
    }


def _batch_sweep(cfg: Config, inst, sigma_V: torch.Tensor, sigma_A: torch.Tensor, ctx: RunContext) -> pd.DataFrame:
    """The proximal method and vanilla SGD at η₁ (λ = 0, no rounding: the comparison of App. I) at each batch of
    ``sweep_batches`` on one run axis (noise scaled by B^{-1/2}): their metrics with ``batch`` and ``method``."""
    batches = torch.tensor(cfg.sweep_batches * 2, dtype=inst.P.dtype)
    oracle = gaussian_noise_oracle(sigma_V / batches.sqrt(), sigma_A / batches.sqrt(), 1)
    k = len(cfg.sweep_batches)
    runs = [replace(_drawn(cfg), method="proximal")] * k + [replace(_drawn(cfg), method="sgd")] * k
    _, _, m = train_scb(runs, inst, cfg.task.Q, ctx, oracle=oracle)
    batch, method = np.asarray(cfg.sweep_batches * 2)[m.run], np.asarray(["proximal"] * k + ["sgd"] * k)[m.run]
    return m.assign(batch=batch, method=method, samples=m.step * batch)


def _smallest(last: pd.Series, target: float) -> float:
    """The smallest batch whose final ‖Ā − Q‖_μ ≤ target; +inf if none (docs/conventions.md#never)."""
    recovered = [int(b) for b, d in last.items() if d <= target]
    return min(recovered) if recovered else math.inf


def batch_ratio(prox: float, sgd: float, largest: int) -> float | None:
    """Algorithm 1's smallest recovering batch over SGD's (App. I's comparison): where SGD recovers at no batch of
    the sweep its own is above ``largest``, so prox / largest bounds the ratio from above — a value only where that
    bound is below 1 (None: undefined); +inf where Algorithm 1 recovers at none and SGD does."""
    if math.isinf(prox):
        return None if math.isinf(sgd) else math.inf
    return prox / sgd if math.isfinite(sgd) else (prox / largest if prox < largest else None)


def _sweep_summary(sweep: pd.DataFrame, target: float) -> dict:
    """Per N and batch: the Stage-1 exit step and the final ‖Ā − Q‖_μ of the proximal method; per N the smallest
    batch that recovers Q for it and for SGD, their ratio (:func:`batch_ratio`), the best final ‖Ā − Q‖_μ over the
    batches, and the log-log slope of the proximal smallest batch against N (None with fewer than two N)."""
    exit_step, final, smallest, smallest_sgd, ratio, best = {}, {}, {}, {}, {}, {}
    for N, g in sweep.groupby("N"):
        last_all = g[g.step == g.step.max()]
        last = last_all[last_all.method == "proximal"].set_index("batch").dist_A_norm
        g = g[g.method == "proximal"]
        in_stage2 = g[g.stage == 2].groupby("batch").step.min()
        exit_step[int(N)] = {int(b): (int(in_stage2[b]) if b in in_stage2 else None) for b in last.index}
        final[int(N)] = {int(b): float(d) for b, d in last.items()}
        smallest[int(N)] = _smallest(last, target)
        smallest_sgd[int(N)] = _smallest(last_all[last_all.method == "sgd"].set_index("batch").dist_A_norm, target)
        ratio[int(N)] = batch_ratio(smallest[int(N)], smallest_sgd[int(N)], int(last.index.max()))
        best[int(N)] = float(last.min())
    found = {N: b for N, b in smallest.items() if math.isfinite(b)}
    slope = power_law_exponent(list(found), list(found.values()))  # NaN with fewer than two
    return {
        "stage1_exit_step": exit_step,
        "final_dist_A_norm_by_batch": final,
        "min_batch_to_recover": smallest,
        "min_batch_to_recover_sgd": smallest_sgd,
        "min_batch_over_sgd": ratio,
        "best_final_dist_A_norm": best,
        "min_batch_log_log_slope": None if np.isnan(slope) else slope,
    }


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics = results.tables["metrics"]
    Ns = sorted(metrics.N.unique())
    fig, axes = plots.subplots(len(Ns) + 1, width=3.8, height=3.2)
    for ax, N in zip(axes, Ns):
        sub = metrics[metrics.N == N]
        for method, g in sub.groupby("method", sort=False):
            ax.semilogy(g.step, g.dist_A_norm, label=method)
        ax.set_title(f"N = {N}, T = {int(sub['T'].iloc[0])}, B = 64 (Gaussian-noise SGD)", fontsize=9)
        ax.set_xlabel("step"), ax.set_ylabel(r"$\|\bar A - Q\|_\mu$ (normalised)")
    axes[0].legend(fontsize=7)
    sweep = results.tables["batch_sweep"]
    ax = axes[-1]
    for (N, method), g in sweep.groupby(["N", "method"]):
        last = g[g.step == g.step.max()].sort_values("batch")
        style = {"marker": "o"} if method == "proximal" else {"marker": "x", "ls": "--", "alpha": 0.6}
        ax.loglog(last.batch, last.dist_A_norm, **style, color=f"C{Ns.index(N)}", label=f"N = {N}, {method}")
    target = results.summary["target"]
    ax.axhline(target, color="0.5", ls=":", lw=1, label=f"target {target:g}")
    ax.set_xlabel("batch B (noise ∝ $B^{-1/2}$)"), ax.set_ylabel(r"final $\|\bar A - Q\|_\mu$")
    ax.set_title("Batch that each method needs (proximal: o, SGD: x)", fontsize=9)
    ax.legend(fontsize=7)
    batches = sorted(sweep.batch.unique())
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.minorticks_off()
    return [plots.save(fig, Path(out_dir) / "scb_noise_sim.png")]


EXPERIMENT = Experiment(
    name="scb-noise-sim",
    description="Ren et al. §5: Gaussian-noise SGD simulation for large N — proximal vs vanilla SGD",
    figure="Ren et al. App. I (noise)",
    wall="~3 min",  # default, one core beside another run: 186 s (2026-12-02, Intel Xeon; the fused SCB loops)
    cpu_only="the SCB trainers run on an index sampler and small (N × N, T × N) matrices",
    headline=("proximal_best_dist_A_norm",),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
