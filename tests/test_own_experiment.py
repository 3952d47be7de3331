"""A researcher's own experiment, from outside the package (docs/own_experiment.md): registered with
``register_experiment``, through the entry-point group ``inductionlab.experiments`` and with ``--plugin``, it runs
through ``run``, ``sweep``, ``report``, ``list`` and ``reproduce`` like the toolkit's own."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

import inductionlab as il
from inductionlab import experiments
from inductionlab.config import ConfigError

# A coin's heads rate, estimated per seed on the run axis; the claim says it is fair, the control biases it.
PLUGIN = textwrap.dedent(
    """
    from dataclasses import dataclass

    import pandas as pd
    import torch

    import inductionlab as il


    @dataclass(frozen=True)
    class Config:
        seeds: tuple[int, ...] = (0, 1)
        flips: int = 4000
        p: float = 0.5


    def run(cfg: Config, ctx: il.RunContext) -> il.Results:
        rows = []
        for seed in cfg.seeds:
            g = torch.Generator().manual_seed(seed)
            heads = (torch.rand(cfg.flips, generator=g) < cfg.p).double().mean().item()
            rows.append({"seed": seed, "heads": heads, "error": abs(heads - 0.5)})
        table = pd.DataFrame(rows)
        return il.Results({"metrics": table}, {"heads": float(table.heads.mean())})


    EXPERIMENT = il.Experiment(
        name="NAME",
        description="a coin's heads rate",
        config=Config(),
        presets={"smoke": {"flips": 400}, "quick": {"flips": 2000}},
        run=run,
        claims=(
            il.Claim(
                id="own-fair-coin",
                paper="coins",
                where="folklore",
                statement="the coin is fair",
                key="heads",
                expected="0.5",
                test=il.Near(0.5, atol=0.05),
                control="biased",
            ),
        ),
        controls=(il.Control(name="biased", breaks="p = 0.9", overrides={"p": 0.9}, preset="smoke"),),
    )
    REGISTER
    """
)


def _write_plugin(folder, name, register):
    text = PLUGIN.replace("NAME", name).replace("REGISTER", "il.register_experiment(EXPERIMENT)" if register else "")
    path = folder / f"{name.replace('-', '_')}.py"
    path.write_text(text)
    return path


@pytest.fixture
def registry():
    """The registry as it was, restored after the test (a registered experiment stays out of the other tests)."""
    saved = dict(experiments.REGISTRY)
    yield experiments.REGISTRY
    experiments.REGISTRY.clear()
    experiments.REGISTRY.update(saved)


def _cli(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "inductionlab", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def test_registered_in_process_runs_sweeps_and_reproduces(tmp_path, registry, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _write_plugin(tmp_path, "coin-api", register=True)
    __import__("coin_api")
    assert "coin-api" in experiments.all_experiments()
    run_dir = il.run_experiment("coin-api", il.configure("coin-api", "smoke"), tmp_path / "run")
    assert il.load_run(run_dir).summary["heads"] == pytest.approx(0.5, abs=0.05)
    # two workers: spawned processes import the defining module (experiments.source_of) to find it
    cfg = il.configure("coin-api", "smoke")
    table = il.run_sweep("coin-api", cfg, {"p": ["0.5", "0.9"]}, tmp_path / "sweep", workers=2, progress=False)
    assert sorted(set(table["p"].astype(float))) == [0.5, 0.9] and len(table) == 4  # a row per seed
    from inductionlab.reproduce import reproduce

    claims = reproduce("all", "quick", tmp_path / "rq", workers=1, only=("coin-api",))
    row = claims.set_index("id").loc["own-fair-coin"]
    assert row.status == "passed" and row.control_status == "rejects"


def test_the_toolkits_own_names_are_refused(registry):
    clash = il.Experiment(name="lazy-to-rich", description="x", config=experiments.get("approx-ih2").config, run=print)
    with pytest.raises(ConfigError, match="toolkit's own"):
        il.register_experiment(clash)


LAZY = textwrap.dedent(
    """
    import dataclasses, sys
    import inductionlab as il
    from inductionlab import experiments
    from inductionlab.config import ConfigError

    own = experiments.get("approx-ih2")
    print(sorted(m for m in sys.modules if m.startswith("inductionlab.experiments.") and m.count(".") > 2))
    try:
        il.register_experiment(dataclasses.replace(own, name="probe"))
    except ConfigError as err:
        print("refused" if "toolkit's own" in str(err) else err)
    print("inductionlab.experiments.wang.probe" in sys.modules)
    il.register_experiment(dataclasses.replace(own, name="probe", description="mine"), replace=True)
    names = list(experiments.all_experiments())
    print(names == list(experiments.registry.TOOLKIT), experiments.get("probe").description)
    print(experiments.BUILTIN[names.index("probe")].name, experiments.BUILTIN[names.index("probe")].description != "mine")
    """
)


def test_the_registry_imports_one_toolkit_experiment_and_guards_the_others_names():
    """``get`` imports the experiment asked for and none of the others; a plug-in cannot take a toolkit name whose
    experiment is not imported yet, shadows it with ``replace=True`` at its place in ``list``'s order, and
    ``BUILTIN`` keeps the toolkit's own."""
    out = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, check=True).stdout.split("\n")
    wing = "inductionlab.experiments.wang"
    assert out[0] == str([f"{wing}.approx_ih2", f"{wing}.claims", f"{wing}.claims.approx_ih2"])
    assert out[1:5] == ["refused", "False", "True mine", "probe True"]


def test_bad_experiments_fail_when_built():
    cfg = experiments.get("approx-ih2").config
    with pytest.raises(ValueError, match="lower-case"):
        il.Experiment(name="Bad Name", description="x", config=cfg, run=print)
    with pytest.raises(ValueError, match="dataclass instance"):
        il.Experiment(name="x", description="x", config=object(), run=print)
    with pytest.raises(ValueError, match="seeds"):
        il.Experiment(name="x", description="x", config=dataclasses.replace(cfg, seeds=()), run=print)
    with pytest.raises(ValueError, match="names control"):
        claim = il.Claim(
            id="c", paper="own", where="w", statement="s", key="k", expected="e", test=il.Near(1.0), control="nope"
        )
        il.Experiment(name="x", description="x", config=cfg, run=print, claims=(claim,))
    with pytest.raises(TypeError):
        il.Claim("c", "own", "w", "s", "k", "e", il.Near(1.0))  # keyword-only


def test_entry_point_and_plugin_reach_the_cli(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _write_plugin(site, "coin-ep", register=False)
    dist = site / "coin_ep-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: coin-ep\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[inductionlab.experiments]\ncoin-ep = coin_ep:EXPERIMENT\n")
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    listed = _cli("list", env=env)
    assert listed.returncode == 0 and "coin-ep" in listed.stdout, listed.stderr
    ran = _cli("run", "coin-ep", "--preset", "smoke", "--out", str(tmp_path / "run"), "--flips", "800", env=env)
    assert ran.returncode == 0, ran.stderr
    assert json.loads((tmp_path / "run" / "config.json").read_text())["flips"] == 800
    swept = _cli(
        "sweep",
        "coin-ep",
        "--preset",
        "smoke",
        "--grid",
        "p=0.5,0.7",
        "--workers",
        "2",
        "--out",
        str(tmp_path / "sw"),
        env=env,
    )
    assert swept.returncode == 0, swept.stderr
    assert len(pd.read_parquet(tmp_path / "sw" / "sweep.parquet")) == 4  # 2 points × 2 seeds
    assert _cli("report", str(tmp_path / "sw"), env=env).returncode == 0
    reproduced = _cli("reproduce", "--only", "coin-ep", "--budget", "quick", "--out", str(tmp_path / "rq"), env=env)
    assert reproduced.returncode == 0, reproduced.stderr
    assert "1 passed" in reproduced.stdout + reproduced.stderr
    # the same file as a --plugin, without any installation
    plugin = _write_plugin(tmp_path, "coin-file", register=False)
    ran = _cli("--plugin", str(plugin), "run", "coin-file", "--preset", "smoke", "--out", str(tmp_path / "file"))
    assert ran.returncode == 0, ran.stderr
    keys = _cli("--plugin", str(plugin), "list", "--keys", "coin-file")
    assert keys.returncode == 0 and "flips" in keys.stdout


def test_a_worker_runs_the_script_that_shadows_a_toolkit_name(tmp_path, registry):
    """A worker process knows the toolkit's own experiment; the source of a script that shadows its name
    (``replace=True``) must still be imported there, or the worker would run the original silently."""
    script = tmp_path / "shadow.py"
    script.write_text(
        "import dataclasses\nimport inductionlab as il\nfrom inductionlab import experiments\n"
        "own = experiments.get('approx-ih2')\n"
        "il.register_experiment(dataclasses.replace(own, description='shadowed'), replace=True)\n"
    )
    assert experiments.get("approx-ih2") in experiments.BUILTIN  # as a fresh worker sees it
    assert experiments.ensure_registered("approx-ih2", str(script)).description == "shadowed"
