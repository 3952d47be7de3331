"""The full-model variant of Chen et al. docs/conventions.md#chen-5-3, the repo's "Appendix B"): layer 1 gets trainable per-head
W_Q, W_K, W_OV ∈ ℝ^{d×d} (initialised 0.01·I; token scores e_{x_i}ᵀ W_Q W_Kᵀ e_{x_j} added to the RPE) and may
attend to the position itself (logit 10⁻⁶); a LayerNorm(d) with trainable affine parameters replaces the ℓ2
normalisation; everything trains jointly with full-batch SGD, lr 10⁻³, for 10 000 epochs, w_± = (1, 0.01).

The authors' stored run ends with p leading on {1,2} (0.57, then {1,3} 0.22, {2,3} 0.21) and a only 0.61 —
the selection has begun but not finished at this learning rate.  Here the loss is the true cross-entropy
(docs/conventions.md#chen-a2); ``--model.loss softmax_of_probs`` is the authors'.

Eight seeds train on the run axis (each its own data and kernels); the summary gives the mean and standard
deviation over seeds of the final p_S and a (``p_selected_mean``, ``p_selected_std``, ``a_mean``, ``a_std``)
and ``authors_z``: (authors' value − mean) / std per subset and for a — within ±2, the authors' single run is
inside our spread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from inductionlab.analysis.claims import Between, Claim
from inductionlab.config import check_seeds, require
from inductionlab.experiments.markov_common import ChenModelConfig, plot_variants, run_variants
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig
from inductionlab.train.chen import StagedConfig

NAME = "markov-full"
DESCRIPTION = "Chen et al. App. B: the full model (W_Q, W_K, W_OV, LayerNorm) trained jointly"
FIGURE = "Chen et al. App. B (full)"
WALL = "~7 min"  # default preset, 2 cores (8 seeds)
CPU_ONLY = "the model runs on tables over the few window states that occur; an epoch takes milliseconds"
HEADLINE = ("p_selected.{1,2}", "p_selected.{1,3}", "p_selected.{2,3}", "a_log_slope")


@dataclass(frozen=True)
class Config:
    task: MarkovConfig = field(default_factory=MarkovConfig)
    model: ChenModelConfig = field(
        default_factory=lambda: ChenModelConfig(variant="full", norm="layernorm", w_plus=1.0, w_minus=0.01)
    )  # its vocabulary is task.vocab_size
    train: StagedConfig = field(
        default_factory=lambda: StagedConfig(stages=("cwa",), lrs=(1e-3,), epochs=(10_000,), eval_log_points=60)
    )
    seeds: tuple[int, ...] = tuple(range(2024, 2032))
    n_samples: int = 10_000
    n_val: int = 1000

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        require(len(self.seeds) >= 1, "seeds", "give at least one seed")
        require(0 < self.n_val < self.n_samples, "n_val", f"must lie in 1..n_samples − 1, got {self.n_val}")
        self.model.build(self.task.vocab_size)  # validates the model over the task's vocabulary


CONFIG = Config()
PRESETS = {
    "quick": {},  # the default already takes about a minute
    "smoke": {
        "train.epochs": "10",
        "seeds": "2024",
        "n_samples": 120,
        "n_val": 20,
        "task.L": 20,
        "train.eval_log_points": 4,
    },
    "long": {"train.epochs": "50000"},
}

AUTHORS_P = {"{1,2}": 0.57, "{1,3}": 0.22, "{2,3}": 0.21}  # the authors' stored run, final p_S
AUTHORS_A = 0.61

CLAIMS = (
    Claim(
        "chen-appB-select",
        "chen",
        "App. B",
        "The full model (W_Q, W_K, W_OV, LayerNorm) gives {1,2} the largest selection weight",
        "p_selected_mean.{1,2}",
        "authors' run: {1,2} 0.57, {1,3} 0.22, {2,3} 0.21",
        Between(lo=0.4),
    ),
    Claim(
        "chen-appB-authors-in-spread",
        "chen",
        "App. B",
        "The authors' p_{1,2} = 0.57 lies within our seeds' spread (mean ± 2 standard deviations)",
        "authors_z.{1,2}",
        "0.57 (one run)",
        Between(-2.0, 2.0),
    ),
)


def run(cfg: Config, ctx: RunContext) -> Results:
    results = run_variants(
        cfg.task,
        [(f"full, {cfg.model.loss}", cfg.model.build(cfg.task.vocab_size), cfg.train)],
        cfg.seeds,
        cfg.n_samples,
        cfg.n_val,
        ctx,
    )
    results.summary.update(seed_spread(results.tables["metrics"]))
    return results


def seed_spread(metrics: pd.DataFrame) -> dict:
    """Mean and standard deviation over seeds (runs) of the final p_S and a, and the authors' z-scores."""
    last = metrics[metrics.epoch == metrics.epoch.max()].set_index("run")
    p = last[[c for c in last.columns if c.startswith("p_")]].rename(columns=lambda c: c[2:])
    mean, std = p.mean(), p.std(ddof=1)
    a_mean, a_std = float(last.a.mean()), float(last.a.std(ddof=1))
    authors = {**AUTHORS_P, "a": AUTHORS_A}
    means = {**mean.to_dict(), "a": a_mean}
    stds = {**std.to_dict(), "a": a_std}
    return {
        "p_selected_mean": mean.to_dict(),
        "p_selected_std": std.to_dict(),
        "a_mean": a_mean,
        "a_std": a_std,
        "p_selected_per_seed": {str(r): row.to_dict() for r, row in p.iterrows()},
        "authors_z": {k: (v - means[k]) / stds[k] if stds[k] > 1e-12 else None for k, v in authors.items()},
    }


def plot(results: Results, out_dir: Path) -> list[Path]:
    return plot_variants(results, out_dir, "markov_full")
