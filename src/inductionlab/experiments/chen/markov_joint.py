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

When the claims read (docs/chen.md#joint-seeds, docs/conventions.md#calibration): the authors say joint training
"goes through a similar course" as the staged flow (reviews, general rebuttal), whose Stage I selects {1,2} and whose
Stage II sharpens the heads of S* onto their lags.  So the run records, per seed, p_S after ``select_epoch`` epochs
(the authors' run: "1.000 by epoch 100") and the heads' attention after ``sharpen_epoch`` epochs (the sharpening
phase), exactly: a hook (:class:`_ReadAt`) keeps the parameters of the headline training at those epochs, counted
over all stages.  The end of the run is kept too, per seed: there, on some data draws, c re-admits {2,3} and a
head drifts off its lag by fitting the 9000 training chains at large a (docs/chen.md#joint-seeds).  The slope of a
per ln t is kept per seed as well (``a_log_slope_per_seed``: the fit is linear in a, so their mean is ``a_log_slope``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from inductionlab.config import check_memory, check_seeds, require, set_here
from inductionlab.experiments.chen._shared import Loss, plot_variants, run_variants
from inductionlab.experiments.experiment import Experiment
from inductionlab.models import chen
from inductionlab.models.chen import ChenModelConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig
from inductionlab.train import loop
from inductionlab.train.autograd import pack
from inductionlab.train.chen import StagedConfig, a_log_fit
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
    # (judged 2024–2027 until the claims read at select_epoch / sharpen_epoch: docs/conventions.md#calibration)
    seeds: tuple[int, ...] = (2124, 2125, 2126, 2127)
    compare_seeds: int = 1  # the losses after the first train on the first compare_seeds seeds only
    n_samples: int = 10_000  # training sequences per seed (full batch)
    n_val: int = 1000  # of those, validation sequences
    intervene: InterventionConfig = field(default_factory=InterventionConfig)  # e.g. --intervene.freeze copier
    select_epoch: int = 100  # p_S per seed after this many epochs (over all stages): the authors' "by epoch 100"
    sharpen_epoch: int = 5000  # the heads' attention per seed after this many epochs: the sharpening phase

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        require(len(self.losses) >= 1 and len(self.seeds) >= 1, "losses/seeds", "give at least one of each")
        require(self.compare_seeds >= 1, "compare_seeds", f"must be ≥ 1, got {self.compare_seeds}")
        require(0 < self.n_val < self.n_samples, "n_val", f"must lie in 1..n_samples − 1, got {self.n_val}")
        for name in ("select_epoch", "sharpen_epoch"):
            require(getattr(self, name) >= 0, name, f"must be ≥ 0, got {getattr(self, name)}")
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
        "select_epoch": 5,  # on the evaluation grid (1, 2, 5, 10)
        "sharpen_epoch": 7,  # between two evaluations
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
    reads = _ReadAt((cfg.select_epoch, cfg.sharpen_epoch), cfg.train.epochs)
    ctx = replace(ctx, hooks=(*ctx.hooks, reads))
    results = run_variants(cfg.task, variants, cfg.seeds, cfg.n_samples, cfg.n_val, ctx, cfg.intervene, compare)
    model, label = variants[0][1], variants[0][0]
    _, views = pack(chen.init_params(model, len(cfg.seeds), getattr(torch, cfg.train.dtype)))
    metrics = results.tables["metrics"]
    last = metrics[metrics.variant == label]
    last = last[last.epoch == last.epoch.max()].sort_values("run")
    late = {chen.subset_label(s): last[f"p_{chen.subset_label(s)}"].astype(float).tolist() for s in model.subsets}
    select, sharpen = (reads.rows.get(e) for e in (cfg.select_epoch, cfg.sharpen_epoch))
    unread: list[float | None] = [None] * len(cfg.seeds)  # the run ends before that epoch: not measured
    results.summary |= {
        "p_selected_per_seed": late,
        "a_log_slope_per_seed": [a_log_fit(m)[0] for _, m in metrics[metrics.variant == label].groupby("run")],
        "selection": {
            "epoch": cfg.select_epoch,
            "p_selected_per_seed": dict.fromkeys(late, unread)
            if select is None
            else _selection(model, views(select)["c"]),
        },
        "sharpening": {
            "epoch": cfg.sharpen_epoch,
            "copier_attention_12_per_seed": unread
            if sharpen is None
            else [float(chen.lag_attention(model, w)[:2].min()) for w in views(sharpen)["w"]],
        },
    }
    return results


def _selection(model: chen.ChenConfig, c: torch.Tensor) -> dict[str, list[float]]:
    """p_S = c_S² / Σ c² per subset label, one value per seed (docs/conventions.md#chen-3-1)."""
    p = chen.selection_weights(c.double())
    return {chen.subset_label(s): p[:, k].tolist() for k, s in enumerate(model.subsets)}


class _ReadAt(loop.Hook):
    """The parameters θ (S, P) of a run's first training (the headline variant) after each of ``epochs`` epochs,
    counted over all stages (``stage_epochs``: each stage's length), in :attr:`rows` by epoch; an epoch the
    training does not reach is absent.  Taken where the loop's order puts θ after that many updates: before the
    evaluation on the grid, else before the next step (train/loop.py); kept in the checkpoint for resume."""

    def __init__(self, epochs: tuple[int, ...], stage_epochs: tuple[int, ...]) -> None:
        self.epochs = set(epochs)
        self.offsets = np.cumsum([0, *stage_epochs[:-1]]).tolist()
        self.trainings = 0
        self.rows: dict[int, torch.Tensor] = {}

    def reset(self) -> None:
        self.trainings += 1  # the variants train one after another; the first is the headline

    def _take(self, state: loop.LoopState) -> None:
        epoch = int(self.offsets[state.stage_index]) + state.step
        if self.trainings == 1 and epoch in self.epochs and epoch not in self.rows:
            self.rows[epoch] = state.params.detach().to("cpu", copy=True)

    def before_evaluate(self, state: loop.LoopState) -> None:
        self._take(state)

    def before_step(self, state: loop.LoopState) -> None:
        self._take(state)

    def state_dict(self) -> dict:
        return {"rows": dict(self.rows)} if self.trainings == 1 and self.rows else {}

    def load_state_dict(self, state: dict) -> None:
        if self.trainings == 1:
            self.rows = dict(state["rows"])


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
