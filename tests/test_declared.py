"""What an experiment declares — ``laws``, ``loss_unit``, ``devices``, ``data``, ``saves_models`` — is what the
commands read, for a plug-in as for the toolkit's own (docs/own_experiment.md#what-it-declares): ``sweep report``
draws its law and labels its losses in its unit, ``list`` shows them, ``run --device`` takes a device it declares
and refuses one it does not."""

import json
import sys
import textwrap

import pandas as pd
import pytest

import inductionlab as il
from inductionlab import experiments, sweep_report
from inductionlab.cli import main
from inductionlab.config import ConfigError
from inductionlab.theory.laws import Law

# T = 3 L² (its law: exponent 2 in L), a loss in bits, and the device the run was given.
PLUGIN = textwrap.dedent(
    """
    from dataclasses import dataclass

    import pandas as pd

    import inductionlab as il


    @dataclass(frozen=True)
    class Config:
        seeds: tuple[int, ...] = (0, 1)
        L: int = 4
        device: str = "cpu"


    def run(cfg, ctx):
        rows = [{"seed": s, "T": 3.0 * cfg.L**2 * (1 + 0.01 * s), "loss": 1.0 / cfg.L} for s in cfg.seeds]
        table = pd.DataFrame(rows)
        summary = {"T": float(table["T"].mean()), "loss": float(table["loss"].mean()), "device": ctx.device}
        return il.Results({"metrics": table}, summary)


    EXPERIMENT = il.Experiment(
        name="own-law",
        description="a time that grows as L squared",
        config=Config(),
        run=run,
        headline=("T", "loss"),
        laws=(il.Law("L", ("T",), "L", 2.0, "own Thm 1"),),
        loss_unit="bits",
        devices=("cpu", "cuda"),
    )
    il.register_experiment(EXPERIMENT)


    @dataclass(frozen=True)
    class Plain:
        seeds: tuple[int, ...] = (0,)


    il.register_experiment(
        il.Experiment(
            name="own-cpu", description="no device key", config=Plain(), run=run, cpu_only="it counts on one core"
        )
    )


    @dataclass(frozen=True)
    class WithDevice:
        seeds: tuple[int, ...] = (0,)
        device: str = "cpu"


    il.register_experiment(
        il.Experiment(
            name="own-declared-cpu",
            description="a device key, but declared for the CPU only",
            config=WithDevice(),
            run=run,
            devices=("cpu",),
            cpu_only="its author says so",
        )
    )
    """
)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The plug-in registered in this process (the registry restored after the test), and its file."""
    path = tmp_path / "own_law.py"
    path.write_text(PLUGIN)
    saved = dict(experiments.REGISTRY)
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("own_law")
    yield path
    experiments.REGISTRY.clear()
    experiments.REGISTRY.update(saved)
    sys.modules.pop("own_law", None)


def test_sweep_report_draws_the_declared_law_and_labels_the_loss_in_its_unit(plugin, tmp_path, monkeypatch):
    drawn = []
    overlay = sweep_report._overlay
    monkeypatch.setattr(
        sweep_report,
        "_overlay",
        lambda ax, table, key, metric, law, *a: (
            drawn.append((key, metric, law)) or overlay(ax, table, key, metric, law, *a)
        ),
    )
    cfg = il.configure("own-law")
    il.run_sweep("own-law", cfg, {"L": ["4", "8", "16"]}, tmp_path / "sweep", progress=False)
    paths = sweep_report.write_report(tmp_path / "sweep")
    assert drawn == [("L", "T", Law("L", ("T",), "L", 2.0, "own Thm 1"))]  # the law on its metric, not on loss
    assert (tmp_path / "sweep" / "sweep_L.png") in paths
    laws = pd.read_csv(tmp_path / "sweep" / "sweep_laws.csv")  # T = 3 L² (1 + 0.01 seed): the fit finds 2 exactly
    assert laws[["key", "metric", "exponent", "runs"]].values.tolist() == [["L", "T", 2.0, 6]]
    assert laws.fitted[0] == pytest.approx(2.0, abs=1e-9)
    assert "| L | T | ∝ L^2 | 2 ± " in (tmp_path / "sweep" / "sweep_table.md").read_text()
    assert sweep_report.axis_label("loss", "own-law") == "loss (bits)"
    assert sweep_report.axis_label("loss", "own-cpu") == "loss"  # declares no unit


def test_run_device_takes_a_declared_device_and_refuses_another(plugin, tmp_path):
    cfg = il.configure("own-law", overrides={"device": "cuda"})  # declared: the config's device key takes it
    assert cfg.device == "cuda"
    assert il.load_run(il.run_experiment("own-law", cfg, tmp_path / "run")).summary["device"] == "cuda"
    with pytest.raises(ConfigError, match=r"--device cuda: own-cpu runs on the CPU only \(it counts on one core\)"):
        il.configure("own-cpu", overrides={"device": "cuda"})
    assert not hasattr(il.configure("own-cpu", overrides={"device": "cpu"}), "device")
    with pytest.raises(ConfigError, match=r"With --device: .*own-law"):
        il.configure("own-cpu", overrides={"device": "cuda"})
    # the declaration, not the field, decides: a config with a device key declared for the CPU refuses cuda
    with pytest.raises(ConfigError, match=r"own-declared-cpu runs on the CPU only \(its author says so\)"):
        il.configure("own-declared-cpu", overrides={"device": "cuda:1"})
    assert il.configure("own-declared-cpu", overrides={"device": "cpu"}).device == "cpu"


def test_list_shows_what_each_experiment_declares(plugin, capsys):
    assert main(["list"]) == 0
    rows = capsys.readouterr().out.splitlines()
    line = next(row for row in rows if row.startswith("own-law "))
    assert "cpu, cuda" in line and "(laws in L)" in line
    assert "cuda" not in next(row for row in rows if row.startswith("own-cpu "))
    assert main(["list", "--keys", "own-law"]) == 0
    keys = capsys.readouterr().out
    assert "law in --L: T ∝ L^2 (own Thm 1)" in keys and "losses in bits" in keys and "devices: cpu, cuda" in keys


def test_the_command_line_runs_on_a_declared_device_and_refuses_another(plugin, tmp_path, capsys):
    out = tmp_path / "cli-run"
    assert main(["run", "own-law", "--device", "cuda", "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["device"] == "cuda"
    capsys.readouterr()
    assert main(["run", "own-cpu", "--device", "cuda", "--out", str(tmp_path / "no")]) == 2
    assert "own-cpu runs on the CPU only (it counts on one core)" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()  # refused before any work


def test_declarations_that_do_not_fit_the_config_fail_when_built():
    cfg = experiments.get("approx-ih2").config  # no device key, no data key

    def build(**declared):
        return il.Experiment(name="bad", description="x", config=cfg, run=print, **declared)

    with pytest.raises(ValueError, match="devices"):
        build(devices=("cpu", "cuda"))  # a GPU experiment takes --device through a config key `device`
    with pytest.raises(ValueError, match="devices"):
        build(devices=("tpu",))
    assert build().devices == ("cpu",)  # undeclared: the CPU, or both where the config has a device key
    probe = experiments.get("probe").config
    assert il.Experiment(name="gpu", description="x", config=probe, run=print).devices == ("cpu", "cuda")
    assert il.Experiment(name="gpu", description="x", config=probe, run=print, devices=("cuda",)).devices == ("cuda",)
    with pytest.raises(ValueError, match="laws"):
        build(laws=(Law("task.nope", ("T",), "L", 1.0, "x"),))
    with pytest.raises(ValueError, match="data names"):
        build(data="data.path")
    with pytest.raises(ValueError, match="loss_unit"):
        build(loss_unit=3)
    for bad in (None, ("",), (3,)):
        with pytest.raises(ValueError, match="times"):
            build(times=bad)
    assert build(times="escape").times == ("escape",)
    for bad in (5, "big"):
        with pytest.raises(ValueError, match="op_size"):
            build(op_size=bad)


@pytest.mark.parametrize("gives", [-1, 2.5, "many", True, None])
def test_an_op_size_that_gives_no_count_fails_naming_it(gives, monkeypatch):
    from inductionlab import runner

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(runner, "_cores", lambda: 4)
    cfg = experiments.get("approx-ih2").config
    exp = il.Experiment(name="sized", description="x", config=cfg, run=print, op_size=lambda c: gives)
    with pytest.raises(ConfigError, match="op_size gave"):
        runner.threads_for(exp, cfg)


def test_the_toolkits_own_declarations():
    own = experiments.get
    assert [law.key for law in own("lazy-to-rich").laws][:1] == ["task.L"] and own("lazy-to-rich-boolean").laws == ()
    assert own("wikitext").data == "data.path" and own("wikitext").devices == ("cpu", "cuda")
    assert own("lazy-to-rich").devices == ("cpu",) and own("markov-transformer").loss_unit == "nats"
    assert not own("markov-mi").saves_models and own("markov-stages").saves_models
