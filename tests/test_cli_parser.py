"""The parser is the one list of a command's options: an option declared there reaches the command, whatever its
name; every other ``--KEY VALUE`` of ``run`` and ``sweep`` is a config value, before or after the experiment's name,
and its value may start with a dash; no option is abbreviated or extended."""

import argparse

import pytest

from inductionlab import cli
from inductionlab.cli import main, parse_command
from inductionlab.config import ConfigError


def _command(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices[name]


@pytest.mark.parametrize("command", ["run", "sweep"])
@pytest.mark.parametrize("given", [["--frobnicate", "x"], ["--frobnicate=x"]], ids=["pair", "equals"])
def test_an_option_added_to_the_parser_alone_reaches_the_command_and_is_no_config_key(command, given, monkeypatch):
    build = cli.build_parser

    def with_frobnicate(watch: bool = True) -> argparse.ArgumentParser:
        parser = build(watch)
        _command(parser, command).add_argument("--frobnicate", metavar="VALUE")
        return parser

    seen = {}

    def record(args, values):
        seen.update(args=args, values=values)
        return 0

    monkeypatch.setattr(cli, "build_parser", with_frobnicate)
    monkeypatch.setattr(cli, f"cmd_{command}", record)
    assert main([command, *given, "markov-mi", "--task.L", "20", *given]) == 0
    assert seen["args"].frobnicate == "x" and seen["args"].name == "markov-mi"
    assert seen["values"] == {"task.L": "20"}  # never "frobnicate": no "unknown key" error can follow


def test_config_values_stand_anywhere_and_may_start_with_a_dash():
    args, values = parse_command(["run", "--task.L", "20", "lazy-to-rich", "--preset", "smoke", "--seed", "-1"])
    assert (args.name, args.preset, args.seed, values) == ("lazy-to-rich", "smoke", -1, {"task.L": "20"})
    argv = ["run", "--task.alpha", "-1", "--data.path=/a b", "probe", "--train.lr=-1e-3", "--x.y", "-1e-3", "--z", "-"]
    args, values = parse_command([*argv, "--w", "-hello", "--threads", "-2"])  # -hello is a value, not -h ello
    assert args.name == "probe" and args.threads == -2
    assert values == {
        "task.alpha": "-1",
        "data.path": "/a b",
        "train.lr": "-1e-3",
        "x.y": "-1e-3",
        "z": "-",
        "w": "-hello",
    }
    args, values = parse_command(["sweep", "markov-mi", "--grid", "task.L=5,10", "--task.L=3", "--n-seeds", "2"])
    assert (args.grid, args.n_seeds, values) == (["task.L=5,10"], 2, {"task.L": "3"})


def test_no_option_is_abbreviated_or_extended(monkeypatch, tmp_path, capsys):
    for near, option in (("--pres", "--preset"), ("--out.x", "--out")):  # refused naming the option, never taken
        with pytest.raises(
            ConfigError, match=f"{near}: no option and no config key of lazy-to-rich. Did you mean the option {option}"
        ):
            parse_command(["run", "lazy-to-rich", near, "smoke", "--out=o"])
    args, values = parse_command(["run", "lazy-to-rich", "--seeds", "1,2", "--out=o"])  # a config key near --seed
    assert (args.out, values) == ("o", {"seeds": "1,2"})
    monkeypatch.chdir(tmp_path)
    assert main(["run", "lazy-to-rich", "--pres", "smoke"]) == 2
    assert "Did you mean the option --preset?" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # reproduce takes no config values: an unknown option is argparse's error
        parse_command(["reproduce", "--bud", "smoke"])


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "lazy-to-rich", "--n_draws"], ["--n_draws", "missing value"]),
        (["sweep", "--task.L"], ["--task.L", "missing value"]),
        (["run", "lazy-to-rich", "--", "x"], ["unexpected argument '--'", "--KEY VALUE"]),
    ],
)
def test_a_config_key_without_its_value_is_named(argv, words):
    with pytest.raises(ConfigError) as err:
        parse_command(argv)
    assert all(word in str(err.value) for word in words), err.value


def test_a_stray_short_option_or_positional_is_argparses_error(capsys):
    for argv in (["run", "lazy-to-rich", "-x"], ["run", "lazy-to-rich", "extra"]):
        with pytest.raises(SystemExit) as stop:
            parse_command(argv)
        assert stop.value.code == 2 and f"unrecognized arguments: {argv[-1]}" in capsys.readouterr().err


GUESSES = [
    (
        ["--keep-checkpoint", "--out", "{out}"],
        "--keep-checkpoint: no option and no config key of probe. Did you mean the option --keep-checkpoints?",
    ),
    (["--outt", "{out}"], "--outt: no option and no config key of probe. Did you mean the option --out?"),
    (["--task.w_scale", "--out", "{out}"], "--task.w_scale: missing value: the next argument, --out, is an option"),
    (["--task.label", "-h", "--out", "{out}"], "task.label: unknown key"),  # -h after a --KEY is its value, not help
    (["--reuse-stale", "--out", "{out}"], "--reuse-stale is an option of another command, not of this one"),
]


@pytest.mark.parametrize("extra,said", GUESSES, ids=[g[0][0] for g in GUESSES])
def test_the_command_line_never_guesses_an_option_or_a_value(extra, said, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["run", "probe", "--preset", "smoke", *(a.format(out=out) for a in extra)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert said in captured.err and "Traceback" not in captured.err and "usage:" not in captured.out
    assert not out.exists()  # nothing started
