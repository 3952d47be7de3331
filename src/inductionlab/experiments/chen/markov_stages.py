"""Three-stage training of the Chen et al. model (docs/conventions.md#chen-5-1, §3.2): FFN c, then RPE w, then classifier a, with
D = 2 and D = 3, on in-context bigram-of-pairs chains (d = 3, pa = {−1, −2}, α = 0.1, L = 100, 9000 / 1000
sequences, full-batch SGD).  Expected: p_{1,2} → 1 even when {1,2,3} is allowed (the modified χ² MI prefers
the smaller set), heads 1 and 2 sharpen onto lags 1 and 2, and a grows like ln t.

Each D runs with two losses.  The first, the headline, is the authors' softmax-of-probabilities surrogate
(docs/conventions.md#chen-a2), which produced the paper's figures: being bounded it rewards ever sharper attention, so a(t)
grows like ln t (measured: ≈ 8.6 after 4000 epochs, as the proposed ≈ 8).  The second is the true
cross-entropy (the model's default): on finite L it has a finite best a (measured ≈ 5.6, reached by ≈ 1000
epochs), so a(t) follows ln t at first and then levels off.  Both select {1,2}.

Negative controls (docs/conventions.md#controls) run at the default's stages, rates and epochs, with only the variants
(D, loss) their claims read: the parents {1,3}, a bigram chain (head 2 has no parent lag to sharpen on), the
classifier frozen, the true cross-entropy, and near-deterministic kernels (α = 0.001).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inductionlab.config import check_memory, check_seeds, require, set_here
from inductionlab.experiments.chen._shared import Loss, plot_variants, run_variants
from inductionlab.experiments.experiment import Experiment
from inductionlab.keys import keys_as
from inductionlab.models.chen import ChenModelConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig
from inductionlab.train.chen import StagedConfig
from inductionlab.train.chen_interventions import chen_family
from inductionlab.train.interventions import InterventionConfig, check


@dataclass(frozen=True)
class Config:
    task: MarkovConfig = field(default_factory=MarkovConfig)
    model: ChenModelConfig = field(default_factory=ChenModelConfig)  # vocabulary: task.vocab_size; D and loss: below
    train: StagedConfig = field(default_factory=StagedConfig)
    degrees: tuple[int, ...] = (2, 3)  # FFN degrees D trained (model.max_degree), one variant each
    # losses trained (model.loss), one variant each; the first is the headline
    losses: tuple[Loss, ...] = ("softmax_of_probs", "ce")
    seeds: tuple[int, ...] = (2024,)  # the run axis: one model per seed, trained together (docs/conventions.md#seeds)
    n_samples: int = 10_000  # training sequences per seed (full batch)
    n_val: int = 1000  # of those, validation sequences
    intervene: InterventionConfig = field(default_factory=InterventionConfig)  # e.g. --intervene.freeze copier

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        require(len(self.degrees) >= 1 and len(self.losses) >= 1, "degrees/losses", "give at least one of each")
        require(len(self.seeds) >= 1, "seeds", "give at least one seed")
        require(0 < self.n_val < self.n_samples, "n_val", f"must lie in 1..n_samples − 1, got {self.n_val}")
        set_here(self.model, "model", {"max_degree": 2, "loss": "ce"}, "degrees / losses")
        set_here(
            self.intervene,
            "intervene",
            {"ablate_mode": "zero"},
            "no ablation (intervene.ablate is the general transformer's)",
        )
        for D in self.degrees:  # validates D (named as the key a user types) and the vocabulary, then the interventions
            with keys_as({"max_degree": "degrees"}):
                model = replace(self.model, max_degree=D)
            check(self.intervene, chen_family(model.build(self.task.vocab_size)), self.train.epochs, "epochs")
        check_memory(
            "n_samples", 24 * self.n_samples * (self.task.L + 1) * len(self.seeds), f"{self.n_samples} sequences"
        )


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"degrees": "2", "losses": "softmax_of_probs"},
    "smoke": {"train.epochs": "5,5,5", "n_samples": 120, "n_val": 20, "task.L": 20, "train.eval_log_points": 4},
    "submission": {"train.lrs": "1,100,100", "train.epochs": "500,500,500", "degrees": "3"},
}


def run(cfg: Config, ctx: RunContext) -> Results:
    variants = [
        (f"D={D}, {loss}", replace(cfg.model.build(cfg.task.vocab_size), max_degree=D, loss=loss), cfg.train)
        for D in cfg.degrees
        for loss in cfg.losses
    ]
    return run_variants(cfg.task, variants, cfg.seeds, cfg.n_samples, cfg.n_val, ctx, cfg.intervene)


def plot(results: Results, out_dir: Path) -> list[Path]:
    return plot_variants(results, out_dir, "markov_stages")


EXPERIMENT = Experiment(
    name="markov-stages",
    description="Chen et al.: three-stage training (c, then w, then a) for D = 2 and 3; p_S(t), RPE, a(t) ~ ln t",
    figure="Chen et al. Figs. 3–5",
    wall="~3 min",  # default, one core beside another run: 183 s (2026-12-02, AMD EPYC)
    cpu_only="the model runs on tables over the few window states that occur; an epoch takes milliseconds",
    headline=("a_log_slope", "gih_argmax_agreement", "p_selected.{1,2}"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
