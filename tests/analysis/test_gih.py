import math

import torch

from inductionlab.analysis.gih import argmax_agreement, gih_predictor


def test_gih_counts_tokens_after_matching_contexts_and_falls_back_to_unigram():
    x = torch.tensor([[0, 1, 2, 0, 1, 1, 0, 1]])  # query context (x_{L−1}, x_L) = (0, 1): followed by x_2, x_5
    torch.testing.assert_close(gih_predictor(x, (1, 2), 3), torch.tensor([[0.0, 0.5, 0.5]], dtype=torch.float64))
    a = 2.0
    w = torch.tensor([1, 1, math.e**a, 1, 1, math.e**a, 1, 1], dtype=torch.float64)  # matches at 0-based l = 2, 5
    want = torch.stack([(w * (x[0] == k)).sum() for k in range(3)]) / w.sum()
    torch.testing.assert_close(gih_predictor(x, (1, 2), 3, a)[0], want)
    never = torch.tensor([[0, 0, 0, 1, 2]])  # context (1, 2) never seen: unigram
    torch.testing.assert_close(gih_predictor(never, (1, 2), 3), torch.tensor([[0.6, 0.2, 0.2]], dtype=torch.float64))


def test_argmax_agreement_counts_ties_in_the_reference_as_agreement():
    y = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]])
    ref = torch.tensor([[0.5, 0.5, 0.0], [0.9, 0.1, 0.0], [0.0, 0.2, 0.8]])
    assert float(argmax_agreement(y, ref)) == 2 / 3
