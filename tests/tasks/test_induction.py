import pytest
import torch

from inductionlab import rng
from inductionlab.config import ConfigError
from inductionlab.tasks import induction as ih
from inductionlab.tasks.mixed import MixedTarget, mixed_target, new_tokens


def _brute_force(x, w_star, n, g=None):
    """IH_n by the definition, one sequence and one key at a time (1-indexed positions as in eq. 6)."""
    B, L, d = x.shape
    out = torch.zeros(B, d, dtype=x.dtype)
    for b in range(B):
        X = lambda t: x[b, t - 1]  # noqa: E731
        vec = lambda i, j: torch.cat([X(t) for t in range(j, i - 1, -1)])  # noqa: E731 - newest first
        q = vec(L - n + 2, L)
        scores = torch.stack(
            [g(q, vec(s - n + 1, s - 1)) if g else q @ w_star @ vec(s - n + 1, s - 1) for s in range(n, L)]
        )
        w = torch.softmax(scores, 0)
        out[b] = sum(w[i] * X(s) for i, s in enumerate(range(n, L)))
    return out


@pytest.mark.parametrize("n, d", [(2, 1), (2, 3), (3, 2), (4, 1)])
def test_ih_n_matches_its_definition(n, d):
    g = torch.Generator().manual_seed(n * 10 + d)
    x = ih.sample_tokens((5, 9, d), "gaussian", g)
    w = torch.randn((n - 1) * d, (n - 1) * d, generator=g, dtype=torch.float64)
    assert torch.allclose(ih.induction_head(x, w, n), _brute_force(x, w, n), atol=1e-12)


def test_gih_with_rbf_matches_its_definition_and_ih2_matches_the_mixed_target():
    g = torch.Generator().manual_seed(0)
    x = ih.sample_tokens((4, 8, 2), "uniform", g)
    sim = ih.rbf(0.7, 2.0)
    want = _brute_force(x, None, 3, g=lambda q, k: 2.0 * torch.exp(-((q - k) ** 2).sum() / (2 * 0.49)))
    assert torch.allclose(ih.generalized_induction_head(x, 3, sim), want, atol=1e-12)
    assert float(x.abs().max()) <= 1
    L = 12
    target = MixedTarget.per_run([1.0], [0.49], L, dtype=torch.float64)
    tokens = new_tokens(1, L, 30, [rng.generator(3)], "gaussian", torch.float64)  # (1, L, B)
    ih_part = mixed_target(tokens, target)[0, 1] * 2  # 1/(1+α*) with α* = 1
    got = ih.induction_head(tokens[0].T.unsqueeze(-1), torch.tensor([[0.49**2]], dtype=torch.float64))
    assert torch.allclose(got[:, 0], ih_part, atol=1e-12)


def test_bad_inputs_are_reported():
    with pytest.raises(ValueError, match="L ≥ n \\+ 1"):
        ih.induction_head(torch.zeros(2, 3, 1), torch.eye(2), n=3)
    with pytest.raises(ValueError, match="2×2"):
        ih.induction_head(torch.zeros(2, 5, 1), torch.eye(3), n=3)
    with pytest.raises(ConfigError, match="task.L"):
        ih.InductionTaskConfig(n=4, L=4)
