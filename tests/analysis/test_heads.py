import torch

from inductionlab.analysis import heads as H
from inductionlab.models import transformer as tf
from inductionlab.tasks.induction import patch_targets, repeated_random_tokens
from inductionlab.theory.constructions import ih2_construction


def _ideal(detection: torch.Tensor) -> torch.Tensor:
    """A hand-built head attending uniformly to the detected keys (rows without any: no attention)."""
    return detection / detection.sum(-1, keepdim=True).clamp_min(1)


def test_hand_built_heads_score_one_and_shifted_heads_score_zero():
    gen = torch.Generator().manual_seed(0)
    tokens = repeated_random_tokens(4, 7, 2, gen, vocab=1000)
    for name in H.HEAD_NAMES:
        det = H.detection_pattern(tokens, name)
        pattern = _ideal(det).unsqueeze(1)  # (B, H=1, L, L)
        for measure in ("mul", "abs"):
            assert torch.allclose(H.attention_score(pattern, det, measure, rows="matched"), torch.ones(1), atol=1e-6)
    prev = _ideal(H.detection_pattern(tokens, "previous_token")).unsqueeze(1)
    assert float(H.attention_score(prev, H.detection_pattern(tokens, "induction"), "mul", rows="matched")) < 0.05
    assert float(H.attention_score(prev, H.detection_pattern(tokens, "previous_token"), "abs")) == 1.0
    induction = _ideal(H.detection_pattern(tokens, "induction")).unsqueeze(1)
    assert torch.allclose(H.prefix_matching_score(induction, 7), torch.ones(1))
    assert float(H.prefix_matching_score(prev, 7)) == 0.0


def test_scores_match_the_transformerlens_formulas():
    """TransformerLens head_detector: mul = Σ A⊙P / Σ A; abs = 1 − mean|A − P|·L (one sequence, one head)."""
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(5, (1, 12), generator=gen)
    logits = torch.randn(12, 12, generator=gen).masked_fill(~torch.ones(12, 12, dtype=torch.bool).tril(), -torch.inf)
    pattern = torch.softmax(logits, -1)
    for name in H.HEAD_NAMES:
        det = H.detection_pattern(tokens, name)[0]
        for bos, cur in ((False, False), (True, True)):
            a = pattern.clone()
            if bos:
                a[:, 0] = 0
            if cur:
                a.fill_diagonal_(0)
            mul = (a * det).sum() / a.sum()
            diff = (pattern - det).abs()
            if bos:
                diff[:, 0] = 0
            if cur:
                diff.fill_diagonal_(0)
            absolute = 1 - diff.mean() * 12
            got = [H.attention_score(pattern.view(1, 1, 12, 12), det[None], m, bos, cur) for m in ("mul", "abs")]
            assert torch.allclose(got[0], mul.view(1)) and torch.allclose(got[1], absolute.view(1)), name


def test_model_heads_previous_token_rpe_and_theorem_4_1_induction_head_score_one_random_heads_do_not():
    gen = torch.Generator().manual_seed(2)
    d = 8
    cfg, params = ih2_construction(torch.eye(d, dtype=torch.float64) * 30, [40.0])
    tokens = repeated_random_tokens(6, 10, 2, gen, d=d).double()
    tokens = tokens / tokens.norm(dim=-1, keepdim=True)  # on the sphere x·x > x·y: the DP score peaks at the copy
    s = H.head_scores(cfg, params, tokens, period=10, rows="matched")
    assert float(s["previous_token"][0, 0, 0]) > 0.999  # layer 1: RPE with slope 40
    assert float(s["induction"][0, 1, 0]) > 0.99 and float(s["prefix_matching"][0, 1, 0]) > 0.9
    assert float(s["induction"][0, 0, 0]) < 0.05 and float(s["previous_token"][0, 1, 0]) < 0.2
    rand_cfg = tf.TransformerConfig(vocab=50, d_model=16, n_heads=4, init_std=0.3, slope_init=0.0)
    rand = tf.init_params(rand_cfg, 3, torch.Generator().manual_seed(3))
    scores = H.head_scores(rand_cfg, rand, repeated_random_tokens(6, 10, 2, gen, vocab=50), period=10)
    for name in ("previous_token", "induction", "prefix_matching"):
        assert float(scores[name].max()) < 0.5, name
    toks = repeated_random_tokens(6, 10, 2, gen, vocab=50)
    _, cache = tf.forward(rand_cfg, rand, toks.unsqueeze(0), keep=True)
    again = H.head_scores(rand_cfg, rand, toks, period=10, rows="matched", cache=cache)  # no second forward pass
    for name, value in H.head_scores(rand_cfg, rand, toks, period=10, rows="matched").items():
        assert torch.equal(again[name], value), name


def test_the_transformerlens_form_is_the_default_and_an_ideal_induction_head_scores_its_share_of_matched_rows():
    """rows="all" (TransformerLens): an ideal induction head on a sequence repeated twice attends nowhere useful in
    the first copy; with strictly causal heads every row attends somewhere except row 0, so mul = the share of
    attending rows that have a target."""
    tokens = repeated_random_tokens(3, 7, 2, torch.Generator().manual_seed(5), vocab=1000)
    det = H.detection_pattern(tokens, "induction")
    pattern = torch.softmax(
        torch.zeros(14, 14).masked_fill(~torch.ones(14, 14, dtype=torch.bool).tril(-1), -torch.inf), -1
    )
    pattern = torch.where(det.sum(-1, keepdim=True) > 0, _ideal(det), pattern.nan_to_num(0.0)).unsqueeze(1)
    assert torch.allclose(H.attention_score(pattern, det), torch.tensor([7 / 13]), atol=1e-6)
    assert torch.allclose(H.attention_score(pattern, det, rows="matched"), torch.ones(1), atol=1e-6)


def test_mul_is_the_plain_ratio_even_when_almost_nothing_is_left_and_nan_when_nothing_is():
    """All attention on key 0 but 1e-35 with exclude_bos: TransformerLens divides by the plain sum (1.0 here, 0 with
    a clamped denominator); with nothing left at all it is 0/0 = NaN, as there."""
    det = torch.zeros(1, 4, 4)
    det[0, 1:, 1] = 1
    pattern = torch.zeros(1, 1, 4, 4, dtype=torch.float64)
    pattern[..., 0] = 1.0
    pattern[0, 0, 2:, 1] = 1e-35
    assert float(H.attention_score(pattern, det, exclude_bos=True)) == 1.0
    pattern[0, 0, 2:, 1] = 0.0
    assert torch.isnan(H.attention_score(pattern, det, exclude_bos=True)).all()


def test_probe_distance_is_zero_for_a_linear_readout_and_near_one_for_noise():
    gen = torch.Generator().manual_seed(4)
    feats = torch.randn(2, 500, 8, generator=gen)
    y = feats @ torch.randn(8, 3, generator=gen)
    assert float(H.probe_distance(feats, y).max()) < 1e-12
    noise = H.probe_distance(feats, torch.randn(2, 500, 3, generator=gen))
    assert bool(((noise > 0.95) & (noise < 1)).all())  # ≈ 1 − D/N


def test_patch_targets_are_the_newest_first_windows():
    x = torch.arange(1.0, 7.0).view(1, 6, 1)
    t = patch_targets(x, 3)
    assert t.shape == (1, 4, 3) and t[0, 0].tolist() == [3.0, 2.0, 1.0] and t[0, -1].tolist() == [6.0, 5.0, 4.0]
