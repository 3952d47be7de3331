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


def test_the_page_cost_prices_a_draw_at_its_main_run_and_a_control_at_its_scaled_estimate(tmp_path):
    """Each experiment timed at 2 core-minutes: the main column is 2 each, the draws 2 × (draws − 1), and the
    controls the sum of their schedule estimates × 2 / the experiment's own estimate."""
    from inductionlab import experiments, reproduce

    page_cost = _load(BENCH / "page_cost.py")
    names = ("plateau-scaling", "markov-full", "approx-ih2")  # 4, 1 and 4 draws; controls with and without a wall
    jobs = reproduce.plan("all", "full", tmp_path, only=names)[0]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text('{"wall_seconds": 60.0, "threads": 2}')
    df = page_cost.predict(page_cost.measured_minutes(tmp_path), only=names)
    assert set(df.index) == set(names) and (df["main"] == 2.0).all() and df.loc["markov-full", "draws"] == 0
    for name in names:
        assert df.loc[name, "draws"] == pytest.approx(2.0 * (experiments.get(name).draws - 1))
        planned = [j.overrides["control"] for j in jobs if j.experiment == name and "control" in j.overrides]
        controls = {c.name: c for c in experiments.get(name).controls}
        estimates = [reproduce.expected_minutes(name, controls[c].preset, controls[c].wall) for c in planned]
        assert planned and df.loc[name, "controls"] == pytest.approx(
            sum(estimates) * 2.0 / reproduce.expected_minutes(name, None)
        )
    with pytest.raises(SystemExit, match="no timed default run of: approx-ih2"):
        page_cost.predict({"plateau-scaling": 1.0, "markov-full": 1.0}, only=names)


def test_the_ledger_cost_counts_the_current_entries_that_the_page_counts(monkeypatch):
    """benchmarks/ledger_cost.py over the committed ledger: its current entries are the page check's, by role."""
    from inductionlab import ledger_page

    monkeypatch.syspath_prepend(str(BENCH))  # it imports page_cost beside it, as when run as a script
    monkeypatch.delenv("INDUCTIONLAB_DATA", raising=False)
    ledger = Path(__file__).parents[1] / "results"
    df, states = _load(BENCH / "ledger_cost.py").filled(ledger)
    now, _ = ledger_page.check(ledger, ledger.parent / "docs" / "report.html", "")
    assert df["jobs"].sum() == states["current"] == now["current"]
    assert states["stale"] == now["stale"] and states["missing"] == now["missing"]
    assert (df[["main", "draws", "controls", "calibration"]] >= 0).all().all()
