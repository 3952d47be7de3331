"""Ablation, patching and direct logit attribution on hand-built models where the answer is known."""

import torch

from inductionlab.analysis import ablation as A
from inductionlab.models import transformer as tf
from inductionlab.tasks.induction import induction_head, sample_tokens
from inductionlab.theory.constructions import ih2_construction

W = torch.tensor([[0.8, 0.5], [-0.5, 1.2]], dtype=torch.float64)


def _theorem_4_1(B=64, L=12):
    cfg, params = ih2_construction(W, [60.0])
    x = sample_tokens((B, L, 2), "gaussian", torch.Generator().manual_seed(0)).unsqueeze(0)
    return cfg, params, x


def _squared_error(target):
    return lambda out: 0.5 * (out - target).square().sum(-1)  # (S, B)


def test_ablating_either_head_of_the_theorem_4_1_construction_destroys_its_ih2_fit():
    cfg, params, x = _theorem_4_1()
    target = induction_head(x[0], W)
    result = A.head_ablation(cfg, params, x, _squared_error(target))
    assert float(result["base"][0]) < 1e-12  # the construction fits IH_2
    baseline = float(0.5 * target.square().sum(-1).mean())  # output 0: the loss of predicting nothing
    assert abs(float(result["total"][0, 1, 0]) - baseline) < 1e-9  # layer 2 zeroed: the output is 0
    assert float(result["total"][0, 0, 0]) > 0.1 * baseline  # layer 1 zeroed: no previous token to match


def test_mean_ablation_of_a_batch_of_one_sequence_changes_nothing_zero_ablation_does():
    cfg = tf.TransformerConfig(vocab=11, d_model=8, n_heads=2, readout="all", init_std=0.5, slope_init=0.3)
    params = tf.init_params(cfg, 2, torch.Generator().manual_seed(1), torch.float64)
    x = torch.randint(11, (1, 1, 9), generator=torch.Generator().manual_seed(2)).expand(1, 4, 9)

    def loss(out):
        return torch.nn.functional.cross_entropy(out.flatten(0, 2), x.expand(2, 4, 9).flatten(), reduction="none").view(
            2, 4, 9
        )

    where = torch.zeros(4, 9, dtype=torch.bool)
    where[:, 5:] = True
    mean = A.head_ablation(cfg, params, x, loss, mode="mean", where=where)
    zero = A.head_ablation(cfg, params, x, loss, mode="zero", where=where)
    assert float(mean["total"].abs().max()) < 1e-12 and float(mean["where"].abs().max()) < 1e-12
    assert float(zero["total"].abs().min()) > 1e-6 and zero["where"].shape == (2, 2, 2)


def test_patching_the_layer_2_head_at_the_last_position_restores_the_fit_and_nothing_else_does():
    """Corrupt only the query token x_L: layer 1 is strictly causal, so its outputs are the same in both runs
    (patching them recovers nothing); layer 2 reads out at L alone, so its head at L carries all of it."""
    cfg, params, clean = _theorem_4_1(B=32)
    corrupted = clean.clone()
    corrupted[..., -1, :] = sample_tokens((32, 2), "gaussian", torch.Generator().manual_seed(3))
    target = induction_head(clean[0], W)

    def metric(out):
        return -_squared_error(target)(out).mean(1)

    heads = A.patch_heads(cfg, params, clean, corrupted, metric)  # (S, layers, H, L)
    assert heads.shape == (1, 2, 1, 12)
    assert abs(float(heads[0, 1, 0, -1]) - 1) < 1e-9
    assert float(heads[0, 1, 0, :-1].abs().max()) < 1e-9 and float(heads[0, 0].abs().max()) < 1e-9
    layers = A.patch_layers(cfg, params, clean, corrupted, metric)
    assert torch.allclose(layers[0, :, -1], torch.ones(2, dtype=torch.float64))  # the residual carries x_L
    assert float(layers[0, :, :-1].abs().max()) < 1e-9


def test_direct_logit_attribution_adds_up_to_the_output_with_the_embedding_path():
    """Residual everywhere, no FFN: output = W_E x W_U + Σ heads z_h W_O,h W_U exactly."""
    cfg = tf.TransformerConfig(d_in=3, d_model=6, n_heads=2, n_layers=2, init_std=0.4, slope_init=0.2)
    params = tf.init_params(cfg, 2, torch.Generator().manual_seed(4), torch.float64)
    x = sample_tokens((5, 7, 3), "gaussian", torch.Generator().manual_seed(5)).unsqueeze(0)
    direction = torch.randn(5, 3, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    dla = A.direct_logit_attribution(cfg, params, x, direction)  # (S, layers, H)
    out = tf.forward(cfg, params, x)[0]
    embed_path = torch.einsum(
        "sbd,sde,seo->sbo", x[:, :, -1].expand(2, 5, 3), params["embed.W_E"], params["unembed.W_U"]
    )
    total = ((out - embed_path) * direction).sum(-1).mean(1)
    assert torch.allclose(dla.sum((1, 2)), total, atol=1e-12)


def test_heads_whose_output_is_overwritten_have_no_direct_attribution():
    cfg, params, x = _theorem_4_1(B=8)
    assert A.reaches_readout(cfg) == [False, True]
    dla = A.direct_logit_attribution(cfg, params, x, induction_head(x[0], W))
    assert float(dla[0, 0, 0]) == 0.0 and float(dla[0, 1, 0]) > 0
