import math

import torch

from inductionlab import rng
from inductionlab.tasks.mixed import MixedTarget, mixed_target, new_tokens


def test_gaussian_and_boolean_token_statistics():
    x = new_tokens(2, 10, 20_000, [rng.generator(1), rng.generator(2)], "gaussian")
    assert abs(float(x.mean())) < 0.01 and abs(float(x.var()) - 1) < 0.01
    b = new_tokens(1, 10, 20_000, [rng.generator(3)], "boolean")
    assert set(b.unique().tolist()) == {-1.0, 1.0} and abs(float(b.mean())) < 0.02


def test_per_run_generators_make_runs_independent_of_batching():
    both = new_tokens(2, 6, 50, [rng.generator(7), rng.generator(8)], "gaussian")
    alone = new_tokens(1, 6, 50, [rng.generator(8)], "gaussian")
    assert torch.equal(both[1], alone[0])


def test_target_matches_a_direct_loop_over_the_definition():
    L, B = 7, 5
    target = MixedTarget.per_run([1.5, 0.5], [0.49, 0.3], L, dtype=torch.float64)
    x = new_tokens(2, L, B, [rng.generator(0), rng.generator(1)], "gaussian", torch.float64)
    got = mixed_target(x, target)
    for r, (a, w) in enumerate([(1.5, 0.49), (0.5, 0.3)]):
        for b in range(B):
            xs = x[r, :, b].tolist()  # xs[s-1] = x_s
            logits = [w * w * xs[L - 1] * xs[s - 2] for s in range(2, L)]
            z = sum(math.exp(v) for v in logits)
            ih = sum(xs[s - 1] * math.exp(lg) / z for s, lg in zip(range(2, L), logits))
            assert math.isclose(float(got[r, 0, b]), a / (1 + a) * xs[L - 3], rel_tol=1e-12)
            assert math.isclose(float(got[r, 1, b]), ih / (1 + a), rel_tol=1e-12)


def test_large_logits_take_the_shifted_softmax_path():
    L = 6
    target = MixedTarget.per_run([1.0], [5.0], L, dtype=torch.float64)  # w*² = 25: exp2 would overflow unshifted
    x = 4 * new_tokens(1, L, 100, [rng.generator(0)], "gaussian", torch.float64)
    got = mixed_target(x, target)
    scores = 25 * x[:, L - 1 : L] * x[:, 0 : L - 2]
    want = (torch.softmax(scores, 1) * x[:, 1 : L - 1]).sum(1) / 2
    assert torch.isfinite(got).all() and torch.allclose(got[:, 1], want)
