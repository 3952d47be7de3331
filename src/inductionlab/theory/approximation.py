"""Approximation building blocks of Theorems 4.3 and 4.4 (Wang et al., docs/conventions.md#wang-4-1), computed in float64.

* :func:`exp_sum_kernel` — Lemma D.2: φ(t) = Σ_{k=1}^m α_k e^{−β_k (t−1)} ≈ 1{t = T} on t ≥ 1, with the
  recipe β_k = c·k, α by least squares on t = 1..t_max, and c chosen from a grid in [0.01, 1] by the
  smallest ℓ1(ℕ⁺) error (docs/conventions.md#wang-4-1).
* :func:`pod` — the proper orthogonal decomposition g(u, v) = Σ_k σ_k φ_k(u) ψ_k(v) (eq. 15) by an SVD of g
  on a tensor Gauss–Legendre grid, with Nyström extensions so φ_k, ψ_k can be evaluated anywhere.
* :func:`fit_relu_features` — one FFN sub-network of width w fitted to a function: random ReLU features
  relu(aᵀu + b) with output weights by least squares (our concrete stand-in for the Barron / Schmidt-Hieber
  sub-networks of the proof of Theorem 4.4, docs/conventions.md#wang-4-4 step II).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from inductionlab import rng
from inductionlab.config import ConfigError, require

C_GRID = tuple(float(c) for c in np.geomspace(0.01, 1.0, 41))


@dataclass(frozen=True)
class ExpKernel:
    """φ(t) = Σ_k alpha[k]·exp(−beta[k](t − 1)) approximating 1{t = delay}; ``l1_error`` is its ℓ1(ℕ⁺) error."""

    delay: int
    alpha: np.ndarray  # (m,)
    beta: np.ndarray  # (m,)
    l1_error: float

    def __call__(self, t: np.ndarray) -> np.ndarray:
        return np.exp(-np.outer(np.asarray(t, dtype=float) - 1, self.beta)) @ self.alpha


def exp_sum_kernel(delay: int, m: int, c_grid: Sequence[float] = C_GRID, tail: float = 40.0) -> ExpKernel:
    """Lemma D.2 by the recipe of docs/conventions.md#wang-4-1: for each c in ``c_grid`` fit α by float64 least squares to
    1{t = delay} on t = 1..delay + ⌈tail/c⌉ (beyond, every term is below e^{−tail}); keep the c with the
    smallest ℓ1 error."""
    require(delay >= 1 and m >= 1, "kernel", f"needs delay ≥ 1 and m ≥ 1 terms, got delay={delay}, m={m}")
    require(all(0 < c for c in c_grid), "c_grid", "rates c must be > 0")
    best = None
    for c in c_grid:
        t = np.arange(1, delay + math.ceil(tail / c) + 1, dtype=float)
        beta = c * np.arange(1, m + 1, dtype=float)
        design = np.exp(-np.outer(t - 1, beta))
        alpha = np.linalg.lstsq(design, (t == delay).astype(float), rcond=None)[0]
        err = float(np.abs(design @ alpha - (t == delay)).sum())
        if best is None or err < best.l1_error:
            best = ExpKernel(delay, alpha, beta, err)
    if best is None:
        raise ConfigError("c_grid: needs at least one rate c")
    return best


@dataclass(frozen=True)
class POD:
    """g(u, v) ≈ Σ_{k<K} sigma[k]·φ_k(u)·ψ_k(v) on the box [−radius, radius]^dim (dim = (n−1)d)."""

    sigma: np.ndarray  # (N,) singular values, decreasing
    nodes: np.ndarray  # (N, dim) quadrature nodes
    weights: np.ndarray  # (N,) quadrature weights
    phi_nodes: np.ndarray  # (N, N) φ_k at the nodes, columns k (L²-orthonormal)
    psi_nodes: np.ndarray  # (N, N) ψ_k at the nodes
    g: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (P, dim), (Q, dim) → (P, Q)

    def phi(self, u: np.ndarray, K: int) -> np.ndarray:
        """φ_k(u) for k < K by the Nyström extension φ_k(u) = σ_k⁻¹ ∫ g(u, v) ψ_k(v) dv: (P, K)."""
        return self.g(u, self.nodes) @ (self.weights[:, None] * self.psi_nodes[:, :K]) / self.sigma[:K]

    def psi(self, v: np.ndarray, K: int) -> np.ndarray:
        """ψ_k(v) = σ_k⁻¹ ∫ g(u, v) φ_k(u) du: (P, K)."""
        return self.g(self.nodes, v).T @ (self.weights[:, None] * self.phi_nodes[:, :K]) / self.sigma[:K]

    def decay_exponent(self, k_max: int) -> float:
        """γ of σ_k ≈ C k^{−(1+γ)} (Def. A.7 (i)), fitted on k = 1..k_max in log–log."""
        k = np.arange(1, k_max + 1)
        return float(-np.polyfit(np.log(k), np.log(self.sigma[:k_max]), 1)[0] - 1)


def pod(g: Callable[[np.ndarray, np.ndarray], np.ndarray], dim: int, radius: float, n_nodes: int) -> POD:
    """The POD of g on [−radius, radius]^dim: SVD of W^{1/2} G W^{1/2} on a tensor Gauss–Legendre grid with
    ``n_nodes`` points per axis (docs/conventions.md#wang-4-1, eq. 15)."""
    require(dim >= 1 and n_nodes >= 2, "pod", f"needs dim ≥ 1 and ≥ 2 nodes per axis, got {dim}, {n_nodes}")
    require(n_nodes**dim <= 4096, "pod", f"{n_nodes}^{dim} grid points exceed 4096; use fewer nodes per axis")
    x1, w1 = np.polynomial.legendre.leggauss(n_nodes)
    axes = np.meshgrid(*[x1 * radius] * dim, indexing="ij")
    nodes = np.stack([a.ravel() for a in axes], -1)
    weights = np.prod(np.stack(np.meshgrid(*[w1 * radius] * dim, indexing="ij")), 0).ravel()
    root = np.sqrt(weights)
    u, sigma, vt = np.linalg.svd(root[:, None] * g(nodes, nodes) * root[None, :])
    return POD(sigma, nodes, weights, u / root[:, None], vt.T / root[:, None], g)


def fit_relu_features(
    f: Callable[[np.ndarray], np.ndarray],
    dim: int,
    width: int,
    radius: float,
    generator: rng.AnyGenerator,
    n_fit: int = 4000,
    ridge: float = 1e-10,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A width-``width`` ReLU sub-network u ↦ cᵀ relu(Aᵀu + b) + c₀ fitted to f (…, values (P, k)) on
    uniform points in [−radius, radius]^dim: directions a_j uniform on the sphere, offsets b_j uniform in
    [−radius√dim, radius√dim], output weights by ridge least squares.  Returns A (dim, w), b (w,),
    C (w, k), c₀ (k,)."""
    require(width >= 1, "width", f"must be ≥ 1, got {width}")
    generator = rng.as_numpy(generator)
    a = generator.standard_normal((dim, width))
    a /= np.linalg.norm(a, axis=0, keepdims=True)
    b = generator.uniform(-radius * math.sqrt(dim), radius * math.sqrt(dim), width)
    u = generator.uniform(-radius, radius, (n_fit, dim))
    y = f(u)
    feats = np.concatenate([np.maximum(u @ a + b, 0), np.ones((n_fit, 1))], 1)
    coef = np.linalg.solve(feats.T @ feats + ridge * np.eye(width + 1), feats.T @ y)
    return a, b, coef[:-1], coef[-1]


def rbf_numpy(bandwidth: float, scale: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The RBF similarity of :func:`inductionlab.tasks.induction.rbf` on point sets (P, m), (Q, m) → (P, Q)."""

    def g(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        sq = (u * u).sum(1)[:, None] + (v * v).sum(1)[None, :] - 2 * u @ v.T
        return scale * np.exp(-np.maximum(sq, 0) / (2 * bandwidth**2))

    return g


def as_tensor(a: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64)
