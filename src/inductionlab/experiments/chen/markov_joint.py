"""Joint training of the Chen et al. model (docs/conventions.md#chen-5-2, App. C.1, Fig. 6): all of c, w, a trained together
("CWa": full-batch SGD, lr 1, D = 2), or c and w jointly then a ("CW_a").  It reaches the limit of the staged
flow: p_{1,2} → 1 within ~100 epochs, heads 1 and 2 copy lags 1 and 2, and a grows like ln t (the authors'
stored CWa run: a = 0.70, 4.28, 7.28, 9.69, 11.35 at epochs 10, 100, 1k, 10k, 50k).

As in ``markov-stages`` the headline uses the authors' surrogate loss (which produced that run) and the true
cross-entropy runs beside it (on the first ``compare_seeds`` seeds).  The surrogate trains four data seeds: the
copiers' sharpening differs between draws (seed 2024 alone ends below its initial attention,
docs/chen.md#joint-seeds), so it is judged on their mean.  The default is 20 000 epochs; ``--preset spec`` gives
the stored run's 50 000.

Choice: the layer-1 windows are the authors' shifted ones (head h sees lags h..h+2), with which their CWa run
was made.  With the shared window {1, 2, 3} (``--preset shared``) joint training first selects {1,2} just as
well (p_{1,2} = 1.0000 from epoch ~30), but the {1,2} vertex later loses stability and p_{1,3} comes back to an
interior value (measured at 20 000 epochs: p_{1,2} 0.979 with the cross-entropy, 0.922 with the surrogate); it
is neither a finite-sample effect nor the copiers' leakage (docs/chen.md#shared-window-joint-training, with the
figure ``markov_joint_lags.png``: each head's attention over its lags and p_S through training).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inductionlab.config import check_memory, check_seeds, require, set_here
from inductionlab.experiments.chen._shared import Loss, plot_variants, run_variants
from inductionlab.experiments.experiment import Experiment
from inductionlab.models.chen import ChenModelConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig
from inductionlab.train.chen import StagedConfig
from inductionlab.train.chen_interventions import chen_family
from inductionlab.train.interventions import InterventionConfig, check


@dataclass(frozen=True)
class Config:
    task: MarkovConfig = field(default_factory=MarkovConfig)
    model: ChenModelConfig = field(
        default_factory=lambda: ChenModelConfig(windows="shifted", window=5)
    )  # vocabulary: task.vocab_size; loss: losses
    train: StagedConfig = field(
        default_factory=lambda: StagedConfig(stages=("cwa",), lrs=(1.0,), epochs=(20_000,), eval_log_points=60)
    )
    # losses trained (model.loss), one variant each; the first is the headline
    losses: tuple[Loss, ...] = ("softmax_of_probs", "ce")
    # the run axis: one model per seed, each its own data, trained together (docs/conventions.md#seeds)
    seeds: tuple[int, ...] = (2024, 2025, 2026, 2027)
    compare_seeds: int = 1  # the losses after the first train on the first compare_seeds seeds only
    n_samples: int = 10_000  # training sequences per seed (full batch)
    n_val: int = 1000  # of those, validation sequences
    intervene: InterventionConfig = field(default_factory=InterventionConfig)  # e.g. --intervene.freeze copier

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        require(len(self.losses) >= 1 and len(self.seeds) >= 1, "losses/seeds", "give at least one of each")
        require(self.compare_seeds >= 1, "compare_seeds", f"must be ≥ 1, got {self.compare_seeds}")
        require(0 < self.n_val < self.n_samples, "n_val", f"must lie in 1..n_samples − 1, got {self.n_val}")
        set_here(self.model, "model", {"loss": "ce"}, "losses")
        set_here(
            self.intervene,
            "intervene",
            {"ablate_mode": "zero"},
            "no ablation (intervene.ablate is the general transformer's)",
        )
        model = self.model.build(self.task.vocab_size)  # validates the model over the task's vocabulary
        check(self.intervene, chen_family(model), self.train.epochs, "epochs")
        check_memory(
            "n_samples", 24 * self.n_samples * (self.task.L + 1) * len(self.seeds), f"{self.n_samples} sequences"
        )


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"train.epochs": "5000", "losses": "softmax_of_probs"},
    "control": {"train.epochs": "1000", "losses": "softmax_of_probs"},
    "smoke": {
        "train.epochs": "10",
        "seeds": "2024",
        "n_samples": 120,
        "n_val": 20,
        "task.L": 20,
        "train.eval_log_points": 4,
    },
    "spec": {"train.epochs": "50000"},
    "shared": {"model.windows": "shared", "model.window": 3},
    "cw-a": {"train.stages": "cw,a", "train.lrs": "1,1", "train.epochs": "20000,5000"},
}


def run(cfg: Config, ctx: RunContext) -> Results:
    variants = [
        (f"{'+'.join(cfg.train.stages)}, {loss}", replace(cfg.model.build(cfg.task.vocab_size), loss=loss), cfg.train)
        for loss in cfg.losses
    ]
    compare = min(cfg.compare_seeds, len(cfg.seeds))
    return run_variants(cfg.task, variants, cfg.seeds, cfg.n_samples, cfg.n_val, ctx, cfg.intervene, compare)


def plot(results: Results, out_dir: Path) -> list[Path]:
    return plot_variants(results, out_dir, "markov_joint")


EXPERIMENT = Experiment(
    name="markov-joint",
    description="Chen et al. Fig. 6: joint training of c, w, a (CWa); p_S(t), RPE, a(t) ~ ln t",
    figure="Chen et al. Fig. 6",
    wall="~10 min",  # default, one core beside another run: 575 s (2026-12-02, AMD EPYC; the fused Chen loops)
    cpu_only="the model runs on tables over the few window states that occur; an epoch takes milliseconds",
    headline=("a_log_slope", "gih_argmax_agreement", "p_selected.{1,2}"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
