import numpy as np
import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.tasks import markov


def _transition_counts(tokens, parents, d, extra_lag=None):
    """counts[z, k] (or counts[z, j, k] split by the token at ``extra_lag``) over all positions with parents."""
    z = markov.parent_states(tokens, parents, d)
    keep = z >= 0
    if extra_lag is not None:
        keep[:, :extra_lag] = False
    zs, ks = z[keep], tokens[keep]
    if extra_lag is None:
        return torch.zeros(d ** len(parents), d).index_put_((zs, ks), torch.ones(len(zs)), accumulate=True)
    js = torch.roll(tokens, extra_lag, dims=1)[keep]
    return torch.zeros(d ** len(parents), d, d).index_put_((zs, js, ks), torch.ones(len(zs)), accumulate=True)


@pytest.mark.parametrize("parents", [(1, 2), (1, 3)])
def test_empirical_transitions_match_each_sequences_kernel(parents):
    cfg = markov.MarkovConfig(vocab_size=3, parents=parents, L=60_000, alpha=1.0)
    tokens, kernels = markov.sample(cfg, 2, np.random.default_rng(0))
    assert tokens.shape == (2, 60_001) and kernels.shape == (2, 9, 3)
    for b in range(2):
        counts = _transition_counts(tokens[b : b + 1], parents, 3)
        n = counts.sum(-1, keepdim=True)
        emp = counts / n
        tol = 4 * (0.25 / n).sqrt() + 1e-3  # four binomial standard deviations
        visited = n.squeeze(-1) > 200
        assert int(visited.sum()) >= 6
        assert bool(((emp - kernels[b].float()).abs() <= tol)[visited].all())


def test_non_parents_carry_no_information_beyond_the_parents():
    """pa = {−1, −3}: given (x_{l−1}, x_{l−3}), the next-token law does not depend on x_{l−2}."""
    cfg = markov.MarkovConfig(vocab_size=3, parents=(1, 3), L=200_000, alpha=1.0)
    tokens, kernels = markov.sample(cfg, 1, np.random.default_rng(1))
    counts = _transition_counts(tokens, (1, 3), 3, extra_lag=2)  # (z, x_{l−2}, k)
    n = counts.sum(-1, keepdim=True)
    emp = counts / n
    ok = n.squeeze(-1) > 500
    tol = 4 * (0.25 / n).sqrt()
    assert bool(((emp - kernels[0].float().unsqueeze(1)).abs() <= tol)[ok].all())
    # while x_{l−1} itself does carry information: splitting by the true parent changes the law
    fake = _transition_counts(tokens, (3,), 3, extra_lag=1)  # (x_{l−3}, x_{l−1}, k)
    spread = (fake / fake.sum(-1, keepdim=True)).std(1).max()
    assert float(spread) > 0.05


def test_bayes_and_ngram_estimators_match_a_brute_force_count():
    cfg = markov.MarkovConfig(vocab_size=4, parents=(1, 2), L=30, alpha=0.1)
    tokens, _ = markov.sample(cfg, 50, np.random.default_rng(2))
    x = tokens[:, : cfg.L]
    bayes = markov.bayes_predictor(cfg, x)
    bigram = markov.ngram_estimator(x, (1,), 4, 0.5)
    unigram = markov.ngram_estimator(x, (), 4, 0.5)
    for b in range(50):
        s = x[b].tolist()
        q = (s[-1], s[-2])
        counts = np.zeros(4)
        for l in range(2, cfg.L):
            if (s[l - 1], s[l - 2]) == q:
                counts[s[l]] += 1
        assert np.allclose(bayes[b].numpy(), (counts + 0.1) / (counts.sum() + 0.4))
        big = np.bincount([s[l] for l in range(1, cfg.L) if s[l - 1] == s[-1]], minlength=4)
        assert np.allclose(bigram[b].numpy(), (big + 0.5) / (big.sum() + 2.0))
        assert np.allclose(unigram[b].numpy(), (np.bincount(s, minlength=4) + 0.5) / (cfg.L + 2.0))
    assert torch.allclose(bayes.sum(-1), torch.ones(50, dtype=torch.float64))


def test_bayes_predictor_beats_bigram_and_unigram_in_log_loss():
    cfg = markov.MarkovConfig()
    tokens, _ = markov.sample(cfg, 4000, np.random.default_rng(3))
    x, y = tokens[:, : cfg.L], tokens[:, cfg.L]

    def nll(p):
        return float(-p.gather(1, y.unsqueeze(1)).log().mean())

    bayes, bigram, unigram = (
        nll(markov.bayes_predictor(cfg, x)),
        nll(markov.ngram_estimator(x, (1,), 3, 0.1)),
        nll(markov.ngram_estimator(x, (), 3, 0.1)),
    )
    assert bayes < bigram < unigram


def test_generation_is_seeded_and_validated():
    cfg = markov.MarkovConfig()
    a, _ = markov.sample(cfg, 100, np.random.default_rng(5))
    b, _ = markov.sample(cfg, 100, np.random.default_rng(5))
    assert torch.equal(a, b) and int(a.max()) <= 2 and int(a.min()) >= 0
    train, val = markov.train_val_split(a, 10, torch.Generator().manual_seed(0))
    assert train.shape == (90, 101) and val.shape == (10, 101)
    assert sorted(map(tuple, torch.cat([train, val]).tolist())) == sorted(map(tuple, a.tolist()))
    with pytest.raises(ConfigError, match="strictly increasing"):
        markov.MarkovConfig(parents=(2, 1))
    with pytest.raises(ConfigError, match="task.L"):
        markov.MarkovConfig(parents=(1, 5), L=5)
