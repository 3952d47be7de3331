import logging

import torch

from inductionlab import _runtime
from inductionlab.models import toy
from inductionlab.tasks.mixed import MixedTarget, make_generators, new_tokens
from inductionlab.train.toy_batches import make_batch


def test_compiled_straight_step_equals_eager():
    target = MixedTarget.per_run([1.0, 2.0], [0.49, 0.3], 10)
    x = new_tokens(2, 10, 64, make_generators([0, 1]), "gaussian")
    batch = make_batch(x, target, "ideal")
    theta = torch.tensor([[0.0, 0.3, 0.2, 0.4, 0.7, 0.6], [0.0, -0.1, 0.5, 0.2, -0.3, 0.8]])
    for args in (
        (theta, batch.x, batch.targets, False, batch.keys, batch.scores),
        (theta, batch.x, batch.targets, True),
    ):
        for got, want in zip(_runtime.compiled(toy.straight_step)(*args), toy.straight_step(*args)):
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-7)


def test_compile_failure_falls_back_to_eager_with_a_warning(monkeypatch, caplog):
    def broken_compile(fn):
        def run(*args):
            raise RuntimeError("no C++ compiler")

        return run

    monkeypatch.setattr(torch, "compile", broken_compile)
    wrapped = _runtime.Compiled(lambda a: a + 1)
    with caplog.at_level(logging.WARNING):
        assert wrapped(1) == 2 and wrapped(2) == 3
    assert "no C++ compiler" in caplog.text and caplog.text.count("running eagerly") == 1


def test_errors_of_the_function_itself_are_not_hidden_after_the_first_call():
    def f(a):
        if a < 0:
            raise ValueError("negative")
        return a

    wrapped = _runtime.Compiled(f)
    wrapped._compiled = f  # stands in for the compiled function
    assert wrapped(1) == 1
    try:
        wrapped(-1)
    except ValueError as err:
        assert "negative" in str(err)
    else:
        raise AssertionError("the error was swallowed")
