"""``inductionlab reproduce --budget smoke``: the whole path, and the page as its readers see it."""

import base64
import dataclasses
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import pandas as pd
import pytest

from inductionlab import experiments
from inductionlab.cli import main
from inductionlab.config import ConfigError, to_dict
from inductionlab.reproduce import controls_of, exit_status, experiments_for, judge_all, plan, render
from inductionlab.tasks.text import ENV
from tests.conftest import write_corpus

ALL_IDS = [c.id for e in experiments.REGISTRY.values() for c in e.claims]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    data = write_corpus(out.parent / "corpus")
    code = main(["reproduce", "--budget", "smoke", "--out", str(out / "r"), "--data", str(data)])
    return out / "r", code


def test_smoke_runs_every_experiment_and_judges_nothing(smoke):
    out, code = smoke
    table = pd.read_parquet(out / "claims.parquet")
    assert code == 0
    assert sorted(table.id) == sorted(ALL_IDS)
    assert set(table.status) <= {"smoke, not judged", "not judged at this scale"}
    assert all(r.startswith("needs ") for r in table[table.status == "not judged at this scale"].reason)
    assert {"measured", "expected", "test", "status", "reason", "run_dir"} <= set(table.columns)


def test_the_report_is_one_self_contained_page_with_every_claim_once(smoke):
    out, _ = smoke
    page = (out / "report.html").read_text(encoding="utf-8")
    for claim_id in ALL_IDS:
        assert len(re.findall(rf">{re.escape(claim_id)} ·", page)) == 1, claim_id
    assert not re.search(r"https?://|<script|<link|src=\"(?!data:)", page), "the page must need no network"
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    blocks = pd.read_parquet(out / "claims.parquet").groupby(["paper", "experiment"]).run_dir.first()
    on_disk = [p for (_, _), name in blocks.items() for p in (out / name).glob("*.png")]  # once per paper's block
    assert len(images) == len(on_disk) >= len(experiments_for("all"))
    for data in images:
        pixels = mpimg.imread(io.BytesIO(base64.b64decode(data)), format="png")
        assert pixels.ndim == 3 and pixels.shape[0] > 100
    for section in ("Wang, Yu, E &amp; Wu", "Chen, Sheen, Wang &amp; Yang", "Ren, Wang &amp; Lee"):
        assert section in page
    observed = sum(c.observation for e in experiments.REGISTRY.values() for c in e.claims)
    assert f"{len(ALL_IDS) - observed} claims:" in page and "torch" in page and "wall time" in page  # the papers'
    assert f"{observed} claims:" in page and 'id="observations"' in page  # the project's own, counted apart
    runs = sum(json.loads(p.read_text())["wall_seconds"] for p in out.glob("*/summary.json"))
    assert f"the runs' own wall times add up to {runs / 60:.1f} min" in page


def test_report_rerenders_from_the_saved_runs_without_running_anything(smoke, capsys):
    out, _ = smoke
    before = pd.read_parquet(out / "claims.parquet")
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(out / "claims.parquet"), before)
    assert "smoke, not judged" in capsys.readouterr().out


def test_a_second_reproduce_reuses_the_finished_runs(smoke):
    out, _ = smoke
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("*/summary.json")}
    assert main(["reproduce", "--budget", "smoke", "--paper", "ren", "--out", str(out)]) == 0
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())


def test_text_experiments_without_data_are_not_run_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    jobs, skipped = plan("wang", "smoke", tmp_path)
    assert set(skipped) == {"wikitext", "repeated-text"} and "--data DIR" in skipped["wikitext"]
    assert {j.experiment for j in jobs} == set(experiments_for("wang")) - set(skipped)


def test_every_experiment_that_reads_text_declares_its_data_key(monkeypatch):
    """`reproduce --data DIR` reaches a text experiment only through ``Experiment.data`` (hf-induction's calibration
    failed for want of it with --data given and $INDUCTIONLAB_DATA unset)."""
    from inductionlab.config import flatten
    from inductionlab.tasks.text import TextConfig

    for name, exp in experiments.REGISTRY.items():
        reads = [f for f in dataclasses.fields(exp.config) if isinstance(getattr(exp.config, f.name), TextConfig)]
        declared = [f"{f.name}.path" for f in reads]
        assert exp.data in (declared or [""]), (name, exp.data, declared)
        assert not exp.data or exp.data in flatten(exp.config), name
    monkeypatch.delenv(ENV, raising=False)
    _, skipped = plan("olsson", "smoke", Path("out"), data="")  # without data it is skipped, with the reason
    assert "--data DIR" in skipped["hf-induction"]


def test_bad_paper_or_budget_is_one_clear_line(tmp_path, capsys):
    assert main(["reproduce", "--paper", "nobody", "--out", str(tmp_path)]) == 2
    assert "--paper: unknown paper 'nobody'; allowed: all, wang, chen, ren" in capsys.readouterr().err
    assert main(["reproduce", "--budget", "smoke", "--workers", "0", "--out", str(tmp_path)]) == 2
    assert "--workers: must be ≥ 1" in capsys.readouterr().err


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
)
def test_the_report_renders_in_headless_chromium(smoke, tmp_path):
    out, _ = smoke
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--screenshot={shot}",
            "--window-size=1400,2000",
            (out / "report.html").resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (2000, 1400)
    assert pixels[..., :3].std() > 0.05, "the screenshot is blank"


def test_a_failed_run_leaves_its_claims_not_run_with_the_error(tmp_path):
    (tmp_path / "reproduce.json").write_text(
        json.dumps({"paper": "all", "budget": "full", "experiments": ["approx-ih2"]})
    )
    (tmp_path / "manifest.jsonl").write_text(
        json.dumps({"hash": "h", "dir": "approx-ih2", "status": "failed", "error": "RuntimeError: boom"}) + "\n"
    )
    table = judge_all(tmp_path)
    assert len(table) == len(experiments.get("approx-ih2").claims)
    assert set(table.status) == {"not run"} and set(table.reason) == {"the run failed: RuntimeError: boom"}
    assert exit_status(table) == 0
    assert exit_status(table.assign(status="failed")) == 1


def test_controls_are_planned_at_their_own_preset_and_only_picks_experiments(tmp_path):
    jobs, _ = plan("wang", "quick", tmp_path, only=("lazy-to-rich",))
    jobs = [j for j in jobs if "draw" not in j.overrides]  # the data draws: test_a_stochastic_experiment_…
    controls = {c.name: c for c in experiments.get("lazy-to-rich").controls}
    assert [j.experiment for j in jobs] == ["lazy-to-rich"] * (1 + len(controls))
    assert len([j for j in jobs if "control" not in j.overrides]) == 1
    for job in [j for j in jobs if "control" in j.overrides]:  # longest first: a control may come before the run
        control = controls[job.overrides["control"]]
        assert job.dir.endswith(f"lazy-to-rich@{control.name}")
        expected = experiments.configure("lazy-to-rich", preset=control.preset, overrides=dict(control.overrides))
        assert job.config == to_dict(expected)
    assert [j.experiment for j in plan("wang", "smoke", tmp_path, only=("lazy-to-rich",))[0]] == ["lazy-to-rich"]
    with pytest.raises(ConfigError, match="--only: markov-mi has no claim of --paper wang"):
        plan("wang", "quick", tmp_path, only=("markov-mi",))
    with pytest.raises(ConfigError, match="unknown experiment 'nope'"):
        plan("all", "quick", tmp_path, only=("nope",))


def test_a_control_whose_claims_all_need_a_gpu_is_not_run_on_a_cpu_page(tmp_path):
    """wikitext's adam control is named only by a claim that needs the paper preset's GPU: a CPU page does not judge
    that claim, so it does not run the control, and the claim's row says why (docs/conventions.md#controls)."""
    needs = {c.control for c in experiments.get("wikitext").claims if c.control and c.needs}
    judged = {c.control for c in experiments.get("wikitext").claims if c.control and not c.needs}
    assert "adam" in needs - judged and "shuffled" in judged
    jobs, _ = plan("wang", "full", tmp_path, data=str(write_corpus(tmp_path / "corpus")), only=("wikitext",))
    assert {j.overrides.get("control") for j in jobs} == {None, *judged}
    assert set(controls_of("wikitext", gpu=True)) == needs | judged  # a page whose run has a GPU runs them all


def test_a_control_that_passes_its_claims_check_is_shown_as_such(tmp_path):
    """judge_all and the page on hand-written runs: a control rejects or accepts by the claim's own test."""
    claim = next(c for c in experiments.get("lazy-to-rich").claims if c.id == "wang-fig2-wkq")
    (tmp_path / "lazy-to-rich").mkdir()
    (tmp_path / f"lazy-to-rich@{claim.control}").mkdir()
    info = {"paper": "wang", "budget": "full", "experiments": ["lazy-to-rich"], "dirs": {}, "skipped": {}}
    info["controls"] = {f"lazy-to-rich@{claim.control}": f"lazy-to-rich@{claim.control}"}
    info["draws"] = {"lazy-to-rich": [f"lazy-to-rich.draw-{i}" for i in (1, 2, 3)]}
    (tmp_path / "reproduce.json").write_text(json.dumps(info))
    good = {"final": {"w_KQ": 0.49}, "T_I": 0.1, "T_50": 1.0}
    for run in ("lazy-to-rich", *info["draws"]["lazy-to-rich"]):
        (tmp_path / run).mkdir(exist_ok=True)
        (tmp_path / run / "summary.json").write_text(json.dumps(good))
    for broken, verdict in ((0.01, "rejects"), (0.49, "accepts")):
        (tmp_path / f"lazy-to-rich@{claim.control}" / "summary.json").write_text(
            json.dumps(good | {"final": {"w_KQ": broken}})
        )
        row = judge_all(tmp_path).set_index("id").loc[claim.id]
        earned = "passed" if verdict == "rejects" else "unearned"  # a pass stands only where its control rejects
        assert row.status == earned and row.control_status == verdict and row.control_measured_text == f"{broken:.4g}"
    table = render(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert f'href="#claim-{claim.id}"' in page and f'id="claim-{claim.id}"' in page and ">accepts<" in page
    assert f"{int((table.control_status == 'rejects').sum())} reject the claim's check on a defined value" in page


def test_the_longest_jobs_are_scheduled_first(tmp_path):
    from inductionlab.reproduce import expected_minutes

    jobs, _ = plan("all", "full", tmp_path)
    costs = [expected_minutes(j.experiment, *_preset_and_wall(j)) for j in jobs]
    assert costs == sorted(costs, reverse=True) and costs[0] >= 10
    assert expected_minutes("heads-dims", "quick") == 1.0
    assert expected_minutes("approx-ih2", None) == pytest.approx(0.5)  # "~30 s"
    assert expected_minutes("interventions", "quick", "~5 min") == 5.0  # a control's own wall time


def _preset_and_wall(job):
    if "control" not in job.overrides:
        return None, ""
    control = {c.name: c for c in experiments.get(job.experiment).controls}[job.overrides["control"]]
    return control.preset, control.wall


def test_a_stochastic_experiment_runs_at_its_draws_and_is_judged_over_them(tmp_path):
    """Draw i shifts the seeds by i; every claim of the experiment is judged on the mean over the draws, a flag
    on every draw, and a draw not finished leaves it undefined (docs/conventions.md#claims)."""
    name = "scb-convergence"
    n = experiments.get(name).draws
    assert n >= 4
    jobs, _ = plan("ren", "quick", tmp_path, only=(name,))
    draws = [j for j in jobs if "draw" in j.overrides and "control" not in j.overrides]  # a control's: below
    draws = sorted(draws, key=lambda j: int(j.overrides["draw"]))
    first = experiments.get(name).judged_seed or 0  # a moved protocol's judged seeds (docs/conventions.md#calibration)
    assert [list(j.config["seeds"]) for j in draws] == [[first + i] for i in range(1, n)]
    assert [j.dir.rsplit("/", 1)[1] for j in draws] == [f"{name}.draw-{i}" for i in range(1, n)]
    assert not [j for j in plan("ren", "smoke", tmp_path, only=(name,))[0] if "draw" in j.overrides]
    claim = next(c for c in experiments.get(name).claims if c.id == "ren-fig1-recovers")
    assert claim.seeds == n and not claim.over
    info = {"paper": "ren", "budget": "full", "experiments": [name], "dirs": {}, "skipped": {}, "controls": {}}
    info["draws"] = {name: [f"{name}.draw-{i}" for i in range(1, n)]}
    (tmp_path / "reproduce.json").write_text(json.dumps(info))

    def write(dir_name, value):
        (tmp_path / dir_name).mkdir(exist_ok=True)
        summary = {}
        node = summary
        parts = claim.key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
        (tmp_path / dir_name / "summary.json").write_text(json.dumps(summary))

    lo, hi = claim.test.lo, claim.test.hi
    good = hi / 2 if hi is not None else lo * 2
    bad = hi * 3 if hi is not None else lo / 3
    for i in range(n - 1):
        write(name if i == 0 else f"{name}.draw-{i}", good)
    row = judge_all(tmp_path).set_index("id").loc[claim.id]
    assert row.status == "undefined" and f"{n - 1} seeds" in row.reason  # the last draw has not finished
    write(f"{name}.draw-{n - 1}", good)
    row = judge_all(tmp_path).set_index("id").loc[claim.id]
    # its control did not run here: the pass is not shown able to fail
    assert row.status == "unearned" and "did not run" in row.reason
    assert row.n_seeds == n and row.measured == pytest.approx(good)
    write(f"{name}.draw-{n - 1}", bad * 10 * n)  # one draw far off moves the mean
    assert judge_all(tmp_path).set_index("id").loc[claim.id].status == "failed"


def _smoke_summary(out, *executor):
    argv = ["reproduce", "--budget", "smoke", "--paper", "chen", "--only", "markov-mi", "--out", str(out)]
    argv += ["--threads", "1"]  # the same threads on both executors: the same numbers
    assert main([*argv, *executor]) == 0
    summary = json.loads((out / "markov-mi" / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in ("wall_seconds", "profile")}


def test_reproduce_through_submitit_gives_the_summary_of_a_local_reproduce(tmp_path):
    on_submitit = _smoke_summary(tmp_path / "sub", "--executor", "submitit-local", "--slurm-timeout-min", "5")
    assert list((tmp_path / "sub" / "submitit").glob("*_result.pkl"))  # the job ran in a submitit process
    assert on_submitit == _smoke_summary(tmp_path / "local")


def test_a_slurm_option_without_its_executor_is_refused_before_any_work(tmp_path, capsys):
    argv = ["reproduce", "--budget", "smoke", "--only", "markov-mi", "--out", str(tmp_path / "r"), "--slurm-cpus", "2"]
    assert main(argv) == 2
    assert "--slurm-cpus: acts only with --executor slurm" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_calibrate_runs_every_job_on_the_calibration_seeds_apart_from_the_judged_ones(tmp_path):
    """``--calibrate``: the experiment and at least four draws on their seeds + 1000 (docs/conventions.md#calibration),
    none of them a judged seed, in jobs of their own, and no control; the page says that it judges no paper."""
    from inductionlab.claims_report import _header
    from inductionlab.reproduce import CALIBRATION_SHIFT
    from inductionlab.store.layout import calibration_job, job_name
    from inductionlab.store.plan import calibration_draws

    name = "scb-convergence"
    judged, _ = plan("ren", "quick", tmp_path, only=(name,))
    calibration, _ = plan("ren", "quick", tmp_path, only=(name,), calibrate=True)
    draws = calibration_draws(name)
    assert sorted(map(job_name, calibration)) == sorted(calibration_job(name, i) for i in range(draws))
    first = experiments.get(name).config.seeds[0]  # the config's seeds, wherever JUDGED_SEED moved the judged ones
    seeds = {job_name(j): list(j.config["seeds"]) for j in judged}
    for job in calibration:
        i = int(job.overrides.get("draw", 0))
        assert list(job.config["seeds"]) == [first + CALIBRATION_SHIFT + i * len(seeds[name])]
    assert not {s for j in calibration for s in j.config["seeds"]} & {s for v in seeds.values() for s in v}
    page = _header({"paper": "ren", "budget": "quick", "calibration": True})
    assert "--calibrate" in page and "say nothing about the papers" in page
    assert "Calibration" not in _header({"paper": "ren", "budget": "quick"})


def test_calibration_draws_give_four_values_per_seed_or_per_run_where_a_claim_reads_one_per_run():
    from inductionlab.store.plan import CALIBRATION_VALUES, calibration_draws

    # markov-joint trains four seeds at once and reads them per seed: one calibration run gives four values
    assert len(experiments.get("markov-joint").config.seeds) == 4 and calibration_draws("markov-joint") == 1
    # markov-full's authors' z-scores are one per run of eight seeds: CALIBRATION_DRAWS asks four runs
    full = experiments.get("markov-full")
    assert len(full.config.seeds) == 8 and full.calibration_draws == CALIBRATION_VALUES
    assert calibration_draws("markov-full") == CALIBRATION_VALUES
    with pytest.raises(ValueError, match="calibration_draws"):
        dataclasses.replace(full, calibration_draws=-1)


def test_a_control_with_draws_runs_them_on_the_claims_draw_seeds_and_is_judged_on_their_mean(tmp_path):
    """scb-convergence's λ = 0 high-noise control runs eight draws (docs/conventions.md#calibration): draw i on the
    seeds of the experiment's draw i, as ``<name>@<control>.draw-<i>``; its claim's test reads their mean, and a draw
    not finished leaves the control not run, so the claim is not earned."""
    name, control = "scb-convergence", "no-l1-high-noise"
    k = next(c for c in experiments.get(name).controls if c.name == control).draws
    assert k == 8
    jobs, _ = plan("ren", "full", tmp_path, only=(name,))
    runs = sorted(
        (j for j in jobs if j.overrides.get("control") == control), key=lambda j: int(j.overrides.get("draw", 0))
    )
    first = experiments.get(name).judged_seed or 0
    assert [list(j.config["seeds"]) for j in runs] == [[first + i] for i in range(k)]
    assert [j.dir.rsplit("/", 1)[1] for j in runs] == [f"{name}@{control}"] + [
        f"{name}@{control}.draw-{i}" for i in range(1, k)
    ]
    assert {j.config["active_lambda"] for j in runs} == {0.0}
    claim = next(c for c in experiments.get(name).claims if c.control == control)
    info = {"paper": "ren", "budget": "full", "experiments": [name], "dirs": {}, "skipped": {}, "draws": {}}
    info["controls"] = {f"{name}@{control}" + (f".draw-{i}" if i else ""): f"c{i}" for i in range(k)}
    (tmp_path / "reproduce.json").write_text(json.dumps(info))
    for i in range(k - 1):
        (tmp_path / f"c{i}").mkdir()
        (tmp_path / f"c{i}" / "summary.json").write_text(json.dumps({claim.key: 1.0, claim.over: 1.0}))
    assert judge_all(tmp_path).set_index("id").loc[claim.id].control_status == "not run"
    (tmp_path / f"c{k - 1}").mkdir()
    (tmp_path / f"c{k - 1}" / "summary.json").write_text(json.dumps({claim.key: 1.0, claim.over: 1.0}))
    row = judge_all(tmp_path).set_index("id").loc[claim.id]
    assert row.control_status == "rejects" and row.control_measured_text.endswith(f"{k} seeds)")
