"""Gradient flow of the Stage-II toy model (Wang et al., dynamics paper eq. 4), solved with scipy.

Two right-hand sides on the model's own parameters (p, g = w_V1, h = w_V2, w_Q, w_K):

* ``closed``: the closed forms (7) and exp-simplified (10) of :mod:`inductionlab.theory.mixed`;
* ``exact``: the true-softmax loss of the toy model with y_s = x_{s-1}, its gradient averaged over a
  fixed Monte-Carlo sample (float64), so closed form and exact loss can be compared on one axis.

Phase boundaries (:class:`inductionlab.theory.mixed.PhaseTimes`) are located as solver events: T_I, T_o and the
w_KQ thresholds directly; T_II, T_50, T_III after T_o, whose reference loss L_IH2(T_o) is known only
once T_o is reached (the solve restarts there).  Conventions: w_Q and w_K are separate parameters, so
w = w_Q = w_K moves at half the rate of the printed ŵ ODE (docs/conventions.md#wang-a6).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, cast

import numpy as np
import pandas as pd
import torch
from scipy.integrate import solve_ivp

from inductionlab import rng, timing
from inductionlab.config import require
from inductionlab.models import toy
from inductionlab.tasks.mixed import MixedTarget, Tokens, new_tokens
from inductionlab.theory import mixed as th
from inductionlab.train.toy_batches import make_batch

METHOD = "LSODA"  # stiff late (g relaxes at rate ~1 over t ~ 1e4): an implicit switch pays
STATE = ("p", "w_V1", "w_V2", "w_Q", "w_K")  # GF state order


@dataclass(frozen=True)
class FlowProblem:
    """One gradient-flow configuration (Stage II, idealised layer 1)."""

    L: int = 40
    alpha_star: float = 1.0
    w_star: float = 0.49
    sigma_init: float = 0.01
    t_end: float = 10_000.0
    loss: Literal["closed", "exact"] = "closed"
    tokens: Tokens = "gaussian"
    mc_samples: int = 20_000
    mc_seed: int = 0

    def __post_init__(self) -> None:
        require(self.L >= 5, "L", f"must be ≥ 5, got {self.L}")
        require(self.sigma_init > 0, "sigma_init", f"must be > 0, got {self.sigma_init}")
        require(self.alpha_star > 0, "alpha_star", f"must be > 0, got {self.alpha_star}")
        require(self.t_end > 0, "t_end", f"must be > 0, got {self.t_end}")
        if self.loss == "closed":
            require(
                self.tokens == "gaussian", "tokens", "the closed forms hold for Gaussian tokens only; use loss='exact'"
            )
            th.check_ih_domain(self.w_star)


@dataclass
class FlowResult:
    curve: pd.DataFrame  # t, loss, loss_G4, loss_IH2, p, w_V1, w_V2, w_Q, w_K, w_KQ
    phases: th.PhaseTimes
    n_rhs: int


LossFn = Callable[[np.ndarray], tuple[float, float, np.ndarray]]  # state -> (L_G4, L_IH2, gradient)


def closed_form_loss(prob: FlowProblem) -> LossFn:
    a, ws, L = prob.alpha_star, prob.w_star, prob.L

    def fn(y: np.ndarray) -> tuple[float, float, np.ndarray]:
        p, g, h, wq, wk = y
        l_g4, dp, dg = th.loss_grad_g4(p, g, a, L)
        l_ih, dq, dk, dh = th.loss_grad_ih2(wq, wk, h, a, ws, L)
        return l_g4, l_ih, np.array([dp, dg, dh, dq, dk])

    return fn


def exact_loss(prob: FlowProblem) -> LossFn:
    """Monte-Carlo population loss of the true-softmax toy model on a fixed float64 sample."""
    target = MixedTarget.per_run([prob.alpha_star], [prob.w_star], prob.L, prob.tokens, dtype=torch.float64)
    x = new_tokens(1, prob.L, prob.mc_samples, [rng.generator(prob.mc_seed)], prob.tokens, torch.float64)
    batch = make_batch(x, target, "ideal")
    cols = [toy.PARAMS.index(n) for n in STATE]

    def fn(y: np.ndarray) -> tuple[float, float, np.ndarray]:
        theta = torch.zeros(1, 6, dtype=torch.float64)
        theta[0, cols] = torch.from_numpy(np.asarray(y, dtype=np.float64))
        out = toy.loss_and_grad(theta, batch, "ideal", wrt="layer2")
        assert out.grad is not None  # need_grad is on
        return float(out.loss_G4[0]), float(out.loss_IH2[0]), out.grad[0, cols].numpy()

    return fn


def _memo(fn: LossFn) -> LossFn:
    """Cache the last evaluation: the solver's events ask for the loss at the same state repeatedly."""
    last: list = [None, None]

    def cached(y: np.ndarray) -> tuple[float, float, np.ndarray]:
        key = np.asarray(y).tobytes()
        if key != last[0]:
            last[0], last[1] = key, fn(y)
        return last[1]

    return cached


class _Event(Protocol):
    """A solver event: a function of (t, y) carrying the ``terminal`` and ``direction`` attributes scipy reads."""

    terminal: bool
    direction: float

    def __call__(self, t: float, y: np.ndarray, /) -> float: ...


def _event(fn: Callable[[float, np.ndarray], float], direction: float) -> _Event:
    event = cast(_Event, fn)  # the attributes are set on the function itself
    event.terminal, event.direction = False, direction
    return event


@timing.timed("theory")
def solve_flow(prob: FlowProblem, n_points: int = 400, rtol: float = 1e-6, atol: float = 1e-9) -> FlowResult:
    """Integrate GF from θ = σ_init·1 to ``t_end``; return the curve on a linear+log grid and the phases.

    The default tolerances locate the phase times to ~2e-5 relative (against rtol = 1e-10).
    """
    loss_fn = _memo(closed_form_loss(prob) if prob.loss == "closed" else exact_loss(prob))
    calls = [0]

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return -loss_fn(y)[2]

    y0 = toy.init_params(prob.sigma_init, 1, torch.float64)[0, 1:].numpy()  # θ(0) of the layer-2 parameters
    g4_0, hs, ws = loss_fn(y0)[0], th.h_star(prob.alpha_star), prob.w_star
    w_kq = lambda y: math.copysign(math.sqrt(abs(y[3] * y[4])), y[3] * y[4])  # noqa: E731
    events = [
        _event(lambda t, y: loss_fn(y)[0] - 0.01 * g4_0, -1),
        _event(lambda t, y: y[2] - hs, 1),
        _event(lambda t, y: w_kq(y) - 0.01 * ws, 1),
        _event(lambda t, y: w_kq(y) - 0.5 * ws, 1),
    ]
    t_grid = np.unique(
        np.concatenate([np.linspace(0, prob.t_end, n_points // 2), np.geomspace(1e-3, prob.t_end, n_points // 2)])
    )
    solve = functools.partial(solve_ivp, rhs, method=METHOD, rtol=rtol, atol=atol, dense_output=True)
    first = solve((0, prob.t_end), y0, events=events + [_terminal(events[1])])
    found = [float(ev[0]) if len(ev) else math.nan for ev in first.t_events[:4]]
    for i, ev in enumerate(events[:4]):  # a level already passed at t = 0 is reached at t = 0
        if ev.direction * ev(0.0, y0) > 0:
            found[i] = 0.0
    t_o = found[1]
    segments = [(first, 0.0, first.t[-1])]
    ih_times = [math.nan] * 3
    if math.isfinite(t_o) and t_o < prob.t_end:
        ref = loss_fn(first.y[:, -1])[1]
        pending = [i for i in (0, 2, 3) if math.isnan(found[i])]  # never T_o again: it sits on the start point

        def ih_level(f: float) -> Callable[[float, np.ndarray], float]:
            return lambda t, y: loss_fn(y)[1] - f * ref

        ih_events = [_event(ih_level(f), -1) for f in (0.99, 0.5, 0.01)]
        second = solve((t_o, prob.t_end), first.y[:, -1], events=[events[i] for i in pending] + ih_events)
        for j, i in enumerate(pending):
            if len(second.t_events[j]):
                found[i] = float(second.t_events[j][0])
        ih_times = [float(ev[0]) if len(ev) else math.nan for ev in second.t_events[len(pending) :]]
        segments.append((second, t_o, prob.t_end))
    curve = _curve(segments, t_grid, loss_fn)
    phases = th.PhaseTimes(found[0], t_o, ih_times[0], ih_times[2], ih_times[1], found[2], found[3])
    return FlowResult(curve, phases, calls[0])


def _terminal(event: _Event) -> _Event:
    def stop(t: float, y: np.ndarray) -> float:
        return event(t, y)

    out = cast(_Event, stop)  # the attributes are set on the function itself
    out.terminal, out.direction = True, event.direction
    return out


def _curve(segments: list, t_grid: np.ndarray, loss_fn: LossFn) -> pd.DataFrame:
    rows = []
    for sol, lo, hi in segments:
        ts = t_grid[(t_grid >= lo) & (t_grid <= hi)] if hi > lo else t_grid[:1]
        for t, y in zip(ts, sol.sol(ts).T):
            l_g4, l_ih, _ = loss_fn(y)
            rows.append((t, l_g4 + l_ih, l_g4, l_ih, *y))
    df = pd.DataFrame(rows, columns=["t", "loss", "loss_G4", "loss_IH2", *STATE]).drop_duplicates("t")
    df["w_KQ"] = np.sign(df.w_Q * df.w_K) * np.sqrt((df.w_Q * df.w_K).abs())
    return df.reset_index(drop=True)
