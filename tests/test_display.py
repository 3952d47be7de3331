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
    assert lines[0] == "  nosuch: not in this run's summary (the experiment's headline names a key it does not write)"
    assert lines[1:4] == [
        "  T_50 = never (not reached in this run)",
        "  loss = not reached at this size",
        "  acc = 0.5",
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
