"""Section 4 of Ren, Wang, Lee 2024 (docs/conventions.md#ren-8): transfer learning removes the poly(T) first stage.

For each context length T, ``n_instances`` random SCB instances train on the run axis twice:

* **scratch** — Algorithm 1 from V₀ = μ1ᵀ, A₀ = 11ᵀ/T: Stage 1 (λ = 0, η₁) until max(α, β) ≥ ρ, rounding,
  Stage 2 (proximal, η₂, λ);
* **transfer** — a pretraining task P̄ sharing μ with P, V₀ = μ1ᵀ + γ(P̄ − μ1ᵀ), one gradient step on A from
  ``transfer_samples`` samples that lands at α₁ = α* (Lemma H.2), the rounding threshold, then Stage 2.

Samples to target: the first logged sample count at which the normalised attention is within ``target`` of
Q (‖Ā − Q‖_μ, docs/conventions.md#ren-10 (b)); the transfer count includes its one-step batch.  ``None`` in the summary: not
reached within the budget (or diverged — listed under ``diverged``).

Choices [P] (the paper leaves them open): P̄ = ρ_mix P + (1 − ρ_mix) D_μPᵀD_μ⁻¹ (P mixed with its time
reversal, which shares μ; κ = ⟨P̄ − μ1ᵀ, P − μ1ᵀ⟩_μ is reported), V̄ = P̄ (pretraining assumed solved), γ = 0.5,
α* = 1, a fixed transfer batch (the theory's poly(N, Q)·log T, with log T taken as constant over the T grid).
η₁ = 0.01: at 0.03 Stage 1 diverged at T = 4000 — the largest stable η₁ shrinks with T, which is the
mechanism of the poly(T) cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from matplotlib.ticker import NullFormatter

from inductionlab import plots
from inductionlab.analysis.claims import Between, Claim
from inductionlab.config import check_seeds, require
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.scb import SCBConfig, mu_inner, random_instance
from inductionlab.train.loop import NonFiniteError
from inductionlab.train.proximal import SCBTrainConfig, reversal, train_scb, transfer_start

NAME = "scb-transfer"
DESCRIPTION = "Ren et al. Section 4: samples to recover Q from scratch (grows with T) vs after transfer (flat)"
FIGURE = "Ren et al. §4 (transfer)"
WALL = "~3 min"  # default preset, 2 cores
CPU_ONLY = "the SCB trainers run on an index sampler and small (N × N, T × N) matrices"


@dataclass(frozen=True)
class Config:
    task: SCBConfig = field(default_factory=SCBConfig)
    train: SCBTrainConfig = field(
        default_factory=lambda: SCBTrainConfig(
            eta1=0.01, eta2=0.003, steps=4000, stage1_steps=4000, stage1_end="signal", rho=0.1, eval_every=50
        )
    )
    T_values: tuple[int, ...] = (250, 1000, 4000)
    n_instances: int = 4
    target: float = 0.05
    transfer_samples: int = 65_536
    transfer_steps: int = 1000
    gamma: float = 0.5
    alpha_target: float = 1.0
    pretrain_mix: float = 0.5
    seeds: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        require(
            len(self.T_values) >= 2 and min(self.T_values) >= self.task.Q,
            "T_values",
            f"give ≥ 2 context lengths, each ≥ Q = {self.task.Q}",
        )
        require(
            self.n_instances >= 1 and self.transfer_samples >= 1 and self.transfer_steps >= 1,
            "n_instances",
            "n_instances, transfer_samples and transfer_steps must be ≥ 1",
        )
        require(self.target > 0, "target", "must be > 0")
        require(0 < self.pretrain_mix <= 1, "pretrain_mix", "must lie in (0, 1]")


CONFIG = Config()
PRESETS = {
    "quick": {"T_values": "250,1000", "n_instances": 2},
    "smoke": {
        "T_values": (20, 40),
        "n_instances": 2,
        "train.steps": 40,
        "train.stage1_steps": 40,
        "train.eval_every": 10,
        "transfer_samples": 256,
        "transfer_steps": 20,
    },
}

CLAIMS = (
    Claim(
        "ren-s4-scratch-grows",
        "ren",
        "§4, Thm 4.1",
        "From scratch, the samples needed grow with T",
        "log_log_slope.scratch",
        "poly(T): slope > 0",
        Between(lo=0.05),
    ),
    Claim(
        "ren-s4-transfer-flat",
        "ren",
        "§4, Thm 4.1",
        "After transfer, the samples needed do not grow with T (only log T)",
        "log_log_slope.transfer",
        "flat: slope ≈ 0",
        Between(-0.1, 0.1),
    ),
)


def _first_hit(metrics: pd.DataFrame, target: float, offset: int) -> list[float]:
    """Per run: the first logged sample count with ‖Ā − Q‖_μ ≤ target (NaN if never)."""
    hits = metrics[metrics.dist_A_norm <= target].groupby("run").samples.min() + offset
    return [float(hits.get(r, np.nan)) for r in sorted(metrics.run.unique())]


def run(cfg: Config, ctx: RunContext) -> Results:
    tables, found, kappa, diverged = [], {"scratch": {}, "transfer": {}}, {}, []
    for T in cfg.T_values:
        inst = random_instance(replace(cfg.task, T=T), cfg.n_instances, np.random.default_rng([cfg.seeds[0], T]))
        P_bar = cfg.pretrain_mix * inst.P + (1 - cfg.pretrain_mix) * reversal(inst.P, inst.mu)
        kappa[T] = mu_inner(P_bar - inst.mu.unsqueeze(-1), inst.P - inst.mu.unsqueeze(-1), inst.mu).tolist()
        V0, A1, beta0 = transfer_start(
            inst,
            P_bar,
            cfg.gamma,
            cfg.alpha_target,
            cfg.transfer_samples,
            torch.Generator().manual_seed(cfg.train.seed + 1),
        )
        transfer_cfg = replace(cfg.train, steps=cfg.transfer_steps, stage1_steps=0, stage1_end="steps")
        _, _, m_tr = train_scb(transfer_cfg, inst, cfg.task.Q, ctx.child(f"transfer_T{T}"), init=(V0, A1))
        found["transfer"][T] = _first_hit(m_tr, cfg.target, cfg.transfer_samples)
        tables.append(m_tr.assign(T=T, method="transfer", samples=m_tr.samples + cfg.transfer_samples))
        try:
            _, _, m_sc = train_scb(cfg.train, inst, cfg.task.Q, ctx.child(f"scratch_T{T}"))
        except NonFiniteError:
            diverged.append(T)
            found["scratch"][T] = [np.nan] * cfg.n_instances
            continue
        found["scratch"][T] = _first_hit(m_sc, cfg.target, 0)
        tables.append(m_sc.assign(T=T, method="scratch"))
    median = {
        k: {T: (None if np.isnan(v).any() else float(np.median(v))) for T, v in d.items()} for k, d in found.items()
    }
    summary = {
        "samples_to_target": median,
        "samples_to_target_per_instance": found,
        "kappa": kappa,
        "diverged_scratch_T": diverged,
        "log_log_slope": {},
    }
    for method, d in median.items():
        pts = [(T, n) for T, n in d.items() if n is not None]
        if len(pts) >= 2:
            summary["log_log_slope"][method] = float(np.polyfit(*np.log(np.asarray(pts, float)).T, 1)[0])
    return Results({"metrics": pd.concat(tables, ignore_index=True)}, summary)


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics, s = results.tables["metrics"], results.summary
    fig, (ax, ax2) = plots.subplots(2, width=4.6, height=3.6)
    colors = {"scratch": "#d95f02", "transfer": "#1b9e77"}
    for method, per_T in s["samples_to_target_per_instance"].items():
        Ts = sorted(per_T, key=float)
        for T in Ts:
            ax.scatter(
                [float(T)] * len(per_T[T]), [plots.num(v) for v in per_T[T]], color=colors[method], alpha=0.4, s=12
            )
        med = [plots.num(s["samples_to_target"][method][T]) for T in Ts]
        slope = s["log_log_slope"].get(method)
        ax.plot(
            [float(T) for T in Ts],
            med,
            "o-",
            color=colors[method],
            label=f"{method} (median; slope {slope:.2f})" if slope is not None else method,
        )
    if any(v is not None for d in s["samples_to_target"].values() for v in d.values()):
        ax.set_xscale("log"), ax.set_yscale("log")
        T_all = sorted({float(T) for d in s["samples_to_target"].values() for T in d})
        ax.set_xticks(T_all, [f"{T:g}" for T in T_all])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("context length T"), ax.set_ylabel("samples until ‖Ā − Q‖_μ ≤ target")
    ax.set_title("scratch pays a T-dependent first stage; transfer does not", fontsize=9)
    ax.legend(fontsize=8)
    T_max = metrics["T"].max()
    for (method, run), g in metrics[metrics["T"] == T_max].groupby(["method", "run"]):
        ax2.plot(g.samples, g.dist_A_norm, color=colors[method], alpha=0.7, label=method if run == 0 else None)
    ax2.set_yscale("log"), ax2.set_xlabel("samples"), ax2.set_ylabel("‖Ā − Q‖_μ (normalised)")
    ax2.set_title(f"T = {T_max}", fontsize=9)
    ax2.legend(fontsize=8)
    return [plots.save(fig, Path(out_dir) / "scb_transfer.png")]
