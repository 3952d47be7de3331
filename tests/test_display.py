"""What a run prints and a declaration shows says what is there: a headline key the summary lacks is named as
missing (not "not reached"), a time that never came reads never, and a law's fields are checked when it is built
(a string of metrics is not split into letters)."""

import math

import pytest

from inductionlab.cli_report import headline
from inductionlab.theory.laws import Law


def test_a_headline_names_a_missing_key_apart_from_a_time_never_reached_and_a_number_not_measured():
    summary = {"T_50": None, "loss": math.nan, "acc": 0.5, "not_reached": ["T_50"], "wall_seconds": 1.0}
    lines = headline(summary, ("nosuch", "T_50", "loss", "acc"))
    assert lines[0] == "  nosuch: not in this run's summary"
    assert lines[1:4] == [
        "  T_50 = never (not reached in this run)",
        "  loss = not reached at this size",
        "  acc = 0.5",
    ]


def test_a_headline_shows_per_seed_values_and_names_an_absent_part_once():
    summary = {"own": {"formed": [True, False], "score": [0.51234, 0.0987], "best": [[1, 0]]}, "wall_seconds": 2.0}
    keys = ("own.formed", "own.score", "own.best", "hf.formed", "hf.score", "own.nosuch")
    assert headline(summary, keys) == [
        "  own.formed = True, False (per seed)",
        "  own.score = 0.5123, 0.0987 (per seed)",
        "  hf.*: not in this run's summary",  # a library the run did not train: one line, not one per key
        "  own.nosuch: not in this run's summary",  # a misspelt key under a part that is there: named
        "  wall_seconds = 2.0",
    ]


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("metrics", "heads", "Law.metrics: a tuple of summary keys"),
        ("metrics", (), "Law.metrics"),
        ("exponent", "1", "Law.exponent: a number"),
        ("exponent", math.inf, "Law.exponent: a finite number"),
        ("key", "", "Law.key: a non-empty string"),
        ("transform", 3, "Law.transform: a function"),
    ],
)
def test_a_law_is_checked_when_built(field, value, match):
    fields = {"key": "task.L", "metrics": ("T",), "variable": "L", "exponent": 1.0, "source": "own Thm 1"}
    with pytest.raises(ValueError, match=match):
        Law(**(fields | {field: value}))
    assert Law(**fields).formula() == "T ∝ L^1"


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("figure", None, "figure must be a string"),
        ("wall", "three minutes", "wall is the default's wall time"),
        ("headline", "T_50", "headline is a tuple of summary keys"),
        ("saves_models", "no", "saves_models must be True or False"),
        ("devices", ("cpu", "cpu"), "devices is a tuple of distinct names"),
    ],
)
def test_an_experiments_display_fields_are_checked_when_built(field, value, match):
    from dataclasses import dataclass

    from inductionlab import Experiment, Results

    @dataclass(frozen=True)
    class Config:
        seeds: tuple[int, ...] = (0,)

    with pytest.raises(ValueError, match=match):
        Experiment(name="my-ih", description="d", config=Config(), run=lambda c, x: Results({}, {}), **{field: value})


def _fifo(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe")
    return [
        "run",
        "--config",
        str(tmp_path / "pipe"),
        "--out",
        str(tmp_path / "o"),
    ], "is a named pipe (FIFO), not a file"


LEFTOVERS = {
    "fullwidth digits": (
        lambda t: ["run", "markov-mi", "--preset", "smoke", "--task.L", "４０", "--out", str(t / "o")],
        "task.L: expected int, got '４０'",
    ),
    "arabic-indic digits": (
        lambda t: ["run", "markov-mi", "--preset", "smoke", "--seed", "١٠", "--out", str(t / "o")],
        "argument --seed: expected an integer, got '١٠'",
    ),
    "underscored digits": (
        lambda t: ["run", "markov-mi", "--preset", "smoke", "--task.L", "1_0", "--out", str(t / "o")],
        "task.L: expected int, got '1_0'",
    ),
    "the key a user types": (
        lambda t: ["run", "markov-stages", "--preset", "smoke", "--degrees", "9", "--out", str(t / "o")],
        "degrees: must lie in 1..n_heads",
    ),
    "a FIFO": (_fifo, None),
}


@pytest.mark.parametrize("case", LEFTOVERS)
def test_a_message_names_what_the_user_typed_and_what_is_there(case, tmp_path, capsys):
    from inductionlab.cli import main

    make, said = LEFTOVERS[case]
    argv = make(tmp_path)
    if said is None:
        argv, said = argv
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own refusal of an option's value
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()


def test_watch_on_a_folder_it_cannot_write_says_so_and_not_to_choose_an_out(tmp_path, monkeypatch, capsys):
    import errno

    from inductionlab.cli import main
    from inductionlab.monitor import watch as watch_module

    def read_only(directory, *_, **__):
        raise PermissionError(errno.EACCES, "Permission denied", str(directory / "watch_steps.parquet"))

    monkeypatch.setattr(watch_module, "watch", read_only)
    monkeypatch.setattr(watch_module, "trainer_dirs", lambda d: [])
    assert main(["watch", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "make the folder writable" in err and "--out" not in err
