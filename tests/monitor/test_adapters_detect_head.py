"""Through every adapter, the monitor's head scores equal TransformerLens's ``detect_head`` on the same weights, to
1e-9 in float64 (docs/monitor.md#adapters): one tiny GPT-2 with random weights, scaled up so that attention is far
from uniform, seen as a transformers model, a ``HookedTransformer`` holding its weights (the model ``detect_head``
runs on), a ``TransformerBridge``, an nnsight wrapper and a plain ``nn.Module`` read by ``patterns_adapter``; and the
toolkit's transformer, against its TransformerLens export."""

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab.analysis import heads as H
from inductionlab.config import ConfigError
from inductionlab.models import transformer as tf
from inductionlab.monitor import Monitor, MonitorConfig, adapter_for, patterns_adapter

pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")
tl = pytest.importorskip("transformer_lens", reason="the tl extra is not installed: pip install -e '.[tl]'")
from transformer_lens import head_detector  # noqa: E402
from transformer_lens.pretrained.weight_conversions.gpt2 import convert_gpt2_weights  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from inductionlab.analysis.tl_export import hf_tokenizer, to_hooked_transformer  # noqa: E402

VOCAB = 11
CONFIG = MonitorConfig(batch=3, period=6, vocab=VOCAB, every=5)  # 12 tokens: repeats within a copy too
TOL = 1e-9


def _gpt2(attn_implementation: str = "eager") -> GPT2LMHeadModel:
    """2 layers, 2 heads, d_model 16, float64, every weight N(0, 0.6²) from a fixed generator, in training mode
    (dropout on: the adapters must measure in eval mode)."""
    config = GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=16,
        n_positions=16,
        vocab_size=VOCAB,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation=attn_implementation,
    )
    model = GPT2LMHeadModel(config).double()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():  # lm_head is tied to wte: drawn once
            param.copy_(0.6 * torch.randn(param.shape, generator=gen, dtype=torch.float64))
    return model.train()


@pytest.fixture(scope="module")
def gpt2() -> GPT2LMHeadModel:
    return _gpt2()


@pytest.fixture(scope="module")
def hooked(gpt2):
    """The HookedTransformer with the GPT-2's weights, unprocessed (no layer-norm folding or centring)."""
    c = gpt2.config
    cfg = tl.HookedTransformerConfig(
        n_layers=c.n_layer,
        d_model=c.n_embd,
        n_ctx=c.n_positions,
        d_head=c.n_embd // c.n_head,
        n_heads=c.n_head,
        d_mlp=4 * c.n_embd,
        d_vocab=VOCAB,
        act_fn="gelu_new",
        normalization_type="LN",
        eps=c.layer_norm_epsilon,
        dtype=torch.float64,
        device="cpu",
        default_prepend_bos=False,
    )
    with warnings.catch_warnings():  # TransformerLens 3 announces HookedTransformer's removal in 4.0
        warnings.filterwarnings("ignore", "HookedTransformer is deprecated", DeprecationWarning)
        model = tl.HookedTransformer(cfg, tokenizer=hf_tokenizer(None, VOCAB))
    state = convert_gpt2_weights(gpt2, cfg)
    missing = model.load_state_dict(state, strict=False).missing_keys
    assert [k for k in missing if "IGNORE" not in k and "mask" not in k] == ["unembed.b_U"]  # zero in both
    return model


def _detect_head(model, tokens: torch.Tensor) -> dict[str, np.ndarray]:
    """Score name → (n_layers, H): ``detect_head`` on ``tokens`` (B, L) written as text, averaged over them."""
    sequences = [" ".join(str(int(t)) for t in row) for row in tokens]  # the words of hf_tokenizer(None, V)
    return {name: head_detector.detect_head(model, sequences, f"{name}_head").numpy() for name in H.HEAD_NAMES}


@pytest.fixture(scope="module")
def reference(hooked, gpt2) -> dict[str, np.ndarray]:
    """detect_head on the HookedTransformer, once the two models are seen to agree and attention to be far from
    uniform (a query's largest weight 0.5 or more on average; uniform weights over keys 0..i give 0.19 here)."""
    tokens = Monitor(gpt2, CONFIG).tokens
    with torch.no_grad():
        out = gpt2.eval()(input_ids=tokens, output_attentions=True)
        assert torch.allclose(hooked(tokens), out.logits, atol=1e-10, rtol=0)
    gpt2.train()
    for pattern in out.attentions:
        assert float(pattern.max(-1).values[..., 1:].mean()) > 0.5
    scores = _detect_head(hooked, tokens)
    for name, value in scores.items():  # and the heads differ
        assert np.ptp(value) > 0.03, name
    return scores


def _grid(heads: pd.DataFrame, name: str) -> np.ndarray:
    """(n_layers, H) scores of the last measurement."""
    last = heads[heads.step == heads.step.max()].sort_values(["layer", "head"])
    return last[name].to_numpy().reshape(last.layer.max() + 1, -1)


def _assert_detect_head(model, reference: dict[str, np.ndarray], name: str) -> Monitor:
    """One measurement of ``model`` by the adapter ``name``: its three scores equal ``reference`` to TOL."""
    monitor = Monitor(model, CONFIG)
    assert monitor.adapter.name == name
    monitor.measure(0)
    for score in H.HEAD_NAMES:
        assert np.abs(_grid(monitor.heads, score) - reference[score]).max() < TOL, score
    return monitor


def test_the_hf_adapter_equals_detect_head(gpt2, reference):
    _assert_detect_head(gpt2, reference, "hf_adapter(GPT2LMHeadModel)")
    assert gpt2.training  # the adapter measured in eval mode (no dropout) and put the flag back


def test_the_tl_adapter_equals_detect_head(hooked, reference):
    _assert_detect_head(hooked, reference, "tl_adapter(HookedTransformer)")


def test_the_bridge_adapter_equals_detect_head_whatever_the_attention_implementation(gpt2, reference):
    from transformer_lens.model_bridge.sources import build_bridge_from_module

    model = _gpt2("sdpa")  # returns no attention weights of its own: the bridge computes the pattern itself
    model.load_state_dict(gpt2.state_dict())
    bridge = build_bridge_from_module(model, "GPT2LMHeadModel", hf_config=model.config)
    _assert_detect_head(bridge, reference, "bridge_adapter(GPT2LMHeadModel)")
    assert bridge.training and model.training


def test_the_nnsight_adapter_equals_detect_head(gpt2, reference):
    nnsight = pytest.importorskip("nnsight", reason="the nnsight extra is not installed: pip install -e '.[nnsight]'")
    wrapped = nnsight.NNsight(copy.deepcopy(gpt2))
    _assert_detect_head(wrapped, reference, "nnsight_adapter(GPT2LMHeadModel)")
    assert wrapped._module.training
    explicit = adapter_for(wrapped, attention="transformer.h.{layer}.attn")
    monitor = Monitor(explicit, CONFIG)
    monitor.measure(0)
    assert np.abs(_grid(monitor.heads, "induction") - reference["induction"]).max() < TOL
    for attention, says in (("transformer.h.0.attn", "must hold {layer}"), ("h.{layer}.attn", "no module 'h.0.attn'")):
        with pytest.raises(ConfigError, match=f"^attention: .*{says}"):
            adapter_for(wrapped, attention=attention)
    with pytest.raises(ConfigError, match="^attn_implementation: the wrapped model uses 'sdpa'"):
        adapter_for(nnsight.NNsight(_gpt2("sdpa")))


def test_patterns_adapter_on_a_plain_module_equals_detect_head(gpt2, reference):
    def attention_weights(model: torch.nn.Module, tokens: torch.Tensor) -> list[torch.Tensor]:
        found: list[torch.Tensor] = []
        hooks = [
            block.attn.register_forward_hook(lambda m, a, out: found.append(out[1])) for block in model.transformer.h
        ]
        try:
            model(tokens)
        finally:
            for hook in hooks:
                hook.remove()
        return found

    adapter = patterns_adapter(gpt2, attention_weights)
    assert (adapter.n_layers, adapter.n_heads) == (2, 2)  # read from a first call's patterns
    _assert_detect_head(adapter, reference, "patterns_adapter(GPT2LMHeadModel)")


def test_the_toolkit_adapter_equals_detect_head_on_its_transformerlens_export():
    cfg = tf.TransformerConfig(
        vocab=VOCAB, d_model=8, n_layers=2, n_heads=2, ffn_width=(0, 6), readout="all", init_std=0.5, slope_init=0.7
    )
    params = tf.init_params(cfg, 2, torch.Generator().manual_seed(3), torch.float64)
    export = to_hooked_transformer(cfg, params, run=1)
    ours = Monitor(adapter_for((cfg, params), run=1), CONFIG)
    reference = _detect_head(export, ours.tokens)
    assert np.ptp(reference["induction"]) > 0.05
    _assert_detect_head(ours.adapter, reference, "toolkit_adapter(run=1)")
    theirs = _assert_detect_head(export, reference, "tl_adapter(HookedTransformer)")
    ours.measure(0)  # the two adapters agree on the losses and the prefix-matching score too
    for key in ("loss_repeated", "loss_first", "best_induction"):
        assert abs(ours.steps.loc[0, key] - theirs.steps.loc[0, key]) < 1e-10, key
    assert np.abs(_grid(ours.heads, "prefix_matching") - _grid(theirs.heads, "prefix_matching")).max() < 1e-10
    assert export.training  # the adapter put the training flag back
