"""GD vs Adam in high dimension (Wang et al., workshop Fig. 4; docs/conventions.md#wang-6-3): with D = 100, the toy's
layer 2 trained by online GD (the Fig. 2 optimiser, lr 0.1) stays on the induction-head plateau within the
budget, while Adam (lr 5e-4) leaves it — its per-coordinate normalisation moves all D² entries of W_Q, W_K
at once, where GD's growth is set by the tiny initial ‖W_Q‖‖W_K‖.

GD runs ``gd_steps`` = 20 000 steps, past the plateau of the D = 1 toy (which this model, under the same GD, leaves
by 16 000 steps: L_IH2 at 0.013 of its plateau), and the D = 1 toy (the Fig. 1 model) runs beside it for the same
budget, so that "GD stays on the plateau" tells D = 100 from D = 1; Adam runs ``train.steps``.  The flat stretches of each run's L_IH2
(:func:`flat_stretches`) measure the workshop caption's "multiple plateaus" of Adam; :func:`g4_lead` its "begins
with the 4-gram pattern".  ``swap_optimizers`` trades the two optimizers under the same labels (the negative
control, docs/conventions.md#controls).

The GD and Adam runs start from the same parameters and see the same batches.  The plateau value of L_IH2 is the
loss of the best IH value h with uniform attention ρ (W_Q W_K = 0), measured on the evaluation sample; the summary
reports each run's final L_IH2 as a fraction of its own dimension's plateau.  Model and readings:
:mod:`inductionlab.models.highdim`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import plots, rng
from inductionlab.analysis.claims import Between, Claim, Control, Evidence
from inductionlab.config import check_device, check_seeds, require, set_here
from inductionlab.experiments.experiment import SQUARED, Experiment
from inductionlab.models import highdim
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.mixed import lifted_target
from inductionlab.train.autograd import TrainConfig, train

FLAT_RATE = 0.02  # decades of L_IH2 per 100 steps: slower than this is flat
FLAT_STEPS = 200  # the least length of a plateau, in steps
LABELS = ("GD", "Adam")  # the two runs in D = model.D
D1 = "GD D=1"  # the GD run on the D = 1 toy, the reference for GD's plateau
PREFIX = {"GD": "gd", "Adam": "adam", D1: "gd_d1"}  # each run's summary keys begin so


@dataclass(frozen=True)
class Config:
    model: highdim.HighDimConfig = field(default_factory=highdim.HighDimConfig)
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            optimizer="sgd", lr=0.1, steps=3000, batch_size=1000, eval_every=100, eval_log_points=20
        )
    )
    gd_lr: float = 0.1  # learning rate of the GD run (SGD at train.batch_size, gd_steps steps)
    adam_lr: float = 5e-4  # learning rate of the Adam run
    gd_steps: int = 20_000  # GD (and the D = 1 reference) past the D = 1 plateau; Adam runs train.steps
    swap_optimizers: bool = False  # the negative control: the "GD" run trains with Adam at adam_lr, and back
    eval_size: int = 4000  # sequences of the fixed evaluation sample
    eval_seed: int = 2024  # seed of the fixed evaluation sample (not a run axis)
    seeds: tuple[int, ...] = (0,)  # one seed (no run axis), for every random draw; for several: sweep --n-seeds K
    device: str = "cpu"  # cpu, cuda or cuda:i

    def __post_init__(self) -> None:
        check_device(self.device)
        check_seeds(self.seeds, run_axis=False)
        set_here(self.train, "train", {"optimizer": "sgd", "lr": 0.1}, "the GD and Adam runs (gd_lr, adam_lr)")
        for key in ("gd_lr", "adam_lr"):
            require(getattr(self, key) > 0, key, f"learning rates must be > 0, got {getattr(self, key)}")
        require(self.eval_size >= 1, "eval_size", f"must be ≥ 1, got {self.eval_size}")
        require(self.gd_steps >= 1, "gd_steps", f"must be ≥ 1, got {self.gd_steps}")


CONFIG = Config()
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"train.steps": 800, "gd_steps": 800},
    "smoke": {
        "model.D": 8,
        "train.steps": 30,
        "gd_steps": 30,
        "train.batch_size": 64,
        "eval_size": 64,
        "train.eval_every": 10,
    },
    "reading-b": {"model.reading": "B", "train.steps": 6000},
    "swap": {"train.steps": 2000, "gd_steps": 2000},  # the control: Adam's L_IH2 is 0.2× the plateau by 2000 steps
}

CONTROLS = (
    Control(
        name="swap-optimizers",
        breaks="the two D-dimensional runs trade optimizers (the GD run trains with Adam at lr 5e-4, the Adam run "
        "with GD at lr 0.1; the D = 1 reference stays GD), 2000 steps each: what tells them apart is the optimizer, "
        "not the label",
        overrides={"swap_optimizers": True},
        preset="swap",
        wall="~2.5 min",
    ),
)

PAPER_SENTENCE = (
    'workshop App. B.3: "In both scenarios, the learning process begins with the 4-gram pattern, followed by a '
    "gradual learning phase of the induction head mechanism. Notably, within the given number of iterations, GD "
    'remains stuck in the plateau, whereas Adam successfully escapes that plateau." Fig. 4 caption: "(2) Adam, while '
    "eventually transitioning from the lazy regime (learning 4-gram) to the rich regime (learning induction head), "
    'experiences a challenging transition characterized by multiple plateaus during learning induction heads."'
)
REGIME = (
    "the setup of App. B.3 (D = 100, W* = 0.49 I_D/D, ‖W_Q‖_F = ‖W_K‖_F = σ_init = 0.01, Adam lr 5e-4, the rest of "
    "Fig. 1: α* = 1, L = 40, online batches of 1000), layer 2 on the ideal layer 1 (Stage II); run: "
    "adam-vs-gd-highdim, default preset, reading A (W_Q, W_K ∈ ℝ^{{D×D}}, tokens in ℝ^D), keys {key}; reading B "
    "(scalar tokens, W_Q, W_K ∈ ℝ^D, --preset reading-b) gives {reading_b}. The paper's W_K, W_Q ∈ ℝ^D with the "
    "matrix target 0.49 I_D/D fits neither reading exactly, so both are measured; the re-implementation sums the "
    "loss over the output coordinates as the paper's (3) does, where the run averages it (Adam is invariant to the "
    "scale), and checks both readings at batch 100 over data seeds 0–3: 0 plateaus on every seed and reading, the "
    "4-gram lead 1.76 (A) and 1.89–1.93 (B) at each"
)

CLAIMS = (
    Claim(
        id="wang-ws4-gd-plateau",
        paper="wang",
        where='workshop App. B.3 and Fig. 4: "within the given number of iterations, GD remains stuck in the plateau"',
        statement="Online GD in D = 100 is still on the induction-head plateau after 20 000 steps, a budget at which "
        "the D = 1 toy under the same GD has left it (wang-ws4-gd-d1-leaves; its L_IH2 is 0.90 of its plateau at "
        "10 000 steps, 0.48 at 13 000, 0.013 at 16 000, 1.1e-5 at 20 000)",
        key="gd_ih_fraction_of_plateau",
        expected="≈ 1 (on the plateau)",
        test=Between(lo=0.9),
        control="swap-optimizers",
        if_failed="open: GD in D = 100 leaves the plateau within 20 000 steps, as the D = 1 toy does",
    ),
    Claim(
        id="wang-ws4-gd-d1-leaves",
        paper="wang",
        where='workshop Fig. 4 caption: "a larger D increases the difficulty of the transition from the lazy regime '
        '(learning 4-gram) to the rich regime (learning induction head)"; the D = 1 toy of Fig. 1',
        statement="Under the same GD and budget (20 000 steps, lr 0.1) the D = 1 toy has left its IH plateau (final "
        "L_IH2 ≤ 0.1 of it): the band that a D-independent plateau would put wang-ws4-gd-plateau in, so that "
        "claim tells D = 100 from D = 1",
        key="gd_d1_ih_fraction_of_plateau",
        expected="≪ 1 (D = 1 off its plateau)",
        test=Between(hi=0.1),
        if_failed="open: the D = 1 toy is still on its plateau at GD's budget, which then cannot tell D = 100 from "
        "D = 1",
    ),
    Claim(
        id="wang-ws4-gd-4gram-first",
        paper="wang",
        where='workshop App. B.3: "In both scenarios, the learning process begins with the 4-gram pattern"; Fig. 4 '
        'caption: "(1) GD learns the 4-gram component first"',
        statement="Under GD in D = 100, when L_IH2 first falls to half its start, L_G4 has already fallen further in "
        "relative terms: (L_G4/L_G4(0)) / (L_IH2/L_IH2(0)) < 1 at that evaluation",
        key="gd_g4_lead",
        expected="< 1",
        test=Between(hi=1),
        control="swap-optimizers",
        if_failed="open: GD's IH loss halves before its 4-gram loss has fallen as far",
    ),
    Claim(
        id="wang-ws4-adam-escapes",
        paper="wang",
        where='workshop App. B.3 and Fig. 4: "whereas Adam successfully escapes that plateau"',
        statement="Adam (lr 5e-4) escapes the induction-head plateau within 3000 steps",
        key="adam_ih_fraction_of_plateau",
        expected="≪ 1",
        test=Between(hi=0.01),
        control="swap-optimizers",
    ),
    Claim(
        id="wang-ws4-adam-4gram-first",
        paper="wang",
        where='workshop App. B.3: "In both scenarios, the learning process begins with the 4-gram pattern"',
        statement="Under Adam in D = 100, when L_IH2 first falls to half its start, L_G4 has already fallen further in "
        "relative terms: (L_G4/L_G4(0)) / (L_IH2/L_IH2(0)) < 1 at that evaluation",
        key="adam_g4_lead",
        expected="< 1",
        test=Between(hi=1),
        if_failed="a finding about the paper: Adam fits the IH head at the pace of the 4-gram head, not after it: "
        "when L_IH2 has halved L_G4 is still at 81 % of its start (ratio 1.73, evaluated every 50 steps; reading B "
        "1.72); at step 1000 L_G4 is at 30 %, L_IH2 at 6 %; GD's ratio is 0.40",
        evidence=Evidence(
            sentence=PAPER_SENTENCE,
            regime=REGIME.format(key="adam_g4_lead", reading_b="a ratio of 1.72 (6000 steps)"),
            reimplementation="tests/findings/test_wang_adam_plateaus.py",
        ),
    ),
    Claim(
        id="wang-ws4-adam-plateaus",
        paper="wang",
        where='workshop App. B.3, Fig. 4 caption: Adam "experiences a challenging transition characterized by multiple '
        'plateaus during learning induction heads"',
        statement="Adam's induction-head loss descends through at least two plateaus (flat stretches of L_IH2 of ≥ 200 steps "
        "moving < 0.02 decades per 100 steps, above 1% of the IH plateau)",
        key="adam_ih_plateaus.count",
        expected="multiple plateaus (≥ 2)",
        test=Between(lo=2),
        if_failed="a finding about the paper: Adam's L_IH2 falls from 409× its IH plateau through it to 1e-5 of it "
        "in 3000 steps without one flat stretch (reading B: 17× to 7e-7, none either), while GD's sits on one "
        "plateau",
        evidence=Evidence(
            sentence=PAPER_SENTENCE,
            regime=REGIME.format(
                key="adam_ih_plateaus.count, adam_ih_fraction_of_plateau",
                reading_b="0 plateaus, L_IH2 at 7e-7 of its plateau at step 3000",
            ),
            reimplementation="tests/findings/test_wang_adam_plateaus.py",
        ),
    ),
)


def flat_stretches(steps: np.ndarray, loss: np.ndarray, floor: float) -> list[list[float]]:
    """The stretches [start, end] of at least FLAT_STEPS steps over which log10 ``loss`` moves by less than
    FLAT_RATE decades per 100 steps while ``loss`` is above ``floor``: the plateaus of a descent (the workshop
    paper's "multiple plateaus" of Adam)."""
    logs = np.log10(np.maximum(loss, 1e-30))
    rate = np.abs(np.diff(logs)) / np.diff(steps) * 100
    flat = (rate < FLAT_RATE) & (loss[:-1] > floor)
    found, start = [], None
    for i, f in enumerate([*flat, False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            if steps[i] - steps[start] >= FLAT_STEPS:
                found.append([float(steps[start]), float(steps[i])])
            start = None
    return found


def plateau_loss(cfg: highdim.HighDimConfig, x: torch.Tensor) -> float:
    """min_h ½E‖h·x̄ − f*_IH‖²/d with x̄ = mean_{s=2..L−1} x_s (uniform ρ): the IH plateau of L_IH2."""
    mean = x[:, 1:-1].mean(1)
    want = lifted_target(x, cfg.alpha_star, cfg.w_star())[1]
    h = float((mean * want).sum() / mean.square().sum())
    return float(0.5 * (h * mean - want).square().mean())


def _runs(cfg: Config) -> list[tuple[str, int, Literal["sgd", "adam"], float, int]]:
    """(label, D, optimizer, lr, steps) of the three runs: GD and Adam in D = ``model.D``, and GD on the D = 1 toy
    at GD's budget (the reference that tells a plateau lengthened by D from the D = 1 one).  ``swap_optimizers``
    trades the optimizers and learning rates of the two D-dimensional runs under the same labels and budgets (the
    negative control, docs/conventions.md#controls); the D = 1 reference stays GD."""
    optimizers: list[tuple[Literal["sgd", "adam"], float]] = [("sgd", cfg.gd_lr), ("adam", cfg.adam_lr)]
    if cfg.swap_optimizers:
        optimizers.reverse()
    runs = [
        (name, cfg.model.D, *opt, steps)
        for name, opt, steps in zip(LABELS, optimizers, (cfg.gd_steps, cfg.train.steps))
    ]
    return [*runs, (D1, 1, "sgd", cfg.gd_lr, cfg.gd_steps)]


def _train_one(cfg: Config, run: tuple, ctx: RunContext) -> tuple[pd.DataFrame, float]:
    """One run's metrics table and its IH plateau loss (:func:`plateau_loss`), on an evaluation sample of its own
    dimension.  The D = 1 run starts from the Fig. 1 toy's θ(0) = σ_init·1 (a random sign of W_Q W_K would start
    it on the saddle W_Q = −W_K, which GD never leaves) and keeps no checkpoint (a cheap reference: the run's models
    stay GD and Adam); the others start from the seed's draw."""
    name, D, optimizer, lr, steps = run
    m = replace(cfg.model, D=D)
    x_eval = torch.randn(cfg.eval_size, m.L, m.d, generator=rng.generator(cfg.eval_seed)).to(cfg.device)
    theta0 = highdim.init_theta(m, 1, rng.generator(cfg.seeds[0]))
    theta0 = theta0.abs() if name == D1 else theta0
    want_eval = lifted_target(x_eval, m.alpha_star, m.w_star())

    def loss(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        loss_g4, loss_ih2 = highdim.partial_losses(m, theta, x, lifted_target(x, m.alpha_star, m.w_star()))
        return loss_g4 + loss_ih2

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        g4, ih = highdim.partial_losses(m, theta, x_eval, want_eval)
        p = highdim.unpack(m, theta)
        return {
            "loss_G4": g4.double().cpu().numpy(),
            "loss_IH2": ih.double().cpu().numpy(),
            "p": p["p"].double().cpu().numpy(),
            "g": p["g"].double().cpu().numpy(),
            "h": p["h"].double().cpu().numpy(),
            "kq_error": highdim.kq_product(m, theta).double().cpu().numpy(),
        }

    tcfg = replace(cfg.train, optimizer=optimizer, lr=lr, steps=steps)
    _, metrics = train(
        tcfg,
        theta0,
        loss,
        lambda gen: torch.randn(tcfg.batch_size, m.L, m.d, generator=gen),
        evaluate,
        ctx.child(name, **({"run_dir": None} if name == D1 else {})),
        desc=name,
        model={"family": "highdim", "config": m},
    )
    return metrics.assign(optimizer=name), plateau_loss(m, x_eval)


def run(cfg: Config, ctx: RunContext) -> Results:
    tables, summary = [], {}
    for run_ in _runs(cfg):
        metrics, plateau = _train_one(cfg, run_, ctx)
        tables.append(metrics)
        summary[f"{'d1_' if run_[0] == D1 else ''}ih_plateau_loss"] = plateau
        summary.update(_run_summary(PREFIX[run_[0]], metrics.sort_values("step"), plateau))
    return Results({"metrics": pd.concat(tables, ignore_index=True)}, summary)


def _run_summary(prefix: str, g: pd.DataFrame, plateau: float) -> dict[str, Any]:
    """One run's summary keys: its final L_IH2 over the IH plateau loss, ‖W_QᵀW_K − W*‖/‖W*‖ at the end, the flat
    stretches of L_IH2 above 1% of the plateau (:func:`flat_stretches`) and the 4-gram's lead (:func:`g4_lead`)."""
    steps, loss_ih = g.step.to_numpy(float), g.loss_IH2.to_numpy(float)
    stretches = flat_stretches(steps, loss_ih, 0.01 * plateau)
    return {
        f"{prefix}_ih_fraction_of_plateau": float(loss_ih[-1] / plateau),
        f"{prefix}_kq_error": float(g.kq_error.iloc[-1]),
        f"{prefix}_ih_plateaus": {"count": len(stretches), "stretches": stretches},
        f"{prefix}_g4_lead": g4_lead(g.loss_G4.to_numpy(float), loss_ih),
    }


def g4_lead(loss_g4: np.ndarray, loss_ih: np.ndarray) -> float | None:
    """(L_G4/L_G4(0)) / (L_IH2/L_IH2(0)) at the first evaluation where L_IH2 ≤ ½ L_IH2(0): below 1 when the 4-gram
    has fallen further, in relative terms, by the time the IH loss has halved (the workshop's "the learning process
    begins with the 4-gram pattern", App. B.3); None when L_IH2 never halves."""
    halved = np.flatnonzero(loss_ih <= 0.5 * loss_ih[0])
    if halved.size == 0:
        return None
    i = halved[0]
    return float((loss_g4[i] / loss_g4[0]) / (loss_ih[i] / loss_ih[0]))


def plot(results: Results, out_dir: Path) -> list[Path]:
    metrics, s = results.tables["metrics"], results.summary
    fig, (ax, kx) = plots.subplots(2, width=4.8, height=3.6)
    styles = {"GD": "-", "Adam": "--", D1: ":"}
    for name, g in metrics.groupby("optimizer"):
        ax.semilogy(g.step, g.loss_G4, styles[name], color=plots.CURVE_COLORS["loss_G4"], label=f"L_G4, {name}")
        ax.semilogy(g.step, g.loss_IH2, styles[name], color=plots.CURVE_COLORS["loss_IH2"], label=f"L_IH2, {name}")
        kx.semilogy(g.step, g.kq_error, styles[name], color=plots.CURVE_COLORS["w_KQ"], label=name)
    ax.axhline(s["ih_plateau_loss"], color="gray", lw=0.8, ls=":", label="IH plateau (GD, Adam)")
    ax.set_xlabel("step"), ax.set_ylabel("partial loss")
    ax.set_title(
        f"L_IH2 / plateau at the end: GD {plots.num(s.get('gd_ih_fraction_of_plateau')):.2f}, "
        f"Adam {plots.num(s.get('adam_ih_fraction_of_plateau')):.1e}",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    kx.set_xlabel("step"), kx.set_ylabel("‖W_Qᵀ W_K − W*‖_F / ‖W*‖_F")
    kx.set_title("induction-head weights", fontsize=9)
    kx.legend(fontsize=8)
    return [plots.save(fig, Path(out_dir) / "adam_vs_gd_highdim.png")]


EXPERIMENT = Experiment(
    devices=("cpu", "cuda"),
    loss_unit=SQUARED,
    name="adam-vs-gd-highdim",
    description="Workshop Fig. 4: D = 100, online GD (lr 0.1) stays on the IH plateau, Adam (lr 5e-4) escapes",
    figure="Wang et al. workshop Fig. 4",
    wall="~17 min",  # default preset, 2 cores: GD 20 000 steps, Adam 3000 (estimated from ~9 min at GD 10 000), D = 1 ~1
    headline=(
        "gd_ih_fraction_of_plateau",
        "adam_ih_fraction_of_plateau",
        "gd_d1_ih_fraction_of_plateau",
        "gd_kq_error",
        "adam_kq_error",
    ),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
    claims=CLAIMS,
    controls=CONTROLS,
)
