import numpy as np
import pytest

from inductionlab.tasks.markov import MarkovConfig, draw_kernels, sample
from inductionlab.theory import mutual_info as mi


def test_stationary_law_is_invariant_under_the_tuple_chain():
    k = draw_kernels(MarkovConfig(alpha=0.1), 50, np.random.default_rng(0))
    P = mi.tuple_transitions(k, (1, 2), 3)
    np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-12)
    mu = mi.stationary(P)
    np.testing.assert_allclose(np.einsum("nz,nzy->ny", mu, P), mu, atol=1e-10)


def test_joint_law_matches_the_frequencies_of_a_long_chain():
    cfg = MarkovConfig(parents=(1, 3), L=400, alpha=1.0)
    kernel = draw_kernels(cfg, 1, np.random.default_rng(1))
    tokens, _ = sample(cfg, 600, np.random.default_rng(2), kernels=np.repeat(kernel, 600, 0))
    x = tokens[:, 100:].numpy()  # past the uniform start
    emp = np.zeros((3,) * 4)
    np.add.at(emp, (x[:, 3:], x[:, 2:-1], x[:, 1:-2], x[:, :-3]), 1)  # (x_l, x_{l−1}, x_{l−2}, x_{l−3})
    emp /= emp.sum()
    exact = mi.joint_law(kernel, (1, 3), 3)[0]
    n = x[:, 3:].size
    assert np.abs(emp - exact).max() < 5 * np.sqrt(exact.max() / n) + 1e-4


def test_chi2_mutual_informations_against_their_definitions():
    rng = np.random.default_rng(3)
    joint = rng.random((1, 3, 3, 3))
    joint /= joint.sum()
    mod, std = mi.chi2_mutual_info(joint, (2,))
    ez = joint[0].sum(1)  # (e, x_{l−2})
    e, z = ez.sum(1), ez.sum(0)
    want_std = sum(ez[i, j] ** 2 / (e[i] * z[j]) for i in range(3) for j in range(3)) - 1
    want_mod = sum(z[j] ** 2 * (sum((ez[i, j] / z[j]) ** 2 / e[i] for i in range(3)) - 1) for j in range(3))
    np.testing.assert_allclose([mod[0], std[0]], [want_mod, want_std], rtol=1e-12)
    assert mi.chi2_mutual_info(joint, ())[0][0] == pytest.approx(0, abs=1e-15)


def test_independent_tokens_carry_no_information():
    k = np.tile(np.random.default_rng(4).dirichlet(np.ones(3)), (5, 9, 1))  # every row the same law
    table = mi.mutual_info_table(k, (1, 2), (1, 2, 3), 3)
    for mod, std in table.values():
        np.testing.assert_allclose(mod, 0, atol=1e-12)
        np.testing.assert_allclose(std, 0, atol=1e-12)


def test_modified_mi_selects_the_parents_and_standard_mi_ties_with_the_superset():
    """Spec §4.2 at d = 3, α = 0.1, pa = {1, 2}, window {1, 2, 3}: argmax Ĩ = {1, 2}; I_χ²({1,2}) = I_χ²({1,2,3})
    exactly (lag 3 is independent given the parents); Ĩ({1,2,3}) < Ĩ({1,2})."""
    k = draw_kernels(MarkovConfig(alpha=0.1), 400, np.random.default_rng(5))
    table = mi.mutual_info_table(k, (1, 2), (1, 2, 3), 3, chunk=128)
    means = {s: v[0].mean() for s, v in table.items()}
    assert max(means, key=means.get) == (1, 2)
    np.testing.assert_allclose(table[(1, 2)][1], table[(1, 2, 3)][1], rtol=1e-9)
    assert np.all(table[(1, 2, 3)][0] <= table[(1, 2)][0] + 1e-12)
