"""What the toy-model experiments share: seeds → target → initialisation → training → phase times
(:func:`train_and_time`), and the lazy-to-rich experiment of Fig. 2 (Wang et al.; dynamics paper Fig. 1, appendix
B.1), which ``lazy-to-rich`` runs with Gaussian and ``lazy-to-rich-boolean`` with ±1 tokens.

A two-layer toy transformer (six parameters, :mod:`inductionlab.models.toy`) on the mixed target
(:mod:`inductionlab.tasks.mixed`), trained layerwise by online SGD: Stage I trains p̃, Stage II the five
layer-2 parameters.  Stage II shows the four phases of Theorem 5.5: L_G4 falls first (lazy, 4-gram),
L_IH2 sits on a plateau, then drops abruptly as w_KQ grows exponentially (rich, induction head).

Gradient-flow curves are overlaid on the same t = lr × step axis: the closed forms (7)/(10) and the
exact-softmax loss with a Monte-Carlo gradient (:mod:`inductionlab.train.flow`).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import plots
from inductionlab.analysis.phases import PHASE_NAMES, phase_times
from inductionlab.config import check_memory, check_seeds, require
from inductionlab.experiments.keys_common import set_here
from inductionlab.models.toy import PARAMS, ToyConfig, init_params
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import MixedTarget, MixedTaskConfig
from inductionlab.theory.mixed import g_star
from inductionlab.train.flow import FlowProblem, solve_flow
from inductionlab.train.interventions import InterventionConfig, build, check, toy_family, windows
from inductionlab.train.toy import ToyTrainConfig, TrainResult, stages_of, train_toy


@dataclass(frozen=True)
class Config:
    """Defaults are the paper's setup: α*=1, w*=0.49, σ_init=0.01, L=40, Gaussian tokens, online SGD
    lr 0.1, B=1000, 100k Stage-I + 100k Stage-II steps.  ``seeds`` train on the run axis, one model each.
    ``gf``: which gradient-flow curves to overlay.  ``intervene``: interventions during training
    (:mod:`inductionlab.train.interventions`; e.g. ``--intervene.clamp w_KQ=0.01@0:20000``), shaded in the figure."""

    task: MixedTaskConfig = field(default_factory=MixedTaskConfig)
    model: ToyConfig = field(default_factory=ToyConfig)
    train: ToyTrainConfig = field(default_factory=ToyTrainConfig)
    seeds: tuple[int, ...] = (0,)
    gf: Literal["both", "closed", "exact", "none"] = "both"
    gf_mc_samples: int = 4096
    intervene: InterventionConfig = field(default_factory=InterventionConfig)
    literal: bool = False

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
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


PRESETS = {
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


def layer2_metrics(metrics: pd.DataFrame) -> pd.DataFrame:
    """The rows of the stage that trains layer 2: Stage II, or the joint stage."""
    last = "joint" if "joint" in set(metrics.stage) else "II"
    return metrics[metrics.stage == last]


def train_and_time(
    train_cfg: ToyTrainConfig,
    target: MixedTarget,
    sigma_init: float | torch.Tensor,
    seeds: Sequence[int],
    ctx: RunContext,
    alpha_star: float,
    w_star: float,
) -> tuple[TrainResult, pd.DataFrame, list[dict]]:
    """Train one toy model per seed from θ(0) = σ_init·1 and locate the phases of Theorem 5.5 on the layer-2
    stage: returns the training result, the layer-2 metrics and, per run, {"run", "seed", T_I, …}."""
    out = train_toy(train_cfg, target, init_params(sigma_init, len(seeds)), seeds, ctx)
    layer2 = layer2_metrics(out.metrics)
    times = [
        {
            "run": int(run_id),
            "seed": int(df.seed.iloc[-1]),
            **phase_times(df.t, df.loss_G4, df.loss_IH2, df.w_V2, df.w_KQ, alpha_star, w_star).as_dict(),
        }
        for run_id, df in layer2.groupby("run")
    ]
    return out, layer2, times


def run(cfg: Config, ctx: RunContext) -> Results:
    seeds = list(cfg.seeds)
    target = MixedTarget.from_config(cfg.task, len(seeds))
    pool = ThreadPoolExecutor(max_workers=1) if ctx.threads > 1 else None  # GF needs no SGD result: solve alongside
    gf_future = pool.submit(_gradient_flows, cfg) if pool else None
    try:
        hooks, _ = build(cfg.intervene, toy_family())
        out, layer2, times = train_and_time(
            cfg.train,
            target,
            cfg.model.sigma_init,
            seeds,
            ctx.child(hooks=(*ctx.hooks, *hooks)) if hooks else ctx,
            cfg.task.alpha_star,
            cfg.task.w_star,
        )
        gf = gf_future.result() if gf_future else _gradient_flows(cfg)
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    tables = {"metrics": out.metrics}
    summary = _summarise(layer2, times, cfg, out.p_tilde_after_stage1)
    if cfg.literal:
        literal_cfg = replace(cfg, train=replace(cfg.train, stage2_layer1="trained"), literal=False)
        lit, lit_layer2, lit_times = train_and_time(
            literal_cfg.train,
            target,
            cfg.model.sigma_init,
            seeds,
            ctx.child("literal", hooks=(*ctx.hooks, *hooks)),
            cfg.task.alpha_star,
            cfg.task.w_star,
        )
        tables["literal"] = lit.metrics
        summary["literal"] = literal_summary(lit_layer2, lit_times, literal_cfg, lit.p_tilde_after_stage1)
    if cfg.intervene:
        summary["intervention_windows_t"] = [
            [cfg.train.lr * a, None if b is None else cfg.train.lr * b] for a, b in windows(cfg.intervene)
        ]
    if gf:
        tables["gf"] = pd.concat([r.curve.assign(method=m) for m, r in gf.items()], ignore_index=True)
        summary["gf_phases"] = {m: r.phases.as_dict() for m, r in gf.items()}
    return Results(tables, summary)


def _summarise(layer2: pd.DataFrame, times: list[dict], cfg: Config, p_tilde_1: np.ndarray) -> dict:
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
    """The literal protocol's summary, and where finite p̃ moves its fixed point (docs/conventions.md#wang-5-3).

    With r = e^{−p̃}, y_s = Σ_k (1−r) r^{k−1} x_{s−k} (eq. 5, long context), and E[x_{s−1} | y_s] = (1+r) y_s.
    The 4-gram head (positive softmax weights) fits g*x_{L−2} at best from y_{L−1} alone: g → g*(1+r), leaving the
    fraction r² = e^{−2p̃} of L_G4(0).  The induction head's logit w_KQ² x_L y_s best matches w*² x_L x_{s−1} at
    w_KQ ≈ w* √(1+r)."""
    out = _summarise(layer2, times, cfg, p_tilde_1)
    first, last = layer2.groupby("run").first(), layer2.groupby("run").last()
    r = np.exp(-p_tilde_1.astype(float))[first.index.to_numpy()]
    out["g4_end_over_start"] = float(np.mean(last.loss_G4 / first.loss_G4))
    out["g4_end_over_floor"] = float(np.mean(last.loss_G4.to_numpy() / first.loss_G4.to_numpy() / r**2))
    out["w_V1_over_predicted"] = float(np.mean(last.w_V1.to_numpy() / (g_star(cfg.task.alpha_star) * (1 + r))))
    out["w_KQ_over_predicted"] = float(np.mean(last.w_KQ.to_numpy() / (cfg.task.w_star * np.sqrt(1 + r))))
    return out


def balance(layer2: pd.DataFrame) -> float:
    """Lemma 5.4: w_Q² − w_K² is conserved in Stage II, hence ≡ 0 from θ(0) = σ_init·1.  Its largest |value| over
    the layer-2 stage and the runs, relative to the largest w_Q² + w_K² (0 exactly when balanced)."""
    gap = (layer2.w_Q**2 - layer2.w_K**2).abs().max()
    return float(gap / max(float((layer2.w_Q**2 + layer2.w_K**2).max()), 1e-30))


def _nanmean(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


def _gradient_flows(cfg: Config) -> dict:
    """GF curves on the Stage-II time axis [0, lr × steps] (not for Adam, whose time axis differs)."""
    if cfg.gf == "none" or cfg.train.optimizer == "adam":
        return {}
    steps = cfg.train.stage2_steps + (cfg.train.stage1_steps if cfg.train.schedule == "joint" else 0)
    t_end = cfg.train.lr * steps
    base = dict(
        L=cfg.task.L,
        alpha_star=cfg.task.alpha_star,
        w_star=cfg.task.w_star,
        sigma_init=cfg.model.sigma_init,
        t_end=max(t_end, 1e-6),
        tokens=cfg.task.tokens,
        mc_samples=cfg.gf_mc_samples,
        mc_seed=cfg.seeds[0],
    )
    methods = {"both": ("closed", "exact"), "closed": ("closed",), "exact": ("exact",)}[cfg.gf]
    return {m: solve_flow(FlowProblem(**base, loss=m)) for m in methods}


SYMBOLS = {
    "loss": r"$\mathcal{L}$",
    "loss_G4": r"$\mathcal{L}_{G_4}$",
    "loss_IH2": r"$\mathcal{L}_{IH_2}$",
    "p": "$p$",
    "w_V1": "$w_{V1}$",
    "w_V2": "$w_{V2}$",
    "w_KQ": "$w_{KQ}$",
    "p_tilde": r"$\tilde p = p^{(1,1)}$",
}


def _curves(ax, table: pd.DataFrame, col: str, **style) -> None:
    """One curve per run; with several runs the mean over seeds ± one standard deviation, each seed faint."""
    wide = table.pivot_table(index="t", columns="run", values=col)
    if wide.shape[1] == 1:
        ax.plot(wide.index, wide.iloc[:, 0], lw=1.4, **style)
    else:
        plots.seed_band(ax, wide.index.to_numpy(), wide.to_numpy().T, style["color"], style.get("label"))


def _literal_curves(ax, literal: pd.DataFrame | None, cols: tuple[str, ...]) -> None:
    """The literal protocol's Stage II (``literal = true``), mean over runs, dash-dotted beside the default."""
    if literal is None or not len(literal):
        return
    mean = layer2_metrics(literal).groupby("t")[list(cols)].mean()
    for col in cols:
        label = f"{SYMBOLS[col]} (literal: learned layer 1)" if col == cols[0] else None
        ax.plot(mean.index, mean[col], "-.", color=plots.CURVE_COLORS[col], lw=0.9, alpha=0.7, label=label)


def plot(results: Results, out_dir: Path) -> list[Path]:
    """Three panels on the Stage-II t axis — total loss; L_G4 and L_IH2; p, w_V1, w_V2, w_KQ — with GF
    overlaid (dashed: closed form, dotted: exact softmax), the literal protocol dash-dotted (``literal = true``) and
    the four phases shaded; plus Stage I."""
    metrics, s = results.tables["metrics"], results.summary
    st2 = layer2_metrics(metrics)
    gf = results.tables.get("gf")
    fig, axes = plots.subplots(3)
    spans = plots.phase_spans(s, float(st2.t.max()))
    panels = [("loss",), ("loss_G4", "loss_IH2"), ("p", "w_V1", "w_V2", "w_KQ")]
    titles = ["total loss", "partial losses", "layer-2 parameters"]
    ylabels = ["loss (log scale)", "partial loss (log scale)", "parameter value"]
    t_end = float(st2.t.max())
    for ax, cols, title, ylabel in zip(axes, panels, titles, ylabels):
        plots.shade_phases(ax, spans, labels=ax is axes[0])
        plots.mark_windows(ax, s.get("intervention_windows_t"), t_end)
        for col in cols:
            _curves(ax, st2, col, color=plots.CURVE_COLORS[col], label=f"{SYMBOLS[col]} (SGD)")
            for method, style in (("closed", "--"), ("exact", ":")):
                g = gf[gf.method == method] if gf is not None else []
                if len(g):
                    label = f"GF ({method} form)" if col == cols[0] else None
                    ax.plot(g.t, g[col], style, color=plots.CURVE_COLORS[col], lw=1.0, label=label)
        _literal_curves(ax, results.tables.get("literal"), cols)
        ax.set(title=title, xlabel="t = lr × step (Stage II)", ylabel=ylabel)
        if ax is not axes[2]:  # log scale, floored below the SGD curves (GF's closed form reaches 1e-18)
            floor = float(st2[list(cols)].where(st2[list(cols)] > 0).min().min())
            ax.set_yscale("log")
            ax.set_ylim(bottom=floor / 10)
        ax.legend(fontsize=7, loc="center right" if ax is axes[2] else "upper right", ncol=2 if ax is axes[2] else 1)
    times = ", ".join(f"{k} = {plots.num(s.get(k)):.0f}" for k in ("T_I", "T_II", "T_50", "T_III"))
    fig.suptitle(f"Lazy to rich, SGD over {s.get('n_runs', 1)} seed(s): phase times {times}")
    paths = [plots.save(fig, Path(out_dir) / "lazy_to_rich.png")]
    st1 = metrics[metrics.stage == "I"]
    if len(st1):
        fig, (ax,) = plots.subplots(1)
        _curves(ax, st1, "p_tilde", color=plots.CURVE_COLORS["p_tilde"], label=SYMBOLS["p_tilde"])
        ax.set(
            title=r"Stage I: the layer-1 slope ($y_s \to x_{s-1}$ needs $\tilde p \gg 1$)",
            xlabel="t = lr × step (Stage I)",
            ylabel=r"$\tilde p$",
        )
        ax.legend(fontsize=7)
        paths.append(plots.save(fig, Path(out_dir) / "stage1.png"))
    return paths
