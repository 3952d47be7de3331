"""The learners of ``plateau-scaling``: Theorem 5.5's gradient flow and the mechanism-free baselines its controls
swap in (docs/conventions.md#wang-5-5 "Controls").

The dynamics paper (§3.3) names the two drivers of the plateau: the *time-scale separation* of the dot product,
whose logit is quadratic in (w_Q, w_K) so that |ẇ_KQ| ∼ w_KQ starts at σ_init (the log(1/σ_init) and, through the
rate w*², the 1/w*²), and the *speed difference* of the components, L_G4(0) ∼ α*²/(1+α*)² against
L_IH2(0) ∼ 1/((1+α*)²L) (the (1+α*)²L).  Each baseline is the Stage-II flow θ̇ = −P(θ)∇L with a diagonal P that
removes one mechanism and nothing else (the loss, the model's function and θ(0) = σ_init·1 are the paper's):

* ``dp-linear``: P = 1/(w_Q² + w_K²) on w_Q, w_K, so v = w_Q w_K follows v̇ = −∂L/∂v: the induction head's logit
  linear in its one parameter (no time-scale separation);
* ``ih-fast``: P = L_G4(θ0)/L_IH2(θ0) ≈ α*²(L − 2) on w_V2, w_Q, w_K: the induction head learned as if its share of
  the target were the 4-gram's (no speed difference);
* ``g4-slow``: P = L_IH2(θ0)/L_G4(θ0) on p, w_V1: the 4-gram learned as if its share were the induction head's;
* ``rpe-frozen``: P = 0 on p: the 4-gram head's RPE slope held at σ_init, so its softmax never sharpens.

:func:`solve` integrates the flow (the paper's learner is :func:`inductionlab.train.flow.solve_flow` itself);
:class:`Preconditioned` applies the same P to each SGD update; the experiment's controls
(``experiments/wang/claims/plateau_scaling.py``) are its runs that swap them in."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
import torch
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from inductionlab.analysis.phases import first_crossing
from inductionlab.models import toy
from inductionlab.theory import mixed as th
from inductionlab.train.flow import METHOD, STATE, FlowProblem, FlowResult, closed_form_loss, exact_loss, solve_flow
from inductionlab.train.loop import Hook, LoopState

Learner = Literal["gradient-flow", "dp-linear", "ih-fast", "g4-slow", "rpe-frozen"]
G4, IH = (0, 1), (2, 3, 4)  # the 4-gram's and the induction head's places in the flow state (p, w_V1, w_V2, w_Q, w_K)


def share_ratio(L: int, alpha_star: float, w_star: float, sigma_init: float) -> float:
    """L_G4(θ0)/L_IH2(θ0) at θ(0) = σ_init·1 (eqs. 7, 10): how much larger the 4-gram's share of the target is."""
    s = sigma_init
    return th.loss_grad_g4(s, s, alpha_star, L)[0] / th.loss_grad_ih2(s, s, s, alpha_star, w_star, L)[0]


def factors(learner: Learner, y: np.ndarray, ratio: float) -> np.ndarray:
    """P(θ) on the flow state ``y`` = (p, w_V1, w_V2, w_Q, w_K), one factor each (``ratio``: :func:`share_ratio`)."""
    out = np.ones(5)
    if learner == "dp-linear":
        out[3:] = 1 / (y[3] ** 2 + y[4] ** 2)
    elif learner == "ih-fast":
        out[list(IH)] = ratio
    elif learner == "g4-slow":
        out[list(G4)] = 1 / ratio
    elif learner == "rpe-frozen":
        out[0] = 0.0
    return out


def solve(prob: FlowProblem, learner: Learner, n_points: int = 400) -> FlowResult:
    """The Stage-II flow θ̇ = −P(θ)∇L of ``learner`` from θ = σ_init·1 to ``prob.t_end``: the curve on the grid of
    :func:`~inductionlab.train.flow.solve_flow` and the phases, each crossing bracketed between the solver's steps
    and solved on its dense output (the same times the solver events of ``solve_flow`` give)."""
    if learner == "gradient-flow":
        return solve_flow(prob, n_points=n_points)
    loss_fn = closed_form_loss(prob) if prob.loss == "closed" else exact_loss(prob)
    ratio = share_ratio(prob.L, prob.alpha_star, prob.w_star, prob.sigma_init)
    y0 = toy.init_params(prob.sigma_init, 1, torch.float64)[0, 1:].numpy()
    calls = [0]

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return -factors(learner, y, ratio) * loss_fn(y)[2]

    sol = solve_ivp(rhs, (0, prob.t_end), y0, method=METHOD, rtol=1e-6, atol=1e-9, dense_output=True)
    t_grid = np.unique(
        np.concatenate([np.linspace(0, prob.t_end, n_points // 2), np.geomspace(1e-3, prob.t_end, n_points // 2)])
    )
    steps, grid = _sample(sol, sol.t, loss_fn), _sample(sol, t_grid, loss_fn)
    return FlowResult(grid, _phases(sol, steps, loss_fn, prob), calls[0])


def _sample(sol, ts: np.ndarray, loss_fn) -> pd.DataFrame:
    rows = [(t, *loss_fn(y)[:2], *y) for t, y in zip(ts, sol.sol(ts).T)]
    df = pd.DataFrame(rows, columns=["t", "loss_G4", "loss_IH2", *STATE]).drop_duplicates("t")
    df.insert(1, "loss", df.loss_G4 + df.loss_IH2)
    df["w_KQ"] = np.sign(df.w_Q * df.w_K) * np.sqrt((df.w_Q * df.w_K).abs())
    return df.reset_index(drop=True)


def _phases(sol, steps: pd.DataFrame, loss_fn, prob: FlowProblem) -> th.PhaseTimes:
    """Theorem 5.5's phase times (docs/conventions.md#wang-5-5) on the solver's steps, each refined by root finding
    on the dense output; +inf for a level never crossed (docs/conventions.md#never)."""

    def value(col: str, t: float) -> float:
        y = sol.sol(t)
        if col.startswith("loss"):
            return float(loss_fn(y)[0 if col == "loss_G4" else 1])
        v = float(y[3] * y[4])
        return float(y[2]) if col == "w_V2" else math.copysign(math.sqrt(abs(v)), v)

    def cross(col: str, level: float, direction: str, start: float = 0.0) -> float:
        t = first_crossing(steps.t, steps[col], level, direction, start)
        if not math.isfinite(t) or t <= start:
            return t
        i = int(np.searchsorted(steps.t.to_numpy(), t))
        lo, hi = max(float(steps.t[i - 1]), start), float(steps.t[i])
        return float(brentq(lambda s: value(col, s) - level, lo, hi)) if hi > lo else hi

    ws = prob.w_star
    t_i = cross("loss_G4", 0.01 * float(steps.loss_G4[0]), "down")
    t_o = cross("w_V2", th.h_star(prob.alpha_star), "up")
    ih = [math.inf] * 3
    if math.isfinite(t_o):
        ref = value("loss_IH2", t_o)
        ih = [cross("loss_IH2", f * ref, "down", t_o) for f in (0.99, 0.01, 0.5)]
    t_ii, t_iii, t_50 = ih
    return th.PhaseTimes(t_i, t_o, t_ii, t_iii, t_50, cross("w_KQ", 0.01 * ws, "up"), cross("w_KQ", 0.5 * ws, "up"))


class Preconditioned(Hook):
    """The learner's P(θ) on SGD: each Stage-II update Δθ becomes P(θ_before)·Δθ (``ratios``: :func:`share_ratio`
    per run), the Euler step of θ̇ = −P(θ)∇L."""

    def __init__(self, learner: Learner, ratios: list[float]):
        self.learner, self.ratios, self.before = learner, ratios, torch.empty(0)

    def before_step(self, state: LoopState) -> None:
        self.before = state.params.clone()

    def after_step(self, state: LoopState) -> None:
        if state.stage.name != "II":
            return
        y = self.before[:, 1:].double().numpy()
        p = np.stack([factors(self.learner, row, r) for row, r in zip(y, self.ratios)])
        scale = torch.as_tensor(p, dtype=state.params.dtype)
        state.params[:, 1:] = self.before[:, 1:] + scale * (state.params[:, 1:] - self.before[:, 1:])
