import numpy as np
import torch

from inductionlab.tasks import scb
from inductionlab.theory import scb as th
from inductionlab.train import proximal as P
from inductionlab.train import transfer as TR
from inductionlab.train.scb_softmax import train_softmax_scb


def test_prox_soft_thresholds_projects_and_counts():
    A = torch.tensor([[[0.5], [0.3], [0.2]]], dtype=torch.float64)
    grad = torch.tensor([[[0.0], [0.25], [-0.1]]], dtype=torch.float64)
    new, zeroed, negative = P.prox_step(A, grad, torch.ones(1, 1, 1, dtype=torch.float64), lam=0.1)
    # ã = (0.5, 0.05, 0.3) → soft threshold 0.1 → (0.4, 0, 0.2) → + (1 − 0.6)/3 each
    assert torch.allclose(new[0, :, 0], torch.tensor([0.4, 0.0, 0.2], dtype=torch.float64) + 0.4 / 3)
    assert int(zeroed) == 1 and int(negative) == 0
    assert torch.allclose(new.sum(-2), torch.ones(1, 1, dtype=torch.float64))


def test_large_batch_algorithm_recovers_p_and_q():
    """Spec §12: with very large batches the three stages reach errors ≤ 1e-3 (population-exact gradients
    stand in for B → ∞; the mini-batch path is tested against them in tests/models/test_linear.py)."""
    inst = scb.random_instance(scb.SCBConfig(N=4, Q=2, T=20), 2, np.random.default_rng(0))
    S, N, T = 2, inst.N, inst.T
    V = inst.mu.unsqueeze(-1).expand(S, N, N).clone()
    A = torch.full((S, T, N), 1.0 / T, dtype=torch.float64)
    eta_v, eta_a = P.step_sizes(inst, 0.5, "normalized")
    for _ in range(40):  # Stage 1
        gv, ga = th.population_gradients(V, A, inst)
        V, A = V - eta_v * gv, A - eta_a * ga
    A = P.round_columns(A, P.threshold(th.signal(V, A, inst)["alpha"], T, 2.0, 2))
    eta_v, eta_a = P.step_sizes(inst, 0.05, "normalized")
    for _ in range(200):  # Stage 2
        gv, ga = th.population_gradients(V, A, inst)
        V = V - eta_v * gv
        A, _, negative = P.prox_step(A, ga, eta_a, 1e-4)
        assert int(negative.sum()) == 0
        assert torch.allclose(A.sum(-2), torch.ones(S, N, dtype=torch.float64), atol=1e-12)
    A_bar = P.normalize_columns(A, P.threshold(th.signal(V, A, inst)["alpha"], T, 2.0, 2))
    V_star = th.v_star(A_bar, inst)  # Stage 3
    mu = inst.mu
    assert float(scb.mu_norm2(A_bar - inst.Q, mu).sqrt().max()) < 1e-3
    assert float(scb.mu_norm2(V_star - inst.P, mu).sqrt().max()) < 1e-3


def test_training_methods_run_and_divergence_is_reported():
    import pytest

    from inductionlab.train.loop import NonFiniteError

    inst = scb.random_instance(scb.SCBConfig(N=3, Q=2, T=30), 1, np.random.default_rng(1))
    for method in ("proximal", "sgd", "raw_sgd"):
        V, A, m = P.train_scb(
            P.SCBTrainConfig(method=method, steps=60, stage1_steps=20, eta1=0.01, eta2=0.001, eval_every=20), inst, 2
        )
        assert list(m.step) == [0, 20, 40, 60] and bool(np.isfinite(m.loss).all())
        if method != "raw_sgd":
            assert torch.allclose(A.sum(-2), torch.ones(1, 3, dtype=torch.float64), atol=1e-9)
            assert torch.allclose(V.sum(-2), torch.ones(1, 3, dtype=torch.float64), atol=1e-9)
    assert list(m.stage) == [1, 1, 1, 1]
    with pytest.raises(NonFiniteError, match="eta1"):
        P.train_scb(P.SCBTrainConfig(method="sgd", steps=400, stage1_steps=0, eta1=1e3, eval_every=20), inst, 2)


def test_methods_on_the_run_axis_equal_separate_runs_on_the_same_data():
    inst = scb.random_instance(scb.SCBConfig(N=3, Q=2, T=30), 1, np.random.default_rng(2))
    base = P.SCBTrainConfig(steps=80, stage1_steps=40, eta1=0.01, eta2=0.002, lam=1e-3, eval_every=20)
    cfgs = [base, P.replace(base, method="sgd"), P.replace(base, method="raw_sgd", eta1=0.05)]
    V, A, together = P.train_scb(cfgs, inst, 2)
    for r, c in enumerate(cfgs):
        Vr, Ar, alone = P.train_scb(c, inst, 2)
        assert torch.allclose(V[r], Vr[0], atol=1e-12) and torch.allclose(A[r], Ar[0], atol=1e-12), c.method
        mine = together[together.run == r].drop(columns="run").reset_index(drop=True)
        assert np.allclose(mine.to_numpy(float), alone.drop(columns="run").to_numpy(float), atol=1e-10), c.method


def test_noiseless_oracle_runs_algorithm_1_through_train_scb():
    inst = scb.random_instance(scb.SCBConfig(N=4, Q=2, T=20), 2, np.random.default_rng(0))
    cfg = P.SCBTrainConfig(steps=400, stage1_steps=40, eta1=0.5, eta2=0.05, lam=1e-4, eval_every=100)
    oracle = th.gaussian_noise_oracle(torch.zeros(2), torch.zeros(2), batch=1)
    _, A, m = P.train_scb(cfg, inst, 2, oracle=oracle)
    final = m[m.step == 400]
    assert float(final.dist_A_norm.max()) < 1e-3 and float(final.dist_V_star.max()) < 1e-3
    assert torch.allclose(A.sum(-2), torch.ones(2, 4, dtype=torch.float64), atol=1e-9)


def test_stage2_rate_decays_as_eta2_over_one_plus_steps_in_stage2():
    """eta2_t0 > 0: the t-th Stage-2 step (t = 0, 1, …) takes η₂/(1 + t/t₀), counted from each run's own switch."""
    inst = scb.random_instance(scb.SCBConfig(N=4, Q=2, T=20), 1, np.random.default_rng(0))
    cfg = P.SCBTrainConfig(steps=30, stage1_steps=10, eta1=0.5, eta2=0.05, eta2_t0=7.0, lam=1e-4, eval_every=10)
    oracle = th.gaussian_noise_oracle(torch.zeros(1), torch.zeros(1), batch=1)
    V, A, _ = P.train_scb(cfg, inst, 2, oracle=oracle)
    V_ref, A_ref = P.initial_state(inst)
    for step in range(30):
        if step == 10:  # the switch at the evaluation of stage1_steps: rounding at θ(α)
            alpha = th.signal(V_ref, A_ref, inst)["alpha"].clamp(0, 1)
            A_ref = P.round_columns(A_ref, P.threshold(alpha, 20, 2.0, 2))
        eta = 0.5 if step < 10 else 0.05 / (1 + (step - 10) / 7.0)
        gv, ga = th.population_gradients(V_ref, A_ref, inst)
        eta_v, eta_a = P.step_sizes(inst, eta, "normalized")
        V_ref, (A_ref, _, _) = V_ref - eta_v * gv, P.prox_step(A_ref, ga, eta_a, 1e-4 if step >= 10 else 0.0)
    assert torch.allclose(V, V_ref, atol=1e-12) and torch.allclose(A, A_ref, atol=1e-12)


def test_transfer_step_lands_on_the_line_at_the_target_alpha():
    inst = scb.random_instance(scb.SCBConfig(N=3, Q=2, T=12), 2, np.random.default_rng(4))
    R = TR.reversal(inst.P, inst.mu)
    assert torch.allclose(R.sum(-2), torch.ones(2, 3, dtype=torch.float64))
    assert torch.allclose(torch.einsum("snk,sk->sn", R, inst.mu), inst.mu)
    P_bar = 0.5 * inst.P + 0.5 * R
    V0, A1, beta0 = TR.transfer_start(inst, P_bar, 0.5, 0.8, 400_000, torch.Generator().manual_seed(0), chunk=50_000)
    assert torch.allclose(th.signal(V0, torch.full_like(A1, 1 / 12), inst)["beta"], beta0)
    sig = th.signal(V0, A1, inst)
    assert torch.allclose(sig["alpha"], torch.full((2,), 0.8, dtype=torch.float64), atol=0.05)
    assert float((sig["delta_A"] / sig["alpha"]).max()) < 0.1  # close to the line: the step is the population one
    assert torch.allclose(A1.sum(-2), torch.ones(2, 3, dtype=torch.float64), atol=1e-12)


def test_the_transfer_step_draws_its_samples_in_chunks_of_bounded_size(monkeypatch):
    inst = scb.random_instance(scb.SCBConfig(N=3, Q=2, T=3000), 2, np.random.default_rng(4))
    sizes = []

    drawn = TR.sampled_gradients

    def recording(V, A, inst_, batch, generator):
        sizes.append(batch)
        return drawn(V, A, inst_, batch, generator)

    monkeypatch.setattr(TR, "sampled_gradients", recording)
    monkeypatch.setattr(TR, "CHUNK_TOKENS", 2 * 3001 * 100)  # 100 samples of the two runs at once
    TR.transfer_start(inst, inst.P, 0.5, 0.8, 1050, torch.Generator().manual_seed(0))
    assert sizes == [100] * 10 + [50]  # all 1050 samples, never more than the token budget at once


def test_softmax_training_step_is_sgd_on_the_logits():
    inst = scb.random_instance(scb.SCBConfig(N=3, Q=2, T=10), 1, np.random.default_rng(5))
    V1, W1, _ = train_softmax_scb(
        P.SCBTrainConfig(steps=1, stage1_steps=0, batch_size=16, eval_every=1, seed=3), inst, 2, 0.3, 7.0
    )
    batch = scb.sample(inst, 16, torch.Generator().manual_seed(3))
    V0, _ = P.initial_state(inst)
    V0, W0 = V0.requires_grad_(), torch.zeros_like(inst.Q).requires_grad_()
    from inductionlab.models import linear

    linear.loss(V0, linear.softmax_attention(W0), *batch).sum().backward()
    assert torch.allclose(V1, V0.detach() - 0.3 * V0.grad, atol=1e-12)
    assert torch.allclose(W1, -7.0 * W0.grad, atol=1e-12)
