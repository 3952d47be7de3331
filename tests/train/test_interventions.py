"""Interventions during training on each model family: a frozen parameter is bit-identical after N steps, a clamp
holds its schedule, an ablated head's output is zero / the batch mean (and its weights get no gradient)."""

import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.models import chen, toy
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext
from inductionlab.tasks.markov import MarkovConfig, datasets
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.train import interventions as I
from inductionlab.train.autograd import TrainConfig, pack, train
from inductionlab.train.chen import StagedConfig, train_staged
from inductionlab.train.chen_interventions import chen_family
from inductionlab.train.toy import ToyTrainConfig, train_toy
from inductionlab.train.toy_interventions import toy_family
from inductionlab.train.transformer_interventions import AblateHeads, transformer_family


@pytest.mark.parametrize(
    "entry, message",
    [
        ("layer1@5", "the form is"),
        ("layer1@9:3", "STOP > START"),
        ("w_KQ=abc", "finite number"),
        ("w_KQ", "the form is"),
    ],
)
def test_malformed_entries_say_what_the_form_is(entry, message):
    key = "clamp" if entry.startswith("w_KQ") else "freeze"
    with pytest.raises(ConfigError, match=message):
        I.InterventionConfig(**{key: (entry,)})


def test_selectors_pick_exactly_the_named_columns_and_unknown_names_list_the_known_ones():
    cfg = tf.TransformerConfig(vocab=5, d_model=4, n_heads=2, ffn_width=(0, 3))
    params = tf.init_params(cfg, 2, torch.Generator().manual_seed(0))
    theta, views = pack(params)
    family = transformer_family(cfg)
    cols = I.columns(family.shapes, I.parse("blocks.0.attn.p[1]", "k"), family.aliases, "k")
    assert len(cols) == 1 and torch.equal(theta[:, cols[0]], params["blocks.0.attn.p"][:, 1])
    head = I.columns(family.shapes, I.parse("blocks.1.attn.W_V[0]", "k"), family.aliases, "k")
    assert torch.equal(theta[:, head], params["blocks.1.attn.W_V"][:, 0].flatten(1))
    layer2 = I.columns(family.shapes, I.parse("layer2", "k"), family.aliases, "k")
    assert len(layer2) == sum(v[0].numel() for k, v in params.items() if k.startswith("blocks.1."))
    with pytest.raises(ConfigError, match="names no parameter; known: .*layer1"):
        I.columns(family.shapes, I.parse("blocks.7", "k"), family.aliases, "k")
    with pytest.raises(ConfigError, match="applies to the general transformer.*this one trains the toy model"):
        I.build(I.InterventionConfig(ablate=("blocks.0.attn",)), toy_family())


def test_toy_clamp_holds_w_kq_and_freeze_holds_layer_1():
    target = MixedTarget.per_run([1.0], [0.49], 8)
    cfg = ToyTrainConfig(
        stage1_steps=0, stage2_steps=60, batch_size=32, eval_size=256, eval_every=10, eval_log_points=0
    )
    interventions = I.InterventionConfig(clamp=("w_KQ=0.05@0:30",), freeze=("layer1",))
    hooks, _ = I.build(interventions, toy_family())
    out = train_toy(cfg, target, toy.init_params(0.3, 1), [0], RunContext(threads=1), hooks=hooks)
    m = out.metrics[out.metrics.stage == "II"].set_index("step")
    held = float(torch.tensor(0.05, dtype=out.theta.dtype))
    assert (m.w_Q.loc[0:30] == held).all() and (m.w_K.loc[0:30] == held).all() and m.w_Q.loc[40] != held
    assert (m.p_tilde == float(torch.tensor(0.3, dtype=out.theta.dtype))).all()


def _transformer(hooks_of, steps=30):
    cfg = tf.TransformerConfig(vocab=7, d_model=8, n_heads=2, readout="all", init_std=0.3)
    params = tf.init_params(cfg, 2, torch.Generator().manual_seed(1))
    theta0, views = pack(params)
    hooks, ablations = hooks_of(cfg)
    fwd = I.forward_hooks(ablations)

    def loss(th, x):
        out = tf.forward(cfg, views(th), x[:, :, :-1], hooks=fwd)[0]
        return (
            torch.nn.functional.cross_entropy(
                out.flatten(0, 2), x.expand(2, -1, -1)[:, :, 1:].flatten(), reduction="none"
            )
            .view(2, -1)
            .mean(1)
        )

    tc = TrainConfig(optimizer="adam", lr=0.01, steps=steps, eval_every=10, eval_log_points=0)
    theta, _ = train(
        tc, theta0, loss, lambda g: torch.randint(7, (1, 16, 9), generator=g), lambda th, s: {}, hooks=hooks
    )
    return views(theta0), views(theta)


def test_transformer_freeze_keeps_layer_1_bit_for_bit():
    before, after = _transformer(lambda cfg: I.build(I.InterventionConfig(freeze=("layer1",)), transformer_family(cfg)))
    for name in before:
        assert torch.equal(before[name], after[name]) == name.startswith("blocks.0."), name


def test_an_ablated_head_contributes_nothing_so_its_value_and_output_weights_get_no_gradient():
    ablate = I.InterventionConfig(ablate=("blocks.0.attn[1]@0:20",))
    before, after = _transformer(lambda cfg: I.build(ablate, transformer_family(cfg)), steps=20)
    for name in ("W_V", "W_O"):
        w0, w1 = before[f"blocks.0.attn.{name}"], after[f"blocks.0.attn.{name}"]
        assert torch.equal(w0[:, 1], w1[:, 1]) and not torch.equal(w0[:, 0], w1[:, 0])
    before, after = _transformer(lambda cfg: I.build(ablate, transformer_family(cfg)), steps=30)  # released at 20
    assert not torch.equal(before["blocks.0.attn.W_V"][:, 1], after["blocks.0.attn.W_V"][:, 1])


def test_ablation_replaces_the_head_output_by_zero_or_the_batch_mean():
    z = torch.randn(2, 5, 3, 4, 6, generator=torch.Generator().manual_seed(2))  # (S, B, H, L, K)
    for mode, expected in (
        ("zero", torch.zeros(2, 5, 4, 6)),
        ("mean", z[:, :, 2].mean(1, keepdim=True).expand(2, 5, 4, 6)),
    ):
        out = AblateHeads(0, [2], mode)._replace(z)
        assert torch.equal(out[:, :, 2], expected) and torch.equal(out[:, :, :2], z[:, :, :2])
    idle = AblateHeads(0, [2], "zero", steps=range(5, 9))
    assert torch.equal(idle._replace(z), z)  # outside its window


def test_chen_copier_frozen_and_classifier_clamped():
    model = chen.ChenConfig()
    task = MarkovConfig(L=30)
    tr, va = datasets(task, (0,), 200, 50)
    cfg = StagedConfig(lrs=(1.0, 1e4, 1.0), epochs=(20, 20, 20), eval_log_points=0)
    hooks, _ = I.build(I.InterventionConfig(freeze=("copier",), clamp=("classifier=0.5",)), chen_family(model))
    params, m = train_staged(model, cfg, task, tr, va, RunContext(threads=1), hooks=hooks)
    assert torch.equal(params["w"], chen.init_params(model, 1, params["w"].dtype)["w"])
    assert (m.a == 0.5).all() and bool((params["a"] == 0.5).all())
    free, _ = train_staged(model, cfg, task, tr, va, RunContext(threads=1))
    assert not torch.equal(free["w"], params["w"])
