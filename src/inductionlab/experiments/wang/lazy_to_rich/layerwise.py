"""The layerwise protocol of ``lazy-to-rich`` and ``lazy-to-rich-boolean`` (Wang et al. Fig. 2, dynamics paper
Fig. 1, appendix B.1; workshop Fig. 3 with ±1 tokens): the config, seeds → target → initialisation → training
(:func:`train_layerwise`), the run's summary and the gradient-flow curves.

A two-layer toy transformer (six parameters, :mod:`inductionlab.models.toy`) on the mixed target
(:mod:`inductionlab.tasks.mixed`), trained layerwise by online SGD: Stage I trains p̃, Stage II the five
layer-2 parameters.  Stage II shows the four phases of Theorem 5.5: L_G4 falls first (lazy, 4-gram),
L_IH2 sits on a plateau, then drops abruptly as w_KQ grows exponentially (rich, induction head).

Gradient-flow curves are overlaid on the same t = lr × step axis: the closed forms (7)/(10) and the
exact-softmax loss with a Monte-Carlo gradient (:mod:`inductionlab.train.flow`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from inductionlab.analysis.phases import PHASE_NAMES, balance
from inductionlab.config import check_memory, check_seeds, require, set_here
from inductionlab.models import toy
from inductionlab.models.toy import PARAMS, ToyConfig
from inductionlab.runs import RunContext
from inductionlab.tasks.mixed import MixedTarget, MixedTaskConfig
from inductionlab.theory.mixed import literal_fixed_point
from inductionlab.train.flow import FlowProblem, solve_flow
from inductionlab.train.interventions import InterventionConfig, check
from inductionlab.train.loop import Hook, LoopState
from inductionlab.train.toy import ToyTrainConfig, TrainResult, layer2_metrics, stages_of, train_toy
from inductionlab.train.toy_interventions import toy_family


@dataclass(frozen=True)
class Config:
    """Defaults are the paper's setup: α*=1, w*=0.49, σ_init=0.01, L=40, Gaussian tokens, online SGD
    lr 0.1, B=1000, 100k Stage-I + 100k Stage-II steps.  ``seeds`` train on the run axis, one model each.
    ``gf``: which gradient-flow curves to overlay.  ``intervene``: interventions during training
    (:mod:`inductionlab.train.interventions`; e.g. ``--intervene.clamp w_KQ=0.01@0:20000``), shaded in the figure."""

    task: MixedTaskConfig = field(default_factory=MixedTaskConfig)
    model: ToyConfig = field(default_factory=ToyConfig)
    train: ToyTrainConfig = field(default_factory=ToyTrainConfig)
    seeds: tuple[int, ...] = (0,)  # the run axis: one model per seed, trained together (docs/conventions.md#seeds)
    # gradient-flow curves overlaid: closed forms (eqs. 7, 10), exact softmax (Monte Carlo), both or none
    gf: Literal["both", "closed", "exact", "none"] = "both"
    gf_mc_samples: int = 4096  # Monte-Carlo sequences per gradient of the exact-softmax flow
    intervene: InterventionConfig = field(default_factory=InterventionConfig)
    literal: bool = False  # also train the literal protocol (Stage II on the trained layer 1), summarised as literal
    # the literal run's Stage-II layer 1: as Stage I trained it (the paper's protocol), or ideal y_s = x_{s−1} (the
    # control literal-ideal: p̃ is still read after Stage I, but Stage II no longer sees its mixing)
    literal_layer1: Literal["trained", "ideal"] = "trained"
    # w_Q(0) of a companion run on the first seed's data, θ(0) = σ_init·1 otherwise: Lemma 5.4 off the balanced
    # manifold w_Q² = w_K² (0: no companion)
    kick: float = 0.05
    weight_decay: float = 0.0  # λ on layer 2 while it trains, dθ/dt = −∇L − λθ (a control: it breaks Lemma 5.4)

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        require(math.isfinite(self.kick), "kick", f"must be 0 (no companion) or a finite w_Q(0), got {self.kick}")
        require(
            0 <= self.weight_decay and self.weight_decay * self.train.lr < 1,
            "weight_decay",
            f"must be ≥ 0 with lr·weight_decay < 1, got {self.weight_decay}",
        )
        require(
            not self.literal or (self.train.stage2_layer1 == "ideal" and self.train.schedule == "layerwise"),
            "literal",
            "the literal comparison runs beside the idealised layerwise protocol: keep train.stage2_layer1='ideal'",
        )
        require(self.gf_mc_samples >= 16, "gf_mc_samples", f"must be ≥ 16, got {self.gf_mc_samples}")
        check(self.intervene, toy_family(), [s.steps for s in stages_of(self.train)])
        set_here(
            self.intervene,
            "intervene",
            {"ablate_mode": "zero"},
            "no ablation (intervene.ablate is the general transformer's)",
        )
        self.train.check_sizes(self.task.L, len(self.seeds))
        check_memory(
            "gf_mc_samples", 32 * self.gf_mc_samples * self.task.L, f"{self.gf_mc_samples} Monte-Carlo sequences"
        )
        if self.gf in ("both", "closed"):
            require(
                self.task.tokens == "gaussian",
                "gf",
                "the closed forms (7)/(10) hold for Gaussian tokens only; use gf=exact or none for boolean tokens",
            )
            require(
                2 * self.task.w_star**2 < 1,
                "task.w_star",
                f"the closed form (eq. 10) needs w* < 1/√2 ≈ 0.7071, got {self.task.w_star}; or set gf=exact",
            )


PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "quick": {
        "train.stage1_steps": 2000,
        "train.stage2_steps": 40_000,
        "train.eval_size": 20_000,
        "train.eval_every": 1000,
        "train.checkpoint_every": 10_000,
        "gf_mc_samples": 2048,
    },
    "literal": {"train.stage2_layer1": "trained", "literal": False},
    "stage1": {  # the paper's Stage I, a token Stage II: for checks on p̃ after Stage I only
        "train.stage2_steps": 100,
        "train.eval_size": 1000,
        "train.checkpoint_every": 50_000,
        "gf": "none",
        "literal": False,
    },
    "smoke": {
        "train.stage1_steps": 20,
        "train.stage2_steps": 60,
        "train.eval_size": 512,
        "train.eval_every": 20,
        "train.eval_log_points": 5,
        "train.batch_size": 64,
        "train.checkpoint_every": 40,
        "gf_mc_samples": 64,
        "task.L": 8,
    },
}


def summarise(layer2: pd.DataFrame, times: list[dict], cfg: Config, p_tilde_1: np.ndarray) -> dict:
    per_run = []
    for run_times in times:
        df = layer2[layer2.run == run_times["run"]]
        end = df.iloc[-1]
        final = {k: float(end[k]) for k in ("loss", "loss_G4", "loss_IH2", *PARAMS, "w_KQ")}
        per_run.append(
            {
                **run_times,
                "final": final,
                "rse_loss_IH2_max": float(df.rse_IH2.max()),
                "p_tilde_after_stage1": float(p_tilde_1[run_times["run"]]),
            }
        )
    mean = {k: _nanmean([r[k] for r in per_run]) for k in PHASE_NAMES}
    final = {k: float(np.mean([r["final"][k] for r in per_run])) for k in per_run[0]["final"]}
    return {
        **mean,
        "final": final,
        "p_tilde_after_stage1": float(np.mean(p_tilde_1)),
        "balance_wq2_minus_wk2": balance(layer2),
        "stage2_layer1": cfg.train.stage2_layer1,
        "n_runs": len(cfg.seeds),
        "per_run": per_run,
    }


def literal_summary(layer2: pd.DataFrame, times: list[dict], cfg: Config, p_tilde_1: np.ndarray) -> dict:
    """The literal protocol's summary, and each run's end against the fixed point finite p̃ moves
    (:func:`inductionlab.theory.mixed.literal_fixed_point`, docs/conventions.md#wang-5-3)."""
    out = summarise(layer2, times, cfg, p_tilde_1)
    first, last = layer2.groupby("run").first(), layer2.groupby("run").last()
    fixed = literal_fixed_point(p_tilde_1.astype(float)[first.index.to_numpy()], cfg.task.alpha_star, cfg.task.w_star)
    out["g4_end_over_start"] = float(np.mean(last.loss_G4 / first.loss_G4))
    out["g4_end_over_floor"] = float(np.mean(last.loss_G4.to_numpy() / first.loss_G4.to_numpy() / fixed["g4_floor"]))
    out["w_V1_over_predicted"] = float(np.mean(last.w_V1.to_numpy() / fixed["w_V1"]))
    out["w_KQ_over_predicted"] = float(np.mean(last.w_KQ.to_numpy() / fixed["w_KQ"]))
    return out


class LayerTwoDecay(Hook):
    """Weight decay λ on layer 2 while it trains (Stage II, or the joint stage): after each step θ₂ ← (1 − lr·λ)·θ₂,
    the Euler step of dθ₂/dt = −∇L − λθ₂.  The loss depends on w_Q and w_K only through w_Q·w_K, which Lemma 5.4's
    proof (App. C.3) turns into d/dt (w_Q² − w_K²) = 0; the decay term adds −2λ(w_Q² − w_K²)."""

    def __init__(self, lr: float, decay: float):
        self.factor = 1.0 - lr * decay

    def after_step(self, state: LoopState) -> None:
        if state.stage.name in ("II", "joint"):
            state.params[:, list(toy.LAYER2)] *= self.factor


def train_layerwise(
    cfg: Config, train: ToyTrainConfig, seeds: list[int], ctx: RunContext, kick: bool
) -> tuple[TrainResult, pd.DataFrame, pd.DataFrame]:
    """Train one model per seed from θ(0) = σ_init·1 (App. B.1) and, with ``kick`` and ``cfg.kick``, a companion on
    the first seed's data from w_Q(0) = ``cfg.kick`` (Lemma 5.4 off the balanced manifold), on the same run axis.
    Returns the seeds' result and their layer-2 rows, and the companion's layer-2 rows (empty without one)."""
    n = len(seeds)
    runs = [*seeds, seeds[0]] if kick and cfg.kick else list(seeds)
    theta0 = toy.init_params(cfg.model.sigma_init, len(runs))
    theta0[n:, toy.W_Q] = cfg.kick
    hooks = (LayerTwoDecay(train.lr, cfg.weight_decay),) if cfg.weight_decay else ()
    out = train_toy(train, MixedTarget.from_config(cfg.task, len(runs)), theta0, runs, ctx, hooks=hooks)
    own = out.metrics[out.metrics.run < n].reset_index(drop=True)
    result = TrainResult(out.theta[:n], own, out.p_tilde_after_stage1[:n])
    return result, layer2_metrics(own), layer2_metrics(out.metrics[out.metrics.run >= n])


def _nanmean(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


def gradient_flows(cfg: Config) -> dict:
    """GF curves on the Stage-II time axis [0, lr × steps] (not for Adam, whose time axis differs)."""
    if cfg.gf == "none" or cfg.train.optimizer == "adam":
        return {}
    steps = cfg.train.stage2_steps + (cfg.train.stage1_steps if cfg.train.schedule == "joint" else 0)
    t_end = cfg.train.lr * steps
    base: dict[str, Any] = dict(
        L=cfg.task.L,
        alpha_star=cfg.task.alpha_star,
        w_star=cfg.task.w_star,
        sigma_init=cfg.model.sigma_init,
        t_end=max(t_end, 1e-6),
        tokens=cfg.task.tokens,
        mc_samples=cfg.gf_mc_samples,
        mc_seed=cfg.seeds[0],
    )
    methods: dict[str, tuple[Literal["closed", "exact"], ...]] = {
        "both": ("closed", "exact"),
        "closed": ("closed",),
        "exact": ("exact",),
    }
    return {m: solve_flow(FlowProblem(**base, loss=m)) for m in methods[cfg.gf]}
