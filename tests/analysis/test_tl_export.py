"""The TransformerLens export and our head scores beside TransformerLens's own (the ``tl`` extra; skipped without it)."""

import pytest
import torch

from inductionlab.analysis import heads as H
from inductionlab.analysis.tl_export import hf_tokenizer, to_hooked_transformer
from inductionlab.config import ConfigError
from inductionlab.models import transformer as tf
from inductionlab.tasks.text import WordTokenizer

tl = pytest.importorskip("transformer_lens", reason="the tl extra is not installed: pip install -e '.[tl]'")
from transformer_lens import head_detector  # noqa: E402

CONFIGS = {
    "ffn in layer 2 only": tf.TransformerConfig(vocab=11, d_model=8, n_heads=2, ffn_width=(0, 6), readout="all"),
    "rpe-only and dp-only heads": tf.TransformerConfig(
        vocab=11,
        d_model=8,
        n_heads=2,
        dp=((False, True), (True, False)),
        rpe=((True, True), (False, True)),
        readout="all",
    ),
    "key_start > 1, scaled": tf.TransformerConfig(
        vocab=11, d_model=8, n_heads=2, d_head=3, key_start=(1, 3), scale=True, ffn_width=5, readout="all"
    ),
}


def _model(cfg, seed=0):
    cfg = tf.TransformerConfig(**{**vars(cfg), "init_std": 0.5, "slope_init": 0.7})
    return cfg, tf.init_params(cfg, 2, torch.Generator().manual_seed(seed), torch.float64)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_export_gives_our_logits_at_two_lengths(name):
    cfg, params = _model(CONFIGS[name])
    model = to_hooked_transformer(cfg, params, run=1)
    for L in (7, 13):
        tokens = torch.randint(11, (3, L), generator=torch.Generator().manual_seed(L))
        ours = tf.forward(cfg, params, tokens.unsqueeze(0))[0][1]  # (B, L, V), run 1
        with torch.no_grad():
            theirs = model(tokens)
        assert float((ours - theirs).abs().max()) < 1e-10, (name, L)


def test_detect_head_on_the_export_agrees_with_our_scores():
    cfg, params = _model(CONFIGS["ffn in layer 2 only"], seed=3)
    model = to_hooked_transformer(cfg, params, run=0)
    tokens = torch.randint(5, (1, 12), generator=torch.Generator().manual_seed(4))
    model.to_tokens = lambda seq, **kw: tokens  # the model has no tokenizer: hand TransformerLens the token ids
    _, cache = tf.forward(cfg, params, tokens.unsqueeze(0), keep=True)
    patterns = torch.stack([cache[f"blocks.{l}.attn.hook_pattern"][0] for l in range(2)])  # (layers, B, H, L, L)
    for name in H.HEAD_NAMES:
        det = H.detection_pattern(tokens, name)
        for measure, tol in (("mul", 1e-15), ("abs", 5e-4 + 1e-12)):  # the patterns of two forward passes; abs: rounded
            theirs = head_detector.detect_head(model, "ids", f"{name}_head", error_measure=measure)
            ours = H.attention_score(patterns, det, measure)
            assert float((ours - theirs).abs().max()) <= tol, (name, measure)


def test_our_scores_equal_transformerlens_head_detector_functions():
    """2 × 3 × 2 × 2 cases; one of them puts all but 1e-35 of the attention on key 0 with exclude_bos (1.0 there)."""
    gen = torch.Generator().manual_seed(5)
    for case in range(6):
        tokens = torch.randint(4, (1, 10), generator=gen)
        logits = torch.randn(10, 10, generator=gen, dtype=torch.float64)
        pattern = torch.softmax(logits.masked_fill(~torch.ones(10, 10, dtype=torch.bool).tril(), -torch.inf), -1)
        if case == 0:
            pattern = torch.zeros(10, 10, dtype=torch.float64)
            pattern[:, 0], pattern[2:, 1] = 1.0, 1e-35
        for name in H.HEAD_NAMES:
            det = getattr(head_detector, f"get_{name}_head_detection_pattern")(tokens)
            assert torch.equal(det, H.detection_pattern(tokens, name)[0])
            for bos in (False, True):
                for measure in ("mul", "abs"):
                    kw = dict(exclude_bos=bos, exclude_current_token=False, error_measure=measure)
                    theirs = head_detector.compute_head_attention_similarity_score(pattern.clone(), det.double(), **kw)
                    ours = float(H.attention_score(pattern.view(1, 1, 10, 10), det[None], measure, bos))
                    if measure == "mul":
                        assert ours == theirs or (ours != ours and theirs != theirs)  # bit for bit, NaN alike
                    else:
                        assert abs(ours - theirs) <= 5e-4 + 1e-12


def test_what_transformerlens_cannot_express_is_refused():
    with pytest.raises(ConfigError, match="discrete tokens"):
        to_hooked_transformer(
            tf.TransformerConfig(d_in=3), tf.init_params(tf.TransformerConfig(d_in=3), 1, torch.Generator())
        )
    cfg = tf.TransformerConfig(vocab=5, residual=(True, False))
    with pytest.raises(ConfigError, match="residual"):
        to_hooked_transformer(cfg, tf.init_params(cfg, 1, torch.Generator()))


def test_the_export_tokenizes_synthetic_ids_and_a_word_vocabulary():
    """Synthetic tokens are written as their ids; a text run's word tokenizer maps an unknown word to <unk> (id 0)."""
    cfg, params = _model(CONFIGS["ffn in layer 2 only"])
    model = to_hooked_transformer(cfg, params)
    assert model.to_tokens("0 3 10").tolist() == [[0, 3, 10]]
    with pytest.raises(Exception, match="UNK|unk"):
        model.to_tokens("0 11")  # 11 is no token of an 11-token vocabulary
    words = hf_tokenizer(WordTokenizer(["<unk>", "<eos>", "a", "b"]), 4)
    assert words("a b zz <eos>")["input_ids"] == [2, 3, 0, 1] and words.decode([3, 2]) == "b a"
