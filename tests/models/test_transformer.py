import math

import pytest
import torch

from inductionlab import rng
from inductionlab.config import ConfigError
from inductionlab.models import toy
from inductionlab.models import transformer as tf
from inductionlab.tasks.mixed import new_tokens


def toy_as_transformer(theta: torch.Tensor) -> tuple[tf.TransformerConfig, tf.Params]:
    """The six-parameter toy (spec §5.2) as weights of the general model: D = 2, z = (x; 0); layer 1 one
    RPE head (slope p̃) copying x into coordinate 2, with residual; layer 2 a 4-gram RPE head (slope p,
    w_V1 y → coordinate 1) and a DP induction head (w_Q x_L · w_K y_s, w_V2 x_s → coordinate 2), keys 2..L−1."""
    cfg = tf.TransformerConfig(
        d_in=1,
        d_model=2,
        n_layers=2,
        n_heads=2,
        d_head=1,
        dp=((False, False), (False, True)),
        rpe=((True, False), (True, False)),
        residual=(True, False),
        key_start=(1, 2),
        d_out=2,
    )
    S = theta.shape[0]
    P = tf.zero_params(cfg, S)
    p_tilde, p, w_v1, w_v2, w_q, w_k = theta.double().unbind(1)
    P["embed.W_E"][:, 0, 0] = 1
    P["blocks.0.attn.p"][:, 0] = p_tilde
    P["blocks.0.attn.W_V"][:, 0, 0, 0] = 1
    P["blocks.0.attn.W_O"][:, 0, 0, 1] = 1
    P["blocks.1.attn.p"][:, 0] = p
    P["blocks.1.attn.W_V"][:, 0, 1, 0] = w_v1
    P["blocks.1.attn.W_O"][:, 0, 0, 0] = 1
    P["blocks.1.attn.W_Q"][:, 1, 0, 0] = w_q
    P["blocks.1.attn.W_K"][:, 1, 1, 0] = w_k
    P["blocks.1.attn.W_V"][:, 1, 0, 0] = w_v2
    P["blocks.1.attn.W_O"][:, 1, 0, 1] = 1
    P["unembed.W_U"][:] = torch.eye(2, dtype=torch.float64)
    return cfg, P


def test_the_toy_is_the_general_model_with_the_weights_of_spec_5_2():
    L, B = 12, 50
    theta = torch.tensor([[0.7, 0.3, 0.2, 0.4, 0.9, 0.6], [2.0, -0.1, 0.5, 0.2, -0.3, 0.8]], dtype=torch.float64)
    x = new_tokens(2, L, B, [rng.generator(0), rng.generator(1)], "gaussian", torch.float64)  # (S, L, B) token-major
    zero_targets = toy.Batch(x, torch.zeros(2, 2, B, dtype=torch.float64), 5.0)
    want = toy._forward(theta, zero_targets, "learned", need_dy=False, keep_e=False).resid  # (S, 2, B)
    cfg, params = toy_as_transformer(theta)
    got, _ = tf.forward(cfg, params, x.transpose(1, 2).unsqueeze(-1))  # (S, B, 2)
    assert torch.allclose(got.transpose(1, 2), want, atol=1e-6)
    assert torch.allclose(tf.forward(cfg, params, x.transpose(1, 2).unsqueeze(-1), keep=True)[0], got)


@pytest.mark.parametrize("L", [1, 2, 3])
def test_strict_causal_masking_never_gives_nan(L):
    cfg = tf.TransformerConfig(d_in=3, d_model=4, n_heads=2, ffn_width=5, key_start=(1, 2), readout="all")
    params = tf.init_params(cfg, 2, torch.Generator().manual_seed(0))
    params = {k: v.requires_grad_() for k, v in params.items()}
    out, cache = tf.forward(cfg, params, torch.randn(1, 4, L, 3, generator=torch.Generator().manual_seed(1)), keep=True)
    out.sum().backward()
    assert torch.isfinite(out).all() and all(torch.isfinite(p.grad).all() for p in params.values())
    assert float(cache["blocks.0.attn.hook_pattern"][..., 0, :].detach().abs().sum()) == 0  # position 1 has no keys
    rows = cache["blocks.0.attn.hook_pattern"].sum(-1)[..., 1:]
    assert torch.allclose(rows, torch.ones_like(rows))


def test_pure_rpe_head_is_the_memory_kernel():
    cfg = tf.TransformerConfig(d_in=1, d_model=1, n_layers=1, dp=False)
    params = tf.zero_params(cfg)
    params["blocks.0.attn.p"][:] = 0.8
    _, cache = tf.forward(cfg, params, torch.zeros(1, 1, 6, 1, dtype=torch.float64), keep=True)
    row = cache["blocks.0.attn.hook_pattern"][0, 0, 0, 5, :5]  # query 6, keys 1..5
    kernel = torch.tensor([math.exp(-0.8 * (6 - j - 1)) for j in range(1, 6)], dtype=torch.float64)
    assert torch.allclose(row, kernel / kernel.sum())


def test_run_axis_equals_separate_runs_and_discrete_tokens():
    cfg = tf.TransformerConfig(vocab=7, d_model=6, n_heads=2, ffn_width=8, readout="all")
    params = tf.init_params(cfg, 3, torch.Generator().manual_seed(0))
    tokens = torch.randint(0, 7, (1, 5, 9), generator=torch.Generator().manual_seed(2))
    out, _ = tf.forward(cfg, params, tokens)
    for r in range(3):
        one, _ = tf.forward(cfg, {k: v[r : r + 1] for k, v in params.items()}, tokens)
        assert torch.allclose(out[r], one[0], atol=1e-6)
    assert out.shape == (3, 5, 9, 7)


def test_invalid_configs_name_the_field():
    with pytest.raises(ConfigError, match="model.residual"):
        tf.TransformerConfig(n_layers=2, residual=(True,))
    with pytest.raises(ConfigError, match="model.dp"):
        tf.TransformerConfig(n_layers=2, n_heads=2, dp=((True,), (True, False)))
    with pytest.raises(ConfigError, match="model.n_heads"):
        tf.TransformerConfig(n_heads=0)


def test_token_lookup_gradient_repeats_exactly_on_several_threads():
    """Same seed → same numbers on 2 threads: the lookup's backward must not accumulate with atomic adds."""
    cfg = tf.TransformerConfig(vocab=200, d_model=32, n_layers=1, n_heads=1, d_head=8, readout="all")
    g = torch.Generator().manual_seed(0)
    W_E = torch.randn(1, 200, 32, generator=g)
    x = torch.randint(200, (1, 32, 100), generator=g)
    upstream = torch.randn(1, 32, 100, 32, generator=g)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        grads = []
        for _ in range(4):
            w = W_E.clone().requires_grad_(True)
            (tf.embed(cfg, {"embed.W_E": w}, x) * upstream).sum().backward()
            grads.append(w.grad)
    finally:
        torch.set_num_threads(threads)
    torch.testing.assert_close(grads[0][0, x[0, 3, 7]], upstream[0][x[0] == x[0, 3, 7]].sum(0), rtol=1e-5, atol=1e-4)
    assert all(torch.equal(grads[0], gr) for gr in grads[1:])
