import logging
import os

import pytest
import torch

from inductionlab import _runtime, rng
from inductionlab.models import toy
from inductionlab.tasks.mixed import MixedTarget, new_tokens
from inductionlab.train.toy_batches import make_batch


def _toy_args(runs: int, L: int, n: int):
    """Arguments of ``toy.straight_step`` at ``runs`` runs, sequence length ``L`` and ``n`` sequences."""
    target = MixedTarget.per_run([1.0 + r for r in range(runs)], [0.49 - 0.1 * r for r in range(runs)], L)
    batch = make_batch(new_tokens(runs, L, n, [rng.generator(s) for s in range(runs)], "gaussian"), target, "ideal")
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
    wrapped.fast = f  # stands in for the compiled function
    assert wrapped(1) == 1
    with pytest.raises(ValueError, match="negative"):
        wrapped(-1)
    assert wrapped.fast is f  # the function's own error is no compile failure


def test_a_wrong_compiled_result_falls_back_to_eager_with_one_warning(monkeypatch, caplog):
    """A compiled step planted to return twice the right numbers: its first call is caught by the eager check, the
    eager numbers come back, one warning names the path, and the compiled function is never called again."""
    calls = []

    def wrong_compile(fn, **kwargs):
        def run(*args):
            calls.append(args)
            return tuple(out * 2 for out in fn(*args))

        return run

    monkeypatch.setattr(torch, "compile", wrong_compile)
    step = _runtime.Compiled(toy.straight_step)
    with caplog.at_level(logging.WARNING, logger="inductionlab._runtime"):
        for runs, L, n in ((2, 10, 64), (1, 20, 48)):
            for args in _toy_args(runs, L, n) * 2:
                for got, want in zip(step(*args), toy.straight_step(*args)):
                    assert torch.equal(got, want)
    assert len(calls) == 1 and step.fast is None
    assert len(caplog.records) == 1 and "torch.compile of straight_step disagrees with eager" in caplog.text


def test_the_check_runs_at_each_new_signature_only():
    """Eager runs beside the fast path at the first call of each shape, dtype or Python value, not after."""
    eager = []

    def fn(a, flag):
        eager.append(a.shape)
        return a + 1 if flag else a - 1

    checked = _runtime.Checked(lambda a, flag: a + 1 if flag else a - 1, fn, "test path")
    for shape, flag in ((3,), True), ((3,), True), ((4,), True), ((3,), False), ((4,), True):
        checked(torch.zeros(shape), flag)
    assert len(eager) == 3 and checked.fast is not None


def test_a_fast_path_that_changes_its_inputs_wrongly_is_undone(caplog):
    """An in-place change is part of the result: a wrong one is undone and the eager change made instead."""

    def fn(a):
        a.mul_(2)
        return a.sum()

    def fast(a):
        a.mul_(3)
        return a.sum() * 2 / 3

    a = torch.arange(4.0)
    checked = _runtime.Checked(fast, fn, "in-place path")
    with caplog.at_level(logging.WARNING, logger="inductionlab._runtime"):
        assert float(checked(a)) == 12.0 and a.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert "in-place path disagrees" in caplog.text and "argument[0]" in caplog.text


def test_rounding_within_the_tolerance_is_no_disagreement():
    """float32 reduction-order noise passes; an entry off by 1e-3 relative, a NaN or an inf for a number fails."""
    want = torch.tensor([1.0, -2.0, 1e-9, float("inf")])
    assert _runtime._disagreement(want * (1 + 3e-7), want, "r") is None
    assert _runtime._disagreement(want + torch.tensor([0.0, 0.0, 1e-6, 0.0]), want, "r") is None  # atol·max|eager|
    for bad in (1.001, float("nan")):
        assert _runtime._disagreement(want * torch.tensor([bad, 1, 1, 1]), want, "r") is not None
    assert _runtime._disagreement(torch.tensor([1.0, -2.0, 1e-9, 5.0]), want, "r") is not None


def test_each_cpu_kernel_path_gets_its_own_inductor_cache(monkeypatch):
    """Inductor's cache does not key on ATEN_CPU_CAPABILITY: an entry cached on the AVX-512 path and hit on the AVX2
    one runs C++ written for 16-wide vectors with 8-wide ones (wrong numbers, a corrupted heap: torch 2.13,
    docs/conventions.md#portable-numbers), so each path gets a folder; a folder the user chose is left alone, and
    torch's default folder, which ``import torch._dynamo`` writes into the environment (``transformers`` imports it
    when it loads GPT-2, so after the hf-induction run), counts as not chosen."""
    default = _runtime._torch_default_cache_dir()
    folders = []
    for env in ({}, {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}):
        for preset in (None, default):
            for key in (
                "TORCHINDUCTOR_CACHE_DIR",
                "ATEN_CPU_CAPABILITY",
                "MKL_ENABLE_INSTRUCTIONS",
                "ONEDNN_MAX_CPU_ISA",
            ):
                monkeypatch.delenv(key, raising=False)
            for key, value in env.items() | ({"TORCHINDUCTOR_CACHE_DIR": preset}.items() if preset else set()):
                monkeypatch.setenv(key, value)
            _runtime._separate_inductor_cache()
            folders.append(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    assert folders[0] == folders[1] != folders[2] == folders[3] and all("inductionlab-" in f for f in folders)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/mine")
    _runtime._separate_inductor_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/somewhere/mine"


def test_importing_dynamo_writes_the_default_folder_that_is_then_separated(monkeypatch):
    """The order of the hf-induction golden then the compiled step: torch._dynamo imported first (its import sets
    TORCHINDUCTOR_CACHE_DIR to torch's default in a fresh process), then the compiled step's own folder."""
    import subprocess
    import sys

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    code = (
        "import os, torch._dynamo; from inductionlab import _runtime; from inductionlab.models import toy;"
        "first = os.environ.get('TORCHINDUCTOR_CACHE_DIR'); _runtime.compiled(toy.straight_step);"
        "print(first == _runtime._torch_default_cache_dir(), os.environ['TORCHINDUCTOR_CACHE_DIR'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True" and os.path.basename(out[1]).startswith("inductionlab-")
