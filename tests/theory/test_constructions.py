import math

import numpy as np
import torch

from inductionlab.tasks.induction import induction_head, sample_tokens, skewed_matrix
from inductionlab.theory import constructions as C


def test_theorem_4_1_construction_is_within_its_bound_for_every_length_and_decays_like_exp_minus_p():
    w = torch.tensor([[0.8, 0.5], [-0.5, 1.2]], dtype=torch.float64)
    ps = [0.5, 2.0, 5.0, 7.0]
    cfg, params = C.ih2_construction(w, ps)
    gen = torch.Generator().manual_seed(0)
    for L in (3, 6, 30):
        x = sample_tokens((40, L, 2), "uniform", gen)
        err = C.approximation_errors(cfg, params, lambda t: induction_head(t, w), x).max(1).values
        bounds = torch.tensor([C.ih2_bound(w, math.sqrt(2), p) for p in ps], dtype=torch.float64)
        assert bool((err <= bounds).all()), (L, err, bounds)
        if L == 3:  # y_2 = x_1 exactly: the construction is exact at L = 3
            assert float(err.max()) < 1e-12
        else:
            assert float(err[1] / err[3]) > 100  # e^{5} ≈ 148 from p = 2 to p = 7


def test_infinite_slope_reproduces_ih2_exactly():
    w = torch.eye(3, dtype=torch.float64) * 0.7
    cfg, params = C.ih2_construction(w, [60.0])
    x = sample_tokens((10, 9, 3), "gaussian", torch.Generator().manual_seed(1))
    assert float(C.approximation_errors(cfg, params, lambda t: induction_head(t, w), x).max()) < 1e-12


def test_exponential_sum_kernels_approach_the_delayed_delta():
    from inductionlab.theory.approximation import exp_sum_kernel

    for delay in (1, 2, 3):
        errors = [exp_sum_kernel(delay, m).l1_error for m in (2, 4, 8)]
        assert errors[0] > errors[1] > errors[2]
        k = exp_sum_kernel(delay, 8)
        t = np.arange(1, 200)
        assert abs(np.abs(k(t) - (t == delay)).sum() - k.l1_error) < 1e-9  # ℓ1 over ℕ⁺ (tail below e^-40)
    assert exp_sum_kernel(2, 8).l1_error < 1e-10


def test_theorem_4_3_construction_is_within_its_bound_and_improves_with_heads():
    gen = torch.Generator().manual_seed(0)
    for n in (2, 3, 4):
        w = skewed_matrix(n - 1, 1.0, 0.3)
        errs = []
        for m in (3, 6, 8):
            for pad in (0, 20):
                cfg, params, kernels = C.ihn_construction(w, n, 1, m, pad)
                assert cfg.n_heads == (n - 1) * m and cfg.d_model == n
                x = sample_tokens((24, 12, 1), "uniform", gen)
                err = C.approximation_errors(
                    cfg, params, lambda t: induction_head(t[..., pad:, :], w, n), C.left_pad(x, pad)
                )
                assert float(err.max()) <= C.ihn_bound(w, 1.0, kernels)
            errs.append(float(err.max()))
        assert errs[0] > 10 * errs[1] > 10 * errs[2] - 1e-15, (n, errs)


def test_pod_reconstructs_the_similarity_and_its_nystrom_extension_matches_the_grid():
    from inductionlab.theory.approximation import pod, rbf_numpy

    g = rbf_numpy(0.5, 2.0)
    dec = pod(g, 1, 1.0, 32)
    u = np.random.default_rng(0).uniform(-1, 1, (50, 1))
    v = np.random.default_rng(1).uniform(-1, 1, (40, 1))
    approx = (dec.phi(u, 12) * dec.sigma[:12]) @ dec.psi(v, 12).T
    assert np.abs(approx - g(u, v)).max() < 1e-6
    assert np.allclose(dec.phi(dec.nodes, 3), dec.phi_nodes[:, :3], atol=1e-8)
    assert (np.diff(dec.sigma[:10]) < 0).all() and dec.decay_exponent(8) > 1


def test_theorem_4_4_construction_error_falls_with_ffn_width():
    from inductionlab.tasks.induction import generalized_induction_head, rbf
    from inductionlab.theory.approximation import pod, rbf_numpy

    dec = pod(rbf_numpy(0.5, 4.0), 1, 1.05, 32)
    x = sample_tokens((32, 16, 1), "uniform", torch.Generator().manual_seed(2))
    errs = []
    for width in (4, 64):
        cfg, params = C.gihn_construction(dec, 6, width, 2, 1, 8, 1.05, 0, np.random.default_rng(0))
        assert cfg.d_model == 2 + 12 and cfg.layer("ffn_width") == (12 * width, 0)
        target = lambda t: generalized_induction_head(t, 2, rbf(0.5, 4.0))  # noqa: E731
        errs.append(float(C.approximation_errors(cfg, params, target, x).max()))
    assert errs[1] < 0.2 * errs[0] and errs[1] < 5e-3, errs
