"""Theorem 4.1 (Wang et al., docs/conventions.md#wang-4-2): the explicit two-layer single-head construction approximates IH_2
with an error exponentially small in the layer-1 slope p = p^(1,1) and independent of L.

Measures ‖IH_2(X) − TF_{−1}(X)‖₂ (max and mean over random sequences, docs/conventions.md#wang-3) for every p and L, beside
the bound 4B³‖W*‖₂e^{−p} (B = sup‖x‖₂ = √d for tokens uniform on [−1, 1]^d).
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
from inductionlab.tasks.induction import induction_head, sample_tokens, skewed_matrix
from inductionlab.theory.constructions import approximation_errors, ih2_bound, ih2_construction


@dataclass(frozen=True)
class Config:
    """W* = w_scale·I_d + w_skew·(antisymmetric part), so ‖W*‖₂ is not just the identity's; p must include
    2 and 7 (the summary's error ratio)."""

    d: int = 2  # token dimension d (tokens uniform on [−1, 1]^d)
    w_scale: float = 1.0  # W* = w_scale·I_d + w_skew·(antisymmetric part): its identity part
    w_skew: float = 0.3  # W*'s antisymmetric part (so that ‖W*‖₂ is not the identity's)
    # RPE slopes p of the construction (Theorem 4.1: error ≲ e^{−p}); must include 2 and 7
    p_values: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
    L_values: tuple[int, ...] = (10, 100, 1000)  # sequence lengths L, each ≥ 3
    n_samples: int = 128  # sequences on which the maximum error is measured, per L
    seeds: tuple[int, ...] = (0,)  # one seed (no run axis), for every random draw; for several: sweep --n-seeds K
    copy_previous: bool = True  # False: layer 1's value matrices zeroed, it copies nothing (the negative control)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        require(self.d >= 1, "d", f"must be ≥ 1, got {self.d}")
        require(min(self.L_values) >= 3, "L_values", "IH_2 needs L ≥ 3")
        require(2.0 in self.p_values and 7.0 in self.p_values, "p_values", "must include 2 and 7 (error_ratio_p2_p7)")
        require(min(self.p_values) >= 0, "p_values", "slopes must be ≥ 0")
        require(self.n_samples >= 1, "n_samples", "must be ≥ 1")

    def w_star(self) -> torch.Tensor:
        return skewed_matrix(self.d, self.w_scale, self.w_skew)


CONFIG = Config()
PRESETS = {
    "quick": {},  # the default already takes about a minute
    "smoke": {"L_values": "5,20", "n_samples": 8, "p_values": "1,2,7"},
}


def _break(params: dict, copy_previous: bool) -> dict:
    """The construction as built, or with layer 1's W_V zeroed (``copy_previous`` False, the negative control)."""
    if not copy_previous:
        params["blocks.0.attn.W_V"].zero_()
    return params


def run(cfg: Config, ctx: RunContext) -> Results:
    w_star = cfg.w_star()
    model_cfg, params = ih2_construction(w_star, cfg.p_values)
    params = _break(params, cfg.copy_previous)
    token_bound = cfg.d**0.5
    gen = rng.generator(cfg.seeds[0])
    rows = []
    for L in tqdm(cfg.L_values, desc="approx-ih2", disable=not ctx.progress):
        x = sample_tokens((cfg.n_samples, L, cfg.d), "uniform", gen)
        err = approximation_errors(model_cfg, params, lambda t: induction_head(t, w_star), x)
        for p, e in zip(cfg.p_values, err):
            rows.append(
                {
                    "L": L,
                    "p": p,
                    "max_error": float(e.max()),
                    "mean_error": float(e.mean()),
                    "bound": ih2_bound(w_star, token_bound, p),
                }
            )
    table = pd.DataFrame(rows)
    ratio = table.pivot(index="L", columns="p", values="max_error")
    return Results(
        {"errors": table},
        {
            "max_error_over_bound": float((table.max_error / table.bound).max()),
            "error_ratio_p2_p7": float((ratio[2.0] / ratio[7.0]).min()),  # the smallest over L
            "decay_rate_fit": float(-np.polyfit(table.p, np.log(table.max_error), 1)[0]),  # vs 1 in e^{-p}
            "w_star_norm": float(torch.linalg.matrix_norm(w_star, ord=2)),
            "token_bound": token_bound,
        },
    )


def plot(results: Results, out_dir: Path) -> list[Path]:
    table, s = results.tables["errors"], results.summary
    fig, (ax,) = plots.subplots(1, width=5.5, height=4.0)
    for L, group in table.groupby("L"):
        (line,) = ax.semilogy(group.p, group.max_error, "o-", label=f"max error, L = {L}")
        ax.semilogy(group.p, group.mean_error, ":", color=line.get_color(), alpha=0.7)
    bound = table.drop_duplicates("p")
    ax.semilogy(bound.p, bound.bound, "k--", label="bound 4B³‖W*‖e^{-p}")
    ax.set_xlabel("layer-1 slope p"), ax.set_ylabel("‖IH₂ − TF‖₂  (dotted: mean)")
    ax.set_title(
        f"Theorem 4.1: max error / bound = {plots.num(s.get('max_error_over_bound')):.3f}, "
        f"err(p=2)/err(p=7) = {plots.num(s.get('error_ratio_p2_p7')):.0f}",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    return [plots.save(fig, Path(out_dir) / "approx_ih2.png")]


EXPERIMENT = Experiment(
    saves_models=False,  # it trains no model
    name="approx-ih2",
    description="Theorem 4.1: error of the IH_2 construction vs the layer-1 slope p, against 4B³‖W*‖e^{-p}, several L",
    figure="Wang et al. Theorem 4.1",
    wall="~30 s",  # default preset, 2 cores
    cpu_only="the constructions are evaluated in float64 on small samples; nothing trains",
    headline=("max_error_over_bound", "decay_rate_fit", "error_ratio_p2_p7"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
