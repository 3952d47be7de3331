import math

import torch

from inductionlab.tasks.induction import induction_head, sample_tokens
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
