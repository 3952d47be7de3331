"""The benchmark scripts still run against the package as it is (their numbers live in benchmarks/RESULTS.md; no
timing is asserted): each imports, and the fast one runs to its table."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", sorted(BENCH.glob("bench_*.py")), ids=lambda p: p.stem)
def test_each_benchmark_imports_and_has_a_main(path):
    assert callable(_load(path).main)


def test_the_flow_benchmark_runs_to_its_table(capsys):
    _load(BENCH / "bench_flow.py").main()
    out = capsys.readouterr().out
    assert "one GF solve" in out and "plateau-scaling GF part (12 solves)" in out
