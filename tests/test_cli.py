import argparse
import json
import logging
import re

import pandas as pd
import pytest

from inductionlab import experiments, load_run
from inductionlab.cli import build_parser, main, plain
from inductionlab.config import flatten, format_value


@pytest.mark.parametrize("name", sorted(experiments.REGISTRY))
def test_every_experiment_has_a_tiny_cli_smoke_run_and_report(name, tmp_path, capsys, caplog, recwarn):
    """… and its figures are drawn without a font note in the terminal (matplotlib logs "Substituting symbol L
    from STIXNonUnicode" for a math symbol its font lacks, and warns of a missing glyph)."""
    caplog.set_level(logging.DEBUG, logger="matplotlib")
    out = tmp_path / name
    assert main(["run", name, "--preset", "smoke", "--out", str(out), "--no-progress", "--seed", "1"]) == 0
    assert "summary:" in capsys.readouterr().out
    run = load_run(out)
    config = json.loads((out / "config.json").read_text())
    assert config["experiment"] == name and config["seeds"][0] == 1
    assert run.summary["wall_seconds"] > 0 and "torch" in run.summary["versions"]
    pngs = sorted(out.glob("*.png"))
    assert pngs
    for p in pngs:
        p.unlink()
    assert main(["report", str(out)]) == 0
    assert sorted(out.glob("*.png")) == pngs
    notes = [r.getMessage() for r in caplog.records if r.name.startswith("matplotlib") and r.levelno >= logging.INFO]
    assert not notes + [str(w.message) for w in recwarn if "glyph" in str(w.message).lower()]


def test_lazy_to_rich_smoke_writes_the_documented_files(tmp_path):
    out = tmp_path / "l2r"
    assert main(["run", "lazy-to-rich", "--preset", "smoke", "--out", str(out), "--no-progress", "--seeds", "3,4"]) == 0
    run = load_run(out)
    assert isinstance(run.metrics, pd.DataFrame)
    assert {"run", "seed", "stage", "step", "t", "loss", "loss_G4", "loss_IH2", "w_KQ"} <= set(run.metrics.columns)
    assert set(run.metrics.seed) == {3, 4} and (out / "checkpoints" / "ckpt.pt").exists()
    for key in ("T_I", "T_o", "T_II", "T_III", "T_50", "final", "wall_seconds", "versions"):
        assert key in run.summary
    assert set(run.summary["final"]) >= {"loss", "loss_G4", "loss_IH2", "p_tilde", "p", "w_V1", "w_V2", "w_KQ"}


def test_existing_run_dir_needs_resume_or_force(tmp_path, capsys):
    out = tmp_path / "r"
    args = ["run", "lazy-to-rich", "--preset", "smoke", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    assert main(args) == 2 and "--force" in capsys.readouterr().err
    assert main(args + ["--resume", "--task.alpha_star", "2"]) == 2
    assert "task.alpha_star: 1.0 in the saved run, 2.0 here" in capsys.readouterr().err
    before = (out / "summary.json").read_text()
    assert main(args + ["--resume"]) == 0 and (out / "summary.json").read_text() == before  # finished: kept
    assert main(args + ["--force"]) == 0


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "lazy-to-poor"], ["unknown experiment", "lazy-to-rich"]),
        (["run", "lazy-to-rch"], ["unknown experiment 'lazy-to-rch'; did you mean lazy-to-rich"]),
        (["list", "--keys", "prob"], ["did you mean probe"]),
        (["run", "lazy-to-rich", "--model.sigma_init", "0"], ["model.sigma_init", "> 0"]),
        (["run", "lazy-to-rich", "--task.L", "3"], ["task.L", "≥ 5"]),
        (["run", "lazy-to-rich", "--train.lr", "abc"], ["train.lr", "float"]),
        (["run", "lazy-to-rich", "--task.wstar", "0.3"], ["unknown key", "task.w_star"]),
        (["run", "lazy-to-rich", "--task.w_star", "0.75"], ["task.w_star", "1/√2"]),
        (["report", "/nonexistent/dir"], ["not a run directory"]),
    ],
)
def test_bad_input_fails_with_a_message(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err


def test_list(capsys):
    assert main(["list"]) == 0 and "plateau-scaling" in capsys.readouterr().out
    assert main(["list", "--keys", "lazy-to-rich"]) == 0
    assert "--task.alpha_star 1.0   (float)  # α*" in capsys.readouterr().out


def test_list_presets_shows_what_each_preset_changes(capsys):
    exp = experiments.get("markov-length-generalization")
    assert main(["list", "--presets", exp.name]) == 0
    out = capsys.readouterr().out
    assert "  --preset quick   (the defaults)\n" in out  # a preset that changes nothing says so
    default = flatten(exp.config)
    smoke = out.split("--preset smoke\n")[1]
    for key in exp.presets["smoke"]:
        assert f"    {key}: {format_value(default[key])} → " in smoke
    assert "    lengths: 10,20,50,100,200,400,1000 → 10,40\n" in smoke


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_help_shows_no_rst_markup():
    """``inductionlab --help`` and each command's ``--help`` read as plain text: no ``code`` or :role:`x`."""
    helps = {p.prog: p.format_help() for p in _parsers(build_parser())}
    assert {"inductionlab", "inductionlab list", "inductionlab run", "inductionlab report"} <= set(helps)
    for prog, text in helps.items():
        assert not re.search(r"``|:\w+:`", text), f"{prog} --help:\n{text}"
    assert (
        plain("run ``inductionlab list`` or :func:`inductionlab.load_run`")
        == "run inductionlab list or inductionlab.load_run"
    )


def test_text_experiments_without_data_say_where_to_put_it(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("INDUCTIONLAB_DATA", raising=False)
    assert main(["run", "wikitext", "--preset", "smoke", "--out", str(tmp_path / "w"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--data.path" in err and "INDUCTIONLAB_DATA" in err


def test_a_diverging_run_stops_with_a_message_and_keeps_its_checkpoint(tmp_path, capsys):
    out = tmp_path / "div"
    args = [
        "run",
        "repeated-text",
        "--preset",
        "smoke",
        "--out",
        str(out),
        "--no-progress",
        "--train.optimizer",
        "sgd",
        "--train.lr",
        "1e6",
        "--train.steps",
        "60",
        "--train.checkpoint_every",
        "1",
    ]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert "NaN/inf" in err and "Lower train.lr" in err and "Traceback" not in err
    assert (out / "checkpoints" / "ckpt.pt").exists()


def test_interventions_from_the_command_line_are_recorded_and_act(tmp_path, capsys):
    """--intervene.* reaches the trainer (w_Q, w_K held at 0.02 throughout), config.json records it, the figure
    is drawn with an open window, and an entry the model cannot take fails with exit 2 naming what does."""
    out = tmp_path / "held"
    argv = ["run", "lazy-to-rich", "--preset", "smoke", "--no-progress", "--intervene.clamp", "w_KQ=0.02"]
    assert main([*argv, "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["intervene"]["clamp"] == ["w_KQ=0.02"]
    metrics = load_run(out).tables["metrics"]
    assert (metrics[metrics.stage == "II"].w_Q.round(6) == 0.02).all()
    assert (out / "lazy_to_rich.png").exists()
    bad = [
        "run",
        "lazy-to-rich",
        "--preset",
        "smoke",
        "--intervene.ablate",
        "blocks.0.attn",
        "--out",
        str(tmp_path / "b"),
    ]
    assert main(bad) == 2
    assert "applies to the general transformer" in capsys.readouterr().err


def test_list_keys_or_presets_without_a_name_lists_the_names(capsys):
    for option in ("--keys", "--presets"):
        assert main(["list", option]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"{option} takes an experiment's name:") and "lazy-to-rich" in out and "probe" in out
