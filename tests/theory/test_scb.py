import numpy as np
import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.tasks import scb
from inductionlab.theory import scb as th


@pytest.fixture(scope="module")
def inst():
    return scb.random_instance(scb.SCBConfig(N=4, Q=2, T=12), 2, np.random.default_rng(0))


def _init(inst):
    S, N, T = inst.P.shape[0], inst.N, inst.T
    return inst.mu.unsqueeze(-1).expand(S, N, N).clone(), torch.full((S, T, N), 1.0 / T, dtype=torch.float64)


def test_population_gradient_vanishes_at_the_truth_and_v_star_of_q_is_p(inst):
    gv, ga = th.population_gradients(inst.P, inst.Q, inst)
    assert float(gv.abs().max()) < 1e-14 and float(ga.abs().max()) < 1e-14
    assert torch.allclose(th.v_star(inst.Q, inst), inst.P, atol=1e-12)
    assert torch.allclose(th.v_star(_init(inst)[1], inst).sum(-2), torch.ones(2, inst.N, dtype=torch.float64))


def test_full_matrix_population_dynamics_stay_on_the_lines_and_follow_eq_8(inst):
    V, A = _init(inst)
    eta = 0.5
    alpha, beta = torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
    for _ in range(60):
        gv, ga = th.population_gradients(V, A, inst)
        V, A = V - eta / inst.K_Q.view(-1, 1, 1) * gv, A - eta / inst.K_P.view(-1, 1, 1) * ga
        alpha, beta = th.line_map(alpha, beta, eta, inst.T, inst.K_Q)
        sig = th.signal(V, A, inst)
        assert torch.allclose(sig["alpha"], alpha, atol=1e-10) and torch.allclose(sig["beta"], beta, atol=1e-10)
        assert float(sig["delta_A"].max()) < 1e-10 and float(sig["delta_V"].max()) < 1e-10
        assert torch.allclose(V.sum(-2), torch.ones_like(inst.mu), atol=1e-12)
    assert float((alpha * beta).min()) > 0.5  # the map leaves the origin through the 1/T drift


def test_population_loss_matches_monte_carlo_and_is_minimal_at_the_truth(inst):
    gen = torch.Generator().manual_seed(3)
    V, A = _init(inst)
    V = V + 0.3 * (inst.P - V)
    A = A + 0.5 * (inst.Q - A)
    tokens, last, label = scb.sample(inst, 200_000, gen)
    runs = torch.arange(2).view(-1, 1, 1)
    weights = A[runs, torch.arange(inst.T).view(1, 1, -1), last.unsqueeze(-1)]  # a_{last}[t] (S, B, T)
    pred = torch.zeros(2, tokens.shape[1], inst.N, dtype=torch.float64).scatter_add_(2, tokens, weights)
    pred = torch.einsum("snk,sbk->sbn", V, pred)
    target = torch.nn.functional.one_hot(label, inst.N).double()
    mc = 0.5 * (target - pred).square().sum(-1).mean(-1)
    assert torch.allclose(th.population_loss(V, A, inst), mc, rtol=5e-3)
    assert bool((th.population_loss(inst.P, inst.Q, inst) < th.population_loss(V, A, inst)).all())


def test_sampler_reproduces_the_bigram_law(inst):
    tokens, last, label = scb.sample(inst, 100_000, torch.Generator().manual_seed(1))
    freq = torch.bincount(tokens[0].flatten(), minlength=inst.N).double() / tokens[0].numel()
    assert torch.allclose(freq, inst.mu[0], atol=5e-3)
    # Pr[x_o = n | x] = [P X q^{(k)}]_n, averaged over the batch
    q = inst.Q[0][:, last[0]].T  # (B, T)
    law = torch.zeros(tokens.shape[1], inst.N, dtype=torch.float64).scatter_add_(1, tokens[0], q) @ inst.P[0].T
    emp = torch.bincount(label[0], minlength=inst.N).double() / label.shape[1]
    assert torch.allclose(emp, law.mean(0), atol=6e-3)


@pytest.mark.parametrize("N", [3, 24])  # a comparison count (N ≤ 16) and a binary search (N > 16)
def test_context_tokens_follow_mu_for_small_and_large_vocabularies(N):
    big = scb.random_instance(scb.SCBConfig(N=N, Q=2, T=20, C=8.0), 2, np.random.default_rng(2))
    tokens, last, _ = scb.sample(big, 20_000, torch.Generator().manual_seed(3))
    assert int(tokens.min()) == 0 and int(tokens.max()) == N - 1
    for run in range(2):
        freq = torch.bincount(tokens[run].flatten(), minlength=N).double() / tokens[run].numel()
        assert torch.allclose(freq, big.mu[run], atol=3e-3)
        assert torch.allclose(torch.bincount(last[run], minlength=N).double() / last.shape[1], big.mu[run], atol=2e-2)


def test_assumption_violations_are_named():
    good = scb.random_instance(scb.SCBConfig(N=3, Q=2, T=10), 1, np.random.default_rng(1))
    trivial = scb.SCBInstance(good.mu.unsqueeze(-1).expand(1, 3, 3).clone(), good.mu, good.Q)
    with pytest.raises(ConfigError, match="2.1\\(c\\)"):
        scb.check_assumption(trivial, 2, 4.0, 0.1)
    with pytest.raises(ConfigError, match="2.1\\(a\\)"):
        scb.check_assumption(good, 1, 4.0, 0.1)


def test_noise_scales_match_single_sample_gradient_variance(inst):
    from inductionlab.models import linear

    V = inst.P * 0.7 + 0.3 * inst.mu.unsqueeze(-1)
    A = inst.Q * 0.6 + 0.4 / inst.T
    M = 3000
    sv, sa = th.noise_scales(V, A, inst, M, torch.Generator().manual_seed(7), chunk=M)
    tokens, last, label = scb.sample(inst, M, torch.Generator().manual_seed(7))
    gv, ga = [], []
    for b in range(M):
        g = linear.gradients(V, A, tokens[:, b : b + 1], last[:, b : b + 1], label[:, b : b + 1])
        (
            gv.append(linear.precondition(g[0], inst.mu)),
            ga.append(linear.precondition(g[1], inst.mu) * inst.mu.sqrt().unsqueeze(-2)),
        )
    N, T = inst.N, inst.T
    var_v = torch.stack(gv).var(0).flatten(1).sum(1) / ((N - 1) * N)
    var_a = torch.stack(ga).var(0).flatten(1).sum(1) / ((T - 1) * N)
    assert torch.allclose(sv, var_v.sqrt(), rtol=0.03) and torch.allclose(sa, var_a.sqrt(), rtol=0.03)


def test_gaussian_oracle_is_unbiased_with_the_stated_scale(inst):
    V, A = inst.P.clone(), inst.Q.clone()
    oracle = th.gaussian_noise_oracle(torch.tensor([0.4, 0.4]), torch.tensor([0.2, 0.2]), batch=4, scale_A_with_V=False)
    gen = torch.Generator().manual_seed(0)
    draws = [oracle(V, A, inst, gen) for _ in range(4000)]
    gv, ga = th.population_gradients(V, A, inst)
    nv = torch.stack([d[0] for d in draws]) - gv
    na = torch.stack([d[1] for d in draws]) - ga
    N, T = inst.N, inst.T
    assert float(nv.mean(0).abs().max()) < 0.02 and torch.allclose(nv[:, 0], nv[:, 1])  # one draw for all runs
    assert abs(float(nv.var(0).mean()) / (0.16 / 4 * (N - 1) / N) - 1) < 0.05
    scaled = na * inst.mu.sqrt().unsqueeze(-2)
    assert abs(float(scaled.var(0).mean()) / (0.04 / 4 * (T - 1) / T) - 1) < 0.05
