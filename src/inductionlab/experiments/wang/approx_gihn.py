"""Theorem 4.4 (Wang et al., docs/conventions.md#wang-4-4): with a layer-1 FFN of total width m, a two-layer transformer
approximates GIH_n with an error Õ(C/H^q + m^{−γ/(2γ+1)}) when g has a well-behaved POD (σ_k ≲ k^{−(1+γ)}).

Here g is the RBF similarity.  Its POD comes from an SVD on a Gauss–Legendre grid over the enlarged patch box
[−radius, radius]^{(n−1)d}; for every total width m and number of bases K, each of the 2K bases gets
m/(2K) random-ReLU neurons fitted by least squares (:func:`~inductionlab.theory.constructions.gihn_construction`).
Layer-1 attention uses enough heads that its error is at round-off, so the FFN and the POD truncation are
what is measured.  Reported: max ‖GIH_n − TF_{−1}‖₂ over random sequences for each (m, K), the best K per m,
the fitted decay of the best error in m beside the theorem's exponent γ/(2γ+1) (γ fitted to σ_k), and the
best K against the optimum K* ∝ m^{1/(2γ+1)} of step IV.  The theorem's other term, C_{q,n}/H^q, is measured
at the widest m and its best K with ``heads_sweep`` heads per group: large with one head, then level at the
FFN's floor.  ``copy_previous`` False zeroes layer 1's W_V (the negative control, docs/conventions.md#controls).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from inductionlab import plots, rng
from inductionlab.config import check_seeds, require
from inductionlab.experiments.experiment import Experiment
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.induction import generalized_induction_head, rbf, sample_tokens
from inductionlab.theory.approximation import pod, rbf_numpy
from inductionlab.theory.constructions import approximation_errors, gihn_construction, left_pad


@dataclass(frozen=True)
class Config:
    """GIH_n with g(u, v) = scale·exp(−‖u − v‖²/(2 bandwidth²)); tokens uniform on [−1, 1]^d."""

    n: int = 2  # order n of GIH_n (patches of n − 1 tokens), ≥ 2
    d: int = 1  # token dimension d (tokens uniform on [−1, 1]^d)
    bandwidth: float = 0.5  # RBF similarity g(u, v) = scale·exp(−‖u − v‖²/(2·bandwidth²)): its bandwidth
    scale: float = 4.0  # the RBF similarity's scale
    # total FFN widths m of the construction (Theorem 4.4's m^{−γ/(2γ+1)} term)
    widths: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
    bases: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 10)  # numbers K of POD bases tried at each width (needs m ≥ 2K)
    heads_per_group: int = 8  # layer-1 heads per shift at every (m, K) (H = (n − 1)·this)
    heads_sweep: tuple[int, ...] = (1, 2, 3, 4, 6, 8)  # heads per group at the widest m and its best K (the H term)
    radius: float = 1.05  # the enlarged box the POD and the FFN fits cover
    pod_nodes: int = 48  # Gauss–Legendre nodes per patch coordinate
    gamma_fit_bases: int = 8  # σ_1..σ_k used to fit γ
    L: int = 40  # sequence length L, ≥ n + 1
    pad: int = 40  # zero tokens padded on the left (finite-prefix normalisation, wang-a9)
    n_samples: int = 128  # sequences on which the maximum error is measured
    seeds: tuple[int, ...] = (0,)  # one seed (no run axis), for every random draw; for several: sweep --n-seeds K
    copy_previous: bool = True  # False: layer 1's value matrices zeroed, it copies nothing (the negative control)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        require(self.n >= 2 and self.d >= 1, "n", f"needs n ≥ 2 and d ≥ 1, got n={self.n}, d={self.d}")
        require(self.bandwidth > 0 and self.radius >= 1, "bandwidth", "needs bandwidth > 0 and radius ≥ 1")
        require(min(self.bases) >= 1 and min(self.widths) >= 2, "bases", "needs K ≥ 1 and widths ≥ 2")
        require(self.L >= self.n + 1, "L", f"GIH_n needs L ≥ n + 1 = {self.n + 1}")
        require(
            2 <= self.gamma_fit_bases <= self.pod_nodes ** ((self.n - 1) * self.d),
            "gamma_fit_bases",
            "must be ≥ 2 and at most the number of grid points",
        )
        require(self.n_samples >= 1 and self.pad >= 0, "n_samples", "needs n_samples ≥ 1 and pad ≥ 0")
        require(len(self.heads_sweep) >= 2 and min(self.heads_sweep) >= 1, "heads_sweep", "needs ≥ 2 values ≥ 1")


CONFIG = Config()
PRESETS = {
    "quick": {},  # the default already takes about a minute
    "smoke": {
        "widths": "8,32",
        "bases": "1,2",
        "pod_nodes": 16,
        "L": 8,
        "n_samples": 8,
        "pad": 8,
        "heads_per_group": 4,
        "heads_sweep": "1,4",
    },
}


def _error(cfg: Config, decomposition, x: torch.Tensor, m: int, K: int, heads_per_group: int) -> torch.Tensor:
    """‖GIH_n − TF_{−1}‖₂ per sequence for the construction with total FFN width m, K bases and the given heads
    per group (layer 1's W_V zeroed when ``copy_previous`` is False, the negative control)."""
    model_cfg, params = gihn_construction(
        decomposition,
        K,
        m // (2 * K),
        cfg.n,
        cfg.d,
        heads_per_group,
        cfg.radius,
        cfg.pad,
        rng.numpy_generator(cfg.seeds[0], m, K),
    )
    if not cfg.copy_previous:
        params["blocks.0.attn.W_V"].zero_()
    similarity = rbf(cfg.bandwidth, cfg.scale)
    return approximation_errors(
        model_cfg,
        params,
        lambda t: generalized_induction_head(t[..., cfg.pad :, :], cfg.n, similarity),
        left_pad(x, cfg.pad),
    )


def run(cfg: Config, ctx: RunContext) -> Results:
    m_dim = (cfg.n - 1) * cfg.d
    decomposition = pod(rbf_numpy(cfg.bandwidth, cfg.scale), m_dim, cfg.radius, cfg.pod_nodes)
    x = sample_tokens((cfg.n_samples, cfg.L, cfg.d), "uniform", rng.generator(cfg.seeds[0]))
    rows = []
    grid = [(m, K) for m in cfg.widths for K in cfg.bases if m >= 2 * K]
    for m, K in tqdm(grid, desc="approx-gihn", disable=not ctx.progress):
        err = _error(cfg, decomposition, x, m, K, cfg.heads_per_group)
        rows.append(
            {
                "m": m,
                "K": K,
                "max_error": float(err.max()),
                "mean_error": float(err.mean()),
                "truncation": float(decomposition.sigma[K:].sum()),
            }
        )
    table = pd.DataFrame(rows)
    widest = table[table.m == table.m.max()]
    m, K = int(widest.m.iloc[0]), int(widest.K[widest.max_error.idxmin()])
    heads = pd.DataFrame(
        [
            {"heads_per_group": h, "H": (cfg.n - 1) * h, "m": m, "K": K, "max_error": float(err.max())}
            for h in cfg.heads_sweep
            for err in [_error(cfg, decomposition, x, m, K, h)]
        ]
    )
    sigma = pd.DataFrame({"k": np.arange(1, len(decomposition.sigma) + 1), "sigma": decomposition.sigma})
    summary = _summary(table, decomposition.decay_exponent(cfg.gamma_fit_bases)) | _heads_summary(heads)
    return Results({"errors": table, "pod": sigma, "heads": heads}, summary)


def _heads_summary(heads: pd.DataFrame) -> dict:
    """The H term of Theorem 4.4 at the widest m: the error by H, and the error with the fewest heads over that
    with the most (C_q/H^q + the FFN floor: large, then level)."""
    errors = heads.set_index("H").max_error
    return {
        "error_by_H": {str(h): float(e) for h, e in errors.items()},
        "error_fewest_over_most_heads": float(errors.iloc[0] / errors.iloc[-1]),
    }


def _summary(table: pd.DataFrame, gamma: float) -> dict:
    best = table.loc[table.groupby("m").max_error.idxmin()]
    rate = gamma / (2 * gamma + 1)
    fit = float(-np.polyfit(np.log(best.m), np.log(best.max_error), 1)[0]) if len(best) > 1 else None
    k_fit = float(np.polyfit(np.log(best.m), np.log(best.K), 1)[0]) if len(best) > 1 else None
    return {
        "best_error_by_m": {str(m): float(e) for m, e in zip(best.m, best.max_error)},
        "best_K_by_m": {str(m): int(k) for m, k in zip(best.m, best.K)},
        "pod_gamma": gamma,
        "predicted_rate": rate,
        "measured_rate": fit,
        "predicted_K_exponent": 1 / (2 * gamma + 1),
        "measured_K_exponent": k_fit,
    }


def plot(results: Results, out_dir: Path) -> list[Path]:
    table, s = results.tables["errors"], results.summary
    fig, (ax, sx) = plots.subplots(2, width=4.8, height=3.8)
    for K, g in table.groupby("K"):
        ax.loglog(g.m, g.max_error, ".-", alpha=0.6, lw=1, label=f"K = {K}")
    best = table.loc[table.groupby("m").max_error.idxmin()]
    ax.loglog(best.m, best.max_error, "ko-", lw=2, label=f"best K (rate {plots.num(s.get('measured_rate')):.2f})")
    ref = best.max_error.iloc[0] * (best.m / best.m.iloc[0]) ** -plots.num(s.get("predicted_rate"))
    ax.loglog(best.m, ref, "k--", label=f"theorem m^(-γ/(2γ+1)) = m^(-{plots.num(s.get('predicted_rate')):.2f})")
    ax.set_xlabel("FFN width m"), ax.set_ylabel("max ‖GIH_n − TF‖₂")
    ax.set_title("Theorem 4.4: error vs FFN width", fontsize=9)
    ax.legend(fontsize=7)
    pod_table = results.tables["pod"].head(20)
    sx.semilogy(pod_table.k, pod_table.sigma, "o-")
    sx.set_xlabel("k"), sx.set_ylabel("POD singular value σ_k")
    sx.set_title(f"POD of g (fitted γ = {plots.num(s.get('pod_gamma')):.2f})", fontsize=9)
    return [plots.save(fig, Path(out_dir) / "approx_gihn.png")]


EXPERIMENT = Experiment(
    saves_models=False,  # it trains no model
    name="approx-gihn",
    description="Theorem 4.4: error of the GIH_n construction (RBF similarity, POD + FFN) vs FFN width m and bases K",
    figure="Wang et al. Theorem 4.4",
    wall="~15 s",  # default preset, 2 cores
    cpu_only="the constructions are evaluated in float64 on small samples; nothing trains",
    headline=("measured_rate", "predicted_rate", "measured_K_exponent", "predicted_K_exponent"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
