"""Modified vs standard χ² mutual information of every lag set (Chen et al. 2024, docs/conventions.md#chen-4-2, §8.1).

For d = 3, α = 0.1, pa = {1, 2} and window {1, 2, 3}: the exact Ĩ_χ²(S) and I_χ²(S) per kernel draw (stationary
law of the 3-tuple chain), averaged over draws.  The standard MI cannot tell {1,2} from {1,2,3} (lag 3 is
conditionally independent given the parents, so they tie exactly); the modified MI's μ(z)² weight penalises
the larger set, and its argmax is {1,2} — the set Stage I selects.

The gradient check of §8.1: the model with exact copier heads (head h on lag h), uniform p and a = 0.01 on a
finite dataset; −∂L/∂p_S / a should track Ĩ_χ²(S) across subsets (the small-a expansion of docs/conventions.md#chen-4-2, reported
as the Pearson correlation ``grad_mi_correlation``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from inductionlab import plots, rng
from inductionlab.config import check_seeds, require
from inductionlab.experiments.experiment import Experiment
from inductionlab.models import chen
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig, datasets, draw_kernels
from inductionlab.theory.mutual_info import mutual_info_table


@dataclass(frozen=True)
class Config:
    task: MarkovConfig = field(default_factory=MarkovConfig)
    window: tuple[int, ...] = (1, 2, 3)  # lags of the copier heads, 1..M (head h on lag h)
    max_size: int = 3  # largest subset size |S| of the mutual-information table (≤ M)
    n_draws: int = 2000  # kernel draws π of the mutual-information table
    seeds: tuple[int, ...] = (0,)  # one seed (no run axis), for every random draw; for several: sweep --n-seeds K
    grad_samples: int = 9000  # sequences of the gradient check (docs/conventions.md#chen-8-1)
    copier_logit: float = 30.0  # w_+ of the exact copier heads (w_− = 0)
    a: float = 0.01  # classifier scale a of the gradient check (−∂L/∂p_S ≈ a·Ĩ_χ²(S) at small a)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, run_axis=False)
        require(
            list(self.window) == list(range(1, len(self.window) + 1)),
            "window",
            f"must be 1..M (head h on lag h), got {self.window}",
        )
        require(1 <= self.max_size <= len(self.window), "max_size", f"must lie in 1..{len(self.window)}")
        require(self.n_draws >= 2 and self.grad_samples >= 2, "n_draws/grad_samples", "must be ≥ 2")
        require(self.task.L > len(self.window), "task.L", "must exceed the window")


CONFIG = Config()
PRESETS = {
    "quick": {},  # the default already takes about a minute
    "smoke": {"n_draws": 20, "grad_samples": 50, "task.L": 20},
}


def gradient_over_a(cfg: Config) -> dict[tuple[int, ...], float]:
    """−∂L/∂p_S / a at exact copier heads, uniform p and small a, keyed by lag set (head h ↔ lag h)."""
    model = chen.ChenConfig(
        vocab_size=cfg.task.vocab_size,
        n_heads=len(cfg.window),
        window=len(cfg.window),
        max_degree=cfg.max_size,
        w_plus=cfg.copier_logit,
        w_minus=0.0,
        a_init=cfg.a,
    )
    params = chen.init_params(model, 1)
    tokens = datasets(cfg.task, (cfg.seeds[0],), cfg.grad_samples + 1, 1)[0]
    p = torch.full((1, len(model.subsets)), 1 / len(model.subsets), dtype=torch.float64, requires_grad=True)
    chen.loss(model, params, chen.make_batch(model, tokens), p).sum().backward()
    assert p.grad is not None  # backward() of a loss of p fills p.grad
    return {tuple(h + 1 for h in s): float(-p.grad[0, k] / cfg.a) for k, s in enumerate(model.subsets)}


def run(cfg: Config, ctx: RunContext) -> Results:
    kernels = draw_kernels(cfg.task, cfg.n_draws, rng.numpy_generator(cfg.seeds[0]))
    table = mutual_info_table(kernels, cfg.task.parents, cfg.window, cfg.max_size)
    grads = gradient_over_a(cfg)
    rows = [
        {
            "subset": chen.subset_label(tuple(r - 1 for r in s)),
            "size": len(s),
            "modified": mod.mean(),
            "modified_se": mod.std(ddof=1) / np.sqrt(len(mod)),
            "standard": std.mean(),
            "standard_se": std.std(ddof=1) / np.sqrt(len(std)),
            "grad_over_a": grads[s],
        }
        for s, (mod, std) in table.items()
    ]
    df = pd.DataFrame(rows)
    best = df.sort_values(["modified", "size"], ascending=[False, True]).subset.iloc[0]
    big = tuple(cfg.window)
    gap = (
        (table[(1, 2)][1] - table[big][1]).mean()
        if (1, 2) in table and big in table and big != (1, 2)
        else float("nan")
    )
    summary = {
        "modified_mi": dict(zip(df.subset, df.modified)),
        "standard_mi": dict(zip(df.subset, df.standard)),
        "argmax_modified_mi": best,
        "argmax_standard_mi": df.sort_values(["standard", "size"], ascending=[False, True]).subset.iloc[0],
        "standard_mi_gap_12_minus_full": float(gap),
        "grad_mi_correlation": float(np.corrcoef(df.grad_over_a, df.modified)[0, 1]),
        "grad_over_a": dict(zip(df.subset, df.grad_over_a)),
        "n_draws": cfg.n_draws,
    }
    return Results({"mi": df}, summary)


def plot(results: Results, out_dir: Path) -> list[Path]:
    df, s = results.tables["mi"], results.summary
    fig, (ax, bx) = plots.subplots(2, width=4.8, height=3.6)
    x = np.arange(len(df))
    ax.bar(x - 0.2, df.modified, 0.4, yerr=1.96 * df.modified_se, color="#1b9e77", label="modified Ĩ_χ² (left)")
    tw = ax.twinx()
    tw.bar(x + 0.2, df.standard, 0.4, yerr=1.96 * df.standard_se, color="#7570b3", label="standard I_χ² (right)")
    ax.set_xticks(x, df.subset, rotation=45)
    ax.set(xlabel="lag set S", ylabel="modified χ² MI", title=f"argmax modified: {s['argmax_modified_mi']}")
    tw.set_ylabel("standard χ² MI")
    fig.legend(loc="upper left", fontsize=7)
    bx.scatter(df.modified, df.grad_over_a, color="#d95f02")
    for _, r in df.iterrows():
        bx.annotate(r.subset, (r.modified, r.grad_over_a), fontsize=7, xytext=(3, 3), textcoords="offset points")
    bx.set(
        xlabel="modified χ² MI Ĩ(S)",
        ylabel="−∂L/∂p_S / a at initialisation",
        title=f"correlation {s['grad_mi_correlation']:.3f}",
    )
    return [plots.save(fig, Path(out_dir) / "markov_mi.png")]


EXPERIMENT = Experiment(
    saves_models=False,  # it trains no model
    name="markov-mi",
    description="Chen et al.: modified vs standard chi^2 MI per lag set, and -dL/dp_S / a against the modified MI",
    figure="Chen et al. §4.2 (χ² MI)",
    wall="~1 s",  # default preset, 2 cores
    cpu_only="the model runs on tables over the few window states that occur; an epoch takes milliseconds",
    headline=("argmax_modified_mi", "argmax_standard_mi", "grad_mi_correlation"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
