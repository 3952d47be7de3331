"""Sparse contextual bigrams (Ren, Wang, Lee 2024, eq. 1; docs/conventions.md#ren-2): tokens x_1..x_{T+1} i.i.d. from the
stationary law μ of a column-stochastic P (column k is the next-token law after token k — the transpose of
the usual Markov convention, docs/conventions.md#ren-a7), a position s ~ q^{(x_{T+1})} from a sparse position law, and the
label x_o ~ P[:, x_s]:  Pr[x_o = n | x_{1:T+1}] = [P X q^{(x_{T+1})}]_n.

Instances carry a leading run axis S (one instance per run): P (S, N, N), μ (S, N), Q (S, T, N) with
columns q^{(k)}.  Sampling draws indices only — tokens (S, B, T), last token (S, B), label (S, B) — never
dense one-hot (B, N, T) tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from inductionlab import rng, uniforms
from inductionlab.config import ConfigError, require


@dataclass(frozen=True)
class SCBConfig:
    """Random well-conditioned instances (docs/conventions.md#ren-10 data recipe): P's columns ~ Dirichlet(1), μ its Perron
    vector, resampled until min_k Nμ_k ≥ 1/C and K_P ≥ c_kp·‖μ‖²; each q^{(k)} has Q positions drawn
    uniformly from [T] with weights U[1, 2], normalised (so q ≥ 1/(2Q)).  Defaults N=5, Q=3, T=500 are our proposal."""

    N: int = 5  # vocabulary size N
    Q: int = 3  # Q: positions each sparse position law q^{(k)} puts weight on
    T: int = 500  # context length T (tokens x_1..x_T before the query)
    C: float = 4.0  # C of Assumption 2.1: instances are redrawn until min_k Nμ_k ≥ 1/C
    c_kp: float = 0.1  # instances are redrawn until K_P ≥ c_kp·‖μ‖² (P away from μ1ᵀ)
    max_tries: int = 1000  # redraws allowed before an instance is refused

    def __post_init__(self) -> None:
        require(self.N >= 2, "task.N", f"needs at least 2 tokens, got {self.N}")
        require(1 <= self.Q <= self.T, "task.Q", f"must be in 1..T = {self.T}, got {self.Q}")
        require(self.C >= 1 and self.c_kp > 0, "task.C", f"needs C ≥ 1 and c_kp > 0, got C={self.C}, c_kp={self.c_kp}")
        require(self.max_tries >= 1, "task.max_tries", "must be ≥ 1")


@dataclass(frozen=True)
class SCBInstance:
    """Ground truth of S SCB tasks: P (S, N, N) column-stochastic, mu (S, N) with Pμ = μ, Q (S, T, N)."""

    P: torch.Tensor
    mu: torch.Tensor
    Q: torch.Tensor
    mu_cdf: torch.Tensor = field(init=False, repr=False, compare=False)  # the caches __post_init__ sets
    p_cdf: torch.Tensor = field(init=False, repr=False, compare=False)
    q_positions: torch.Tensor = field(init=False, repr=False, compare=False)
    q_cdf: torch.Tensor = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Cache the samplers' CDFs: μ (S, N), the columns of P as rows (S, N, N), and each q^{(k)} on its
        support only — positions (S, N, m) and CDF (S, N, m), m = the largest support size."""
        m = int((self.Q > 0).sum(-2).max())
        weights, positions = torch.topk(self.Q.transpose(1, 2), m, dim=-1)
        cached = {
            "mu_cdf": self.mu.cumsum(-1),
            "p_cdf": self.P.transpose(1, 2).cumsum(-1),
            "q_positions": positions,
            "q_cdf": weights.cumsum(-1),
        }
        for name, value in cached.items():
            object.__setattr__(self, name, value)

    @property
    def N(self) -> int:
        return self.P.shape[-1]

    @property
    def T(self) -> int:
        return self.Q.shape[-2]

    @property
    def K_P(self) -> torch.Tensor:
        """‖P − μ1ᵀ‖²_μ = ‖P‖²_μ − ‖μ‖² (S,)."""
        return mu_norm2(self.P - self.mu.unsqueeze(-1), self.mu)

    @property
    def K_Q(self) -> torch.Tensor:
        """‖Q − 11ᵀ/T‖²_μ = ‖Q‖²_μ − 1/T (S,)."""
        return mu_norm2(self.Q - 1.0 / self.T, self.mu)


def mu_norm2(M: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """‖M‖²_μ = Σ_k μ_k ‖m_k‖² for M (S, d, N), μ (S, N): (S,)."""
    return (M.square().sum(-2) * mu).sum(-1)


def mu_inner(M: torch.Tensor, M2: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """⟨M, M'⟩_μ = Σ_k μ_k ⟨m_k, m'_k⟩ (S,)."""
    return ((M * M2).sum(-2) * mu).sum(-1)


def stationary(P: np.ndarray) -> np.ndarray:
    """The Perron vector μ of a column-stochastic P (Pμ = μ, Σμ = 1)."""
    vals, vecs = np.linalg.eig(P)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    return v / v.sum()


def check_assumption(inst: SCBInstance, Q_max: int, C: float, c_kp: float) -> None:
    """Assumption 2.1 (a)–(c) with explicit constants: at most Q_max nonzeros per q^{(k)}, nonzero q ≥
    1/(C·Q_max), μ_k ∈ [1/(CN), C/N], K_P ≥ c_kp‖μ‖².  Raises ConfigError naming the violated part."""
    N, P, mu, Q = inst.N, inst.P, inst.mu, inst.Q
    if not torch.allclose(P.sum(-2), torch.ones_like(mu), atol=1e-9) or bool((P < 0).any()):
        raise ConfigError("task: P must be column-stochastic (nonnegative, every column summing to 1)")
    if not torch.allclose(Q.sum(-2), torch.ones_like(mu), atol=1e-9) or bool((Q < 0).any()):
        raise ConfigError("task: every column q^(k) of Q must be a probability vector over the T positions")
    nnz = (Q > 0).sum(-2)
    if int(nnz.max()) > Q_max:
        raise ConfigError(f"task: Assumption 2.1(a) fails: a q^(k) has {int(nnz.max())} nonzeros > Q = {Q_max}")
    if float(Q[Q > 0].min()) < 1 / (C * Q_max):
        raise ConfigError(f"task: Assumption 2.1(b) fails: a nonzero q is below 1/(CQ) = {1 / (C * Q_max):.3g}")
    if float(mu.min()) < 1 / (C * N) or float(mu.max()) > C / N:
        raise ConfigError(f"task: Assumption 2.1(b) fails: μ leaves [1/(CN), C/N] = [{1 / (C * N):.3g}, {C / N:.3g}]")
    if bool((inst.K_P < c_kp * mu.square().sum(-1)).any()):
        raise ConfigError(f"task: Assumption 2.1(c) fails: K_P < {c_kp}·‖μ‖² (P is too close to the trivial μ1ᵀ)")


def random_instance(cfg: SCBConfig, n_runs: int, generator: rng.AnyGenerator) -> SCBInstance:
    """S random instances by the docs/conventions.md#ren-10 recipe (float64), checked against Assumption 2.1
    (``generator``: a ``torch.Generator``, or numpy's: :func:`inductionlab.rng.as_numpy`)."""
    generator = rng.as_numpy(generator)
    Ps, mus, Qs = [], [], []
    for _ in range(n_runs):
        for _ in range(cfg.max_tries):
            P = generator.dirichlet(np.ones(cfg.N), size=cfg.N).T  # columns ~ Dirichlet(1)
            mu = stationary(P)
            K_P = float((((P - mu[:, None]) ** 2).sum(0) * mu).sum())
            if mu.min() * cfg.N >= 1 / cfg.C and mu.max() * cfg.N <= cfg.C and K_P >= cfg.c_kp * (mu**2).sum():
                break
        else:
            raise ConfigError(
                f"task: no instance met Assumption 2.1 in {cfg.max_tries} draws; raise task.C or lower task.c_kp"
            )
        Q = np.zeros((cfg.T, cfg.N))
        for k in range(cfg.N):
            support = generator.choice(cfg.T, cfg.Q, replace=False)
            w = generator.uniform(1, 2, cfg.Q)
            Q[support, k] = w / w.sum()
        Ps.append(P)
        mus.append(mu)
        Qs.append(Q)
    inst = SCBInstance(*(torch.as_tensor(np.stack(a)) for a in (Ps, mus, Qs)))
    check_assumption(inst, cfg.Q, max(cfg.C, 2.0), cfg.c_kp)
    return inst


def _categorical(cdf: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draws: the number of CDF steps below u, for cdf (..., n) broadcasting against u (..., 1)
    → indices in 0..n−1 (a comparison count: faster than a binary search for the small n here)."""
    return (u >= cdf[..., :-1]).sum(-1)


def _iid_tokens(mu_cdf: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Tokens i.i.d. from μ, (S, B, n) int64, from float32 uniforms u (S, B, n) (the CDF rounded to float32:
    probabilities off by < 1e-7).  Small N: one uint8 comparison pass per CDF step; large N: a binary search
    (clamped: the same count of CDF steps ≤ u)."""
    S, shape = u.shape[0], u.shape
    cdf = mu_cdf.float()
    if cdf.shape[-1] > 16:
        return torch.searchsorted(cdf.contiguous(), u.view(S, -1), right=True).clamp_max(cdf.shape[-1] - 1).view(shape)
    tokens = torch.zeros(shape, dtype=torch.uint8)
    for j in range(cdf.shape[-1] - 1):
        tokens += u >= cdf[:, j].view(S, 1, 1)
    return tokens.long()


def draw_uniforms(inst: SCBInstance, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The uniforms of ``batch`` examples per run, in the stream's order: float32 (S, B, T + 1) for the context
    tokens, then the instance's float type (S, B, 2) for the position and the label."""
    S, T = inst.P.shape[0], inst.T
    u_tok = uniforms.rand((S, batch, T + 1), generator)  # torch.rand's numbers, drawn faster (#fast-uniforms)
    return u_tok, uniforms.rand((S, batch, 2), generator, inst.mu.dtype)


def examples_from_uniforms(
    u_tok: torch.Tensor,
    u_pl: torch.Tensor,
    mu_cdf: torch.Tensor,
    q_positions: torch.Tensor,
    q_cdf: torch.Tensor,
    p_cdf: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tokens (S, B, T), last token (S, B), label (S, B) (int64) from the uniforms of :func:`draw_uniforms` and an
    instance's caches (:class:`SCBInstance`: μ's CDF, each q^{(k)}'s support positions and CDF, P's columns' CDFs)
    — inverse-CDF look-ups only, a pure function."""
    T = u_tok.shape[-1] - 1
    tokens = _iid_tokens(mu_cdf, u_tok)
    last = tokens[:, :, T]
    runs = torch.arange(u_tok.shape[0]).view(-1, 1)
    j = _categorical(q_cdf[runs, last], u_pl[:, :, 0, None])  # which support entry of q^{(x_{T+1})}
    s = q_positions[runs, last].gather(2, j.unsqueeze(-1)).squeeze(-1)
    source = tokens.gather(2, s.unsqueeze(-1)).squeeze(-1)
    label = _categorical(p_cdf[runs, source], u_pl[:, :, 1, None])
    return tokens[:, :, :T], last, label


def from_uniforms(
    inst: SCBInstance, u_tok: torch.Tensor, u_pl: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`examples_from_uniforms` with ``inst``'s caches."""
    return examples_from_uniforms(u_tok, u_pl, inst.mu_cdf, inst.q_positions, inst.q_cdf, inst.p_cdf)


def sample(
    inst: SCBInstance, batch: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """B examples per run: tokens x_1..x_T (S, B, T), last token x_{T+1} (S, B), label x_o (S, B) (int64).
    All draws are inverse-CDF look-ups of uniforms (float32 for the T + 1 context tokens, float64 for the
    position and the label): :func:`draw_uniforms`, then :func:`from_uniforms`."""
    return from_uniforms(inst, *draw_uniforms(inst, batch, generator))
