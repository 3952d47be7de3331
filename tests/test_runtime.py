import logging
import os

import pytest
import torch

from inductionlab import _runtime
from inductionlab.models import toy
from inductionlab.tasks.mixed import MixedTarget, make_generators, new_tokens
from inductionlab.train.toy_batches import make_batch


def _toy_args(runs: int, L: int, n: int):
    """Arguments of ``toy.straight_step`` at ``runs`` runs, sequence length ``L`` and ``n`` sequences."""
    target = MixedTarget.per_run([1.0 + r for r in range(runs)], [0.49 - 0.1 * r for r in range(runs)], L)
    batch = make_batch(new_tokens(runs, L, n, make_generators(list(range(runs))), "gaussian"), target, "ideal")
    theta = torch.linspace(-0.3, 0.8, 6 * runs).reshape(runs, 6)
    return (theta, batch.x, batch.targets, False, batch.keys, batch.scores), (theta, batch.x, batch.targets, True)


def test_compiled_straight_step_equals_eager_at_several_shapes_in_one_process(caplog):
    """Two shapes, then a third (each compiled statically): the same numbers as eager, and no fallback."""
    step = _runtime.compiled(toy.straight_step)
    with caplog.at_level(logging.WARNING):
        for runs, L, n in ((2, 10, 64), (3, 12, 32), (1, 20, 48)):
            for args in _toy_args(runs, L, n):
                for got, want in zip(step(*args), toy.straight_step(*args)):
                    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)  # float32: |Δ| ≤ 3e-8 measured
    assert "running eagerly" not in caplog.text


def test_a_compile_failure_at_a_later_call_falls_back_to_eager(monkeypatch, caplog):
    calls = []

    def flaky_compile(fn, **kwargs):
        def run(*args):
            calls.append(args)
            if len(calls) > 1:  # compiles at the first shape, fails at the second
                raise AssertionError("sources must not be empty for symbol s21")
            return fn(*args)

        return run

    monkeypatch.setattr(torch, "compile", flaky_compile)
    wrapped = _runtime.Compiled(lambda a: a + 1)
    with caplog.at_level(logging.WARNING):
        assert [wrapped(1), wrapped(2), wrapped(3)] == [2, 3, 4]
    assert len(calls) == 2 and caplog.text.count("running eagerly") == 1


def test_compile_failure_falls_back_to_eager_with_a_warning(monkeypatch, caplog):
    def broken_compile(fn, **kwargs):
        def run(*args):
            raise RuntimeError("no C++ compiler")

        return run

    monkeypatch.setattr(torch, "compile", broken_compile)
    wrapped = _runtime.Compiled(lambda a: a + 1)
    with caplog.at_level(logging.WARNING):
        assert wrapped(1) == 2 and wrapped(2) == 3
    assert "no C++ compiler" in caplog.text and caplog.text.count("running eagerly") == 1


def test_errors_of_the_function_itself_are_not_hidden():
    def f(a):
        if a < 0:
            raise ValueError("negative")
        return a

    wrapped = _runtime.Compiled(f)
    wrapped._compiled = f  # stands in for the compiled function
    assert wrapped(1) == 1
    with pytest.raises(ValueError, match="negative"):
        wrapped(-1)
    assert wrapped._compiled is f  # the function's own error is no compile failure


def test_each_cpu_kernel_path_gets_its_own_inductor_cache(monkeypatch):
    """Inductor's cache does not key on ATEN_CPU_CAPABILITY: a kernel cached on the AVX2 path and loaded on the
    AVX-512 one corrupted the heap (torch 2.13, docs/conventions.md#portable-numbers), so each path gets a folder;
    a folder the user chose is left alone."""
    folders = []
    for env in ({}, {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}):
        for key in ("TORCHINDUCTOR_CACHE_DIR", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA"):
            monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        _runtime._separate_inductor_cache()
        folders.append(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    assert folders[0] != folders[1] and all("inductionlab-" in f for f in folders)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/mine")
    _runtime._separate_inductor_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/somewhere/mine"
