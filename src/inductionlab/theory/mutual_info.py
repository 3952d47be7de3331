"""The modified and the standard χ² mutual information of a lag set S (Chen et al. 2024, docs/conventions.md#chen-4-2).

For a kernel π with stationary law μ^π and (e, z) ~ μ^π the joint law of (x_l, X_{l−S}):

    Ĩ_χ²(S) = Σ_{e,z} μ(e, z)² / μ(e) − Σ_z μ(z)²          (modified: weight μ(z)², docs/conventions.md#chen-4-2)
    I_χ²(S) = Σ_{e,z} μ(e, z)² / (μ(e) μ(z)) − 1             (standard: weight μ(z))

averaged over kernel draws π ~ Dir(α)^{d^n}.  The selection criterion of Stage I is S* = argmax Ĩ_χ²(S)
over |S| ≤ D (ties toward the smaller set).  The standard MI never decreases when S grows (a lag that is
conditionally independent given the parents adds nothing, so it ties); the modified one penalises size.

Exact per kernel (docs/conventions.md#chen-4-2 "computing it exactly"): the chain of m-tuples (x_{l−1}, …, x_{l−m}), m ≥ every
lag involved, has transition matrix P (d^m × d^m); its stationary law is u·P̃^{2^k} for the lazy chain
P̃ = (I + P)/2 (same stationary law, aperiodic) by k repeated squarings from the uniform u — the repo's
power iteration, converged far further.  Vectorised over kernel draws.
"""

from __future__ import annotations

import itertools

import numpy as np

from inductionlab.config import require

SQUARINGS = 60  # P̃^(2^60): far past the mixing time of any chain with positive entries in float64


def tuple_transitions(kernels: np.ndarray, parents: tuple[int, ...], m: int) -> np.ndarray:
    """P (n, d^m, d^m) of the m-tuple chain for kernels (n, d^|pa|, d).  Tuple code t = Σ_j x_{l−j} d^{j−1}
    (j = 1..m); the next tuple is (x_l, x_{l−1}, …, x_{l−m+1})."""
    n, _, d = kernels.shape
    require(m >= max(parents), "m", f"the tuple must cover the parents (max lag {max(parents)}), got m = {m}")
    t = np.arange(d**m)
    digits = (t[:, None] // d ** np.arange(m)) % d  # (d^m, m): x_{l−1}, …, x_{l−m}
    z = sum(digits[:, r - 1] * d**i for i, r in enumerate(parents))  # parent state of each tuple
    P = np.zeros((n, d**m, d**m))
    for e in range(d):
        P[:, t, e + d * (t % d ** (m - 1))] = kernels[:, z, e]
    return P


def stationary(P: np.ndarray) -> np.ndarray:
    """μ (n, Z) with μ P = μ, from the uniform start through the lazy chain (see the module docstring)."""
    Q = 0.5 * (P + np.eye(P.shape[-1]))
    for _ in range(SQUARINGS):
        Q = Q @ Q
        Q /= Q.sum(-1, keepdims=True)  # keep rows stochastic against rounding
    mu = Q.mean(-2)
    return mu / mu.sum(-1, keepdims=True)


def joint_law(kernels: np.ndarray, parents: tuple[int, ...], m: int) -> np.ndarray:
    """Stationary joint of (x_l, x_{l−1}, …, x_{l−m}) as an array (n, d, d, …, d): axis 1 is x_l, axis 1 + j
    is x_{l−j}."""
    n, _, d = kernels.shape
    mu = stationary(tuple_transitions(kernels, parents, m))  # (n, d^m)
    t = np.arange(d**m)
    digits = (t[:, None] // d ** np.arange(m)) % d
    z = sum(digits[:, r - 1] * d**i for i, r in enumerate(parents))
    joint = mu[:, :, None] * kernels[:, z, :]  # (n, d^m, d): (tuple, e)
    # tuple code digits are x_{l−1} fastest, so the C-order axes of the reshape are x_{l−m}, …, x_{l−1}
    joint = joint.reshape(n, *([d] * m), d)
    return joint.transpose(0, m + 1, *range(m, 0, -1))


def chi2_mutual_info(joint: np.ndarray, lags: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(modified, standard) χ² MI (n,) of x_l and X_{l−S} for the lag set S = ``lags`` (1-based) from a joint
    law (n, d, d, …) as returned by :func:`joint_law`.  The empty set gives 0 for both."""
    m = joint.ndim - 2
    require(all(1 <= r <= m for r in lags), "lags", f"must lie in 1..{m}, got {lags}")
    drop = tuple(1 + r for r in range(1, m + 1) if r not in lags)
    ez = joint.sum(axis=drop).reshape(joint.shape[0], joint.shape[1], -1)  # (n, d, d^|S|)
    e = ez.sum(-1, keepdims=True)
    z = ez.sum(1, keepdims=True)
    tiny = np.finfo(float).tiny
    sq = ez**2 / np.maximum(e, tiny)
    modified = sq.sum((1, 2)) - (z**2).sum((1, 2))
    standard = (sq / np.maximum(z, tiny)).sum((1, 2)) - 1.0
    return modified, standard


def lag_subsets(window: tuple[int, ...], max_size: int) -> list[tuple[int, ...]]:
    """Subsets of ``window`` of size ≤ max_size, by size then lexicographically (∅ first)."""
    return [s for k in range(max_size + 1) for s in itertools.combinations(window, k)]


def mutual_info_table(
    kernels: np.ndarray, parents: tuple[int, ...], window: tuple[int, ...], max_size: int, chunk: int = 512
) -> dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]]:
    """{S: (modified (n,), standard (n,))} for every S ⊆ window with |S| ≤ max_size, per kernel draw
    (kernels (n, d^|pa|, d)); processed in chunks of draws to bound memory."""
    m = max(max(window), max(parents))
    subsets = lag_subsets(window, max_size)
    out: dict[tuple[int, ...], tuple[list[np.ndarray], list[np.ndarray]]] = {s: ([], []) for s in subsets}
    for start in range(0, kernels.shape[0], chunk):
        joint = joint_law(kernels[start : start + chunk], parents, m)
        for s in subsets:
            mod, std = chi2_mutual_info(joint, s)
            out[s][0].append(mod)
            out[s][1].append(std)
    return {s: (np.concatenate(a), np.concatenate(b)) for s, (a, b) in out.items()}
