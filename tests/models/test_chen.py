import math

import numpy as np
import pytest
import torch

from inductionlab.analysis.gih import gih_predictor
from inductionlab.config import ConfigError
from inductionlab.models import chen
from inductionlab.tasks.markov import MarkovConfig, sample


def _naive_predict(cfg, params, seq):
    """Spec §2 position by position for one sequence (L + 1 tokens, the last the label): explicit softmax over
    the valid lags, explicit tensor-product features φ_S, explicit classifier softmax."""
    d, H, L = cfg.vocab_size, cfg.n_heads, len(seq) - 1
    P = {k: v[0].double() for k, v in params.items()}
    onehot = lambda l: torch.zeros(d, dtype=torch.float64) if l == L else torch.eye(d, dtype=torch.float64)[seq[l]]
    feats = []
    for l in range(L + 1):
        vs = []
        for h in range(H):
            logits, vals = [], []
            for lag in cfg.lags:
                ok = l - lag >= 0 and (cfg.windows == "shared" or lag == 0 or h + 1 <= lag <= h + H)
                if not ok:
                    continue
                logit = torch.tensor(chen.SELF_LOGIT, dtype=torch.float64) if lag == 0 else P["w"][h, lag - 1]
                value = onehot(l - lag)
                if cfg.variant == "full":
                    logit = logit + onehot(l) @ P["W_Q"][h] @ P["W_K"][h].T @ value
                    value = P["W_OV"][h] @ value
                logits.append(logit)
                vals.append(value)
            v = (
                torch.zeros(d, dtype=torch.float64)
                if not logits
                else (torch.stack(logits).softmax(0)[:, None] * torch.stack(vals)).sum(0)
            )
            vs.append(v)
        feats.append(vs)
    p = chen.selection_weights(P["c"][None])[0]

    def kernel(q, k):
        if cfg.norm == "exact":

            def phi(vs):
                parts = []
                for s_idx, S in enumerate(cfg.subsets):
                    t = torch.ones(1, dtype=torch.float64)
                    for h in S:
                        t = torch.kron(t, vs[h])
                    parts.append(P["c"][s_idx] * t)
                f = torch.cat(parts)
                return f / f.norm()

            return phi(q) @ phi(k)
        if cfg.norm == "head_l2":
            nq = [v / (v.norm() + chen.EPS_L2) for v in q]
            nk = [v / (v.norm() + chen.EPS_L2) for v in k]
        else:
            ln = lambda v, h: torch.nn.functional.layer_norm(v, (d,)) * P["ln_gamma"][h] + P["ln_beta"][h]
            nq = [ln(v, h) for h, v in enumerate(q)]
            nk = [ln(v, h) for h, v in enumerate(k)]
        return sum(p[i] * math.prod(float((nq[h] @ nk[h]).relu()) for h in S) for i, S in enumerate(cfg.subsets))

    K = torch.tensor([float(kernel(feats[L], feats[l])) for l in range(L)], dtype=torch.float64)
    att = (P["a"][0] * K).softmax(0)
    return sum(att[l] * onehot(l) for l in range(L))


def _random_params(cfg, gen):
    params = chen.init_params(cfg, 1)
    return {
        k: (v + torch.randn(v.shape, generator=gen, dtype=v.dtype)) if k != "a" else torch.full_like(v, 1.7)
        for k, v in params.items()
    }


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"max_degree": 3},
        {"windows": "shifted", "window": 5},
        {"norm": "exact", "max_degree": 3},
        {"variant": "full", "norm": "layernorm"},
        {"variant": "full", "norm": "head_l2", "window": 4},
        {"variant": "full", "norm": "layernorm", "windows": "shifted", "window": 5},  # the authors' App. B model
    ],
)
def test_state_table_model_equals_the_position_by_position_definition(kw):
    cfg = chen.ChenConfig(**kw)
    gen = torch.Generator().manual_seed(0)
    params = _random_params(cfg, gen)
    tokens, _ = sample(MarkovConfig(L=12), 4, np.random.default_rng(1))
    y = chen.predict(cfg, params, chen.make_batch(cfg, tokens))[0]
    for b in range(4):
        torch.testing.assert_close(y[b], _naive_predict(cfg, params, tokens[b].tolist()), rtol=1e-9, atol=1e-10)


def test_losses_are_cross_entropy_of_y_and_the_repo_surrogate():
    cfg = chen.ChenConfig()
    params = _random_params(cfg, torch.Generator().manual_seed(2))
    tokens, _ = sample(MarkovConfig(L=30), 16, np.random.default_rng(3))
    batch = chen.make_batch(cfg, tokens)
    y = chen.predict(cfg, params, batch)[0]
    ce = -(y[torch.arange(16), tokens[:, -1]] + 1e-12).log().mean()
    torch.testing.assert_close(chen.loss(cfg, params, batch)[0], ce)
    sur = torch.nn.functional.cross_entropy(y, tokens[:, -1])
    torch.testing.assert_close(chen.loss(chen.ChenConfig(loss="softmax_of_probs"), params, batch)[0], sur)


def test_runs_on_the_run_axis_are_independent():
    cfg = chen.ChenConfig()
    gen = torch.Generator().manual_seed(4)
    p1, p2 = _random_params(cfg, gen), _random_params(cfg, gen)
    both = {k: torch.cat([p1[k], p2[k]]) for k in p1}
    t1, _ = sample(MarkovConfig(L=25), 6, np.random.default_rng(5))
    t2, _ = sample(MarkovConfig(L=25), 6, np.random.default_rng(6))
    y = chen.predict(cfg, both, chen.make_batch(cfg, torch.stack([t1, t2])))
    torch.testing.assert_close(y[0], chen.predict(cfg, p1, chen.make_batch(cfg, t1))[0])
    torch.testing.assert_close(y[1], chen.predict(cfg, p2, chen.make_batch(cfg, t2))[0])


def test_exact_copiers_selecting_12_give_the_generalised_induction_head():
    """Spec §4.1: heads copying lags 1, 2 exactly and p_{1,2} = 1 make K_l = 1{X_{l−{1,2}} = X_{L+1−{1,2}}}, so
    the output is GIH_a, tending to the n-gram frequency as a → ∞ (acceptance 8.3).  One exception (spec A8):
    at position 2 head 2's only valid lag is 1, so it copies x_1 too; sequences where that position could
    match (x_L = x_{L−1} = x_1) are left out of the comparison."""
    cfg = chen.ChenConfig(w_plus=60.0, w_minus=0.0)
    params = chen.init_params(cfg, 1)
    params["c"] = torch.tensor([[0.0, 0, 0, 0, 1, 0, 0]], dtype=torch.float64)  # subsets (), 1, 2, 3, 12, 13, 23
    tokens, _ = sample(MarkovConfig(L=60), 300, np.random.default_rng(7))
    batch = chen.make_batch(cfg, tokens)
    clean = ~((tokens[:, 59] == tokens[:, 58]) & (tokens[:, 58] == tokens[:, 0]))
    assert int(clean.sum()) > 200
    for a in (0.5, 3.0):
        params["a"] = torch.tensor([[a]], dtype=torch.float64)
        torch.testing.assert_close(
            chen.predict(cfg, params, batch)[0][clean],
            gih_predictor(tokens[:, :-1], (1, 2), 3, a)[clean],
            rtol=0,
            atol=1e-6,
        )  # ‖v‖ + 1e−7
    params["a"] = torch.tensor([[40.0]], dtype=torch.float64)
    gih = gih_predictor(tokens[:, :-1], (1, 2), 3)
    pad = torch.cat([tokens[:, :-1], torch.zeros(300, 1, dtype=torch.long)], 1)
    has_match = ((pad[:, 1:-2] == pad[:, -2:-1]) & (pad[:, :-3] == pad[:, -3:-2])).any(-1) & clean
    err = (chen.predict(cfg, params, batch)[0] - gih).abs().amax(-1)
    assert int(has_match.sum()) > 100 and float(err[has_match].max()) < 100 * math.exp(-40)


def test_the_empty_set_gets_no_gradient_it_only_shifts_all_logits():
    cfg = chen.ChenConfig(max_degree=3)
    params = chen.init_params(cfg, 1)
    tokens, _ = sample(MarkovConfig(L=40), 100, np.random.default_rng(8))
    p = torch.full((1, 8), 1 / 8, dtype=torch.float64, requires_grad=True)
    chen.loss(cfg, params, chen.make_batch(cfg, tokens), p).sum().backward()
    assert abs(float(p.grad[0, 0])) < 1e-12 and float(p.grad[0, 1:].abs().min()) > 0


def test_initialisation_and_subsets_follow_the_spec():
    cfg = chen.ChenConfig(max_degree=3)
    assert cfg.subsets == [(), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    assert [chen.subset_label(s) for s in cfg.subsets[:5]] == ["{}", "{1}", "{2}", "{3}", "{1,2}"]
    P = chen.init_params(cfg, 2)
    torch.testing.assert_close(chen.selection_weights(P["c"]), torch.full((2, 8), 1 / 8, dtype=torch.float64))
    att = P["w"][0].softmax(-1)
    assert bool((att.diagonal() > 0.89).all())  # head h puts ≈ 0.90 of its mass on lag h (spec §3.1)


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"window": 2}, ["model.window", "M ≥ H"]),
        ({"windows": "shifted"}, ["model.window", "2H − 1"]),
        ({"max_degree": 4}, ["model.max_degree", "1..n_heads"]),
        ({"c_init": 0.0}, ["model.c_init"]),
    ],
)
def test_bad_configs_say_what_is_allowed(kw, words):
    with pytest.raises(ConfigError) as err:
        chen.ChenConfig(**kw)
    assert all(w in str(err.value) for w in words)


def test_tokens_out_of_range_are_rejected():
    with pytest.raises(ConfigError, match="0..2"):
        chen.make_batch(chen.ChenConfig(), torch.tensor([[0, 1, 3, 1, 0]]))


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"norm": "exact", "max_degree": 3},
        {"variant": "full", "norm": "layernorm", "windows": "shifted", "window": 5},
    ],
)
def test_the_pairwise_kernel_and_its_gradient_equal_the_full_table_at_the_pairs_that_occur(kw):
    cfg = chen.ChenConfig(**kw)
    one, two = (_random_params(cfg, torch.Generator().manual_seed(seed)) for seed in (3, 4))
    params = {k: torch.cat([one[k], two[k]]).requires_grad_(True) for k in one}  # two runs, each its own weights
    tokens, _ = sample(MarkovConfig(L=20), 6, np.random.default_rng(2))
    batch = chen.make_batch(cfg, torch.stack([tokens, tokens.flip(0)]))
    Z = len(batch.states)
    table = chen.kernel_table(cfg, params, states=batch.states).reshape(-1)  # (S·Z·Z,)
    want = table.index_select(0, batch.row * Z + batch.col % Z)
    got = chen.pair_kernel(cfg, params, batch)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    weights = torch.randn(got.shape, generator=torch.Generator().manual_seed(4), dtype=got.dtype)
    names = sorted(params)
    g_want = torch.autograd.grad((want * weights).sum(), [params[k] for k in names], allow_unused=True)
    g_got = torch.autograd.grad((got * weights).sum(), [params[k] for k in names], allow_unused=True)
    for name, a, b in zip(names, g_got, g_want):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)
