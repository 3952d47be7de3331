"""The registry's rules for a verdict only the paper can move (docs/conventions.md#controls, #calibration):

1. every paper claim names a mechanism-free control, which runs at the claim's own preset or states why a cheaper
   one cannot change its outcome (its value is defined there: ``tests/test_controls.py`` runs each at smoke size);
2. no control sets the quantity its claim measures;
3. every stochastic experiment names calibration seeds in docs/conventions.md#calibration, apart from the seeds its
   claims are judged on, and says what they showed;
4. on the committed ledger (``results/``), every paper claim whose calibration runs are there holds its margin and is
   powered, or is not judged at this scale with what would judge it; and none fails *open*.

A finding about the paper is a failure with its evidence (#findings): it needs no control, since a pass is what a
control guards.  An observation (``Claim.observation``) is the project's own and is counted apart."""

import re
import tempfile
from pathlib import Path

import pytest

from inductionlab import experiments, ledger_page
from inductionlab.analysis.claims import FINDING, SCALE, Claim, Control
from inductionlab.reproduce import BUDGETS
from tests.test_controls import sets_its_measure

CONVENTIONS = Path(__file__).parents[1] / "docs" / "conventions.md"
LEDGER = Path(__file__).parents[1] / "results"
PENDING = "pending"  # a calibration row not yet run (docs/conventions.md#calibration says which and why)
PAPER_CLAIMS = [
    (name, claim)
    for name, exp in experiments.REGISTRY.items()
    for claim in exp.claims
    if not claim.observation and claim.kind != FINDING
]


def _control(name: str, claim: Claim) -> Control | None:
    return next((c for c in experiments.get(name).controls if c.name == claim.control), None)


@pytest.mark.parametrize("name,claim", PAPER_CLAIMS, ids=[c.id for _, c in PAPER_CLAIMS])
def test_every_paper_claim_has_a_mechanism_free_control_at_its_own_budget(name, claim):
    control = _control(name, claim)
    assert control is not None, f"{claim.id}: names no mechanism-free control (a pass must be able to fail)"
    preset = BUDGETS["full"]  # the preset `reproduce --budget full` judges the claim at: the experiment's default
    assert control.preset == preset or control.cheaper, (
        f"{claim.id}: its control {control.name} runs at preset {control.preset!r}, the claim at the default; "
        "run it there or say in Control(cheaper=...) why a cheaper budget cannot change its outcome"
    )
    assert not sets_its_measure(claim, control), f"{claim.id}: {control.name} sets what the claim measures"


def calibration_rows(text: str) -> dict[str, tuple[set[int], str]]:
    """The calibration table of docs/conventions.md#calibration: experiment → (seeds, what they showed).  Seeds are
    written as ``1000–1007`` (a range, either dash) or a comma list, or a mix."""
    text = ledger_page.MARGINS.sub("", text)  # the margins block is the ledger's, one row per claim (#margins)
    section = text.split('<a id="calibration"></a>', 1)[-1].split("\n### ", 2)
    rows = {}
    for line in "\n### ".join(section[:2]).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not re.fullmatch(r"`[a-z0-9-]+`", cells[0]):
            continue
        seeds: set[int] = set()
        if cells[1] == PENDING:  # not yet run: the row says why, and the test marks it xfail
            rows[cells[0].strip("`")] = (set(), cells[2])
            continue
        for part in filter(None, (p.strip() for p in cells[1].split(","))):
            found = re.fullmatch(r"(\d+)\s*[–-]\s*(\d+)|(\d+)", part)
            assert found, f"docs/conventions.md#calibration, {cells[0]}: seeds {part!r} are not N, N–M or a list"
            lo, hi = (found[1], found[2]) if found[1] else (found[3], found[3])
            seeds |= set(range(int(lo), int(hi) + 1))
        rows[cells[0].strip("`")] = (seeds, cells[2])
    return rows


def judged_seeds(name: str) -> set[int]:
    """The seeds an experiment's claims are judged on: its run's, shifted by i·len(seeds) for each data draw i."""
    exp = experiments.get(name)
    seeds = tuple(exp.config.seeds)
    first = seeds[0] if exp.judged_seed is None else exp.judged_seed  # a protocol moved them (#calibration)
    return {first + j + i * len(seeds) for i in range(exp.draws) for j in range(len(seeds))}


STOCHASTIC = [n for n, e in experiments.REGISTRY.items() if e.claims and (e.draws > 1 or len(e.config.seeds) > 1)]


def test_the_calibration_table_parses_ranges_and_lists():
    text = '<a id="calibration"></a>\n| `probe` | 1000–1002, 1010 | escapes by 4000 |\n| x | y | z |\n'
    assert calibration_rows(text) == {"probe": ({1000, 1001, 1002, 1010}, "escapes by 4000")}
    pending = '<a id="calibration"></a>\n| `probe` | pending | costs 30 core-minutes |\n'
    assert calibration_rows(pending) == {"probe": (set(), "costs 30 core-minutes")}


@pytest.mark.parametrize("name", STOCHASTIC)
def test_every_stochastic_experiment_names_calibration_seeds_apart_from_its_judged_ones(name):
    rows = calibration_rows(CONVENTIONS.read_text(encoding="utf-8"))
    assert name in rows, f"docs/conventions.md#calibration: no row for {name}"
    seeds, showed = rows[name]
    if not seeds and showed:
        pytest.xfail(f"{name}: calibration pending ({showed})")
    assert seeds, f"{name}: no calibration seeds"
    assert not seeds & judged_seeds(name), f"{name}: calibration seeds {sorted(seeds & judged_seeds(name))} are judged"
    assert len(showed) > 20, f"{name}: say what the calibration seeds showed"


@pytest.fixture(scope="module")
def ledger_table():
    """Every claim's row as the committed ledger (``results/``) judges it, without the text data."""
    mp = pytest.MonkeyPatch()
    mp.delenv("INDUCTIONLAB_DATA", raising=False)
    with tempfile.TemporaryDirectory() as tmp:
        yield ledger_page.render(LEDGER, Path(tmp) / "report.html", "")
    mp.undo()


def _paper(table):
    return table[table.group == "paper"]


def test_every_paper_claim_with_calibration_runs_holds_its_margin_and_is_powered_or_not_judged_at_this_scale(
    ledger_table,
):
    # a claim whose calibration runs, or whose control's runs, are not all in the ledger yet has no margin to hold
    # (the page says so; its verdict is not a pass: a control not run leaves it unearned)
    papers = _paper(ledger_table)
    waiting = papers.unpowered.fillna("") == "its control has not run"  # powered but for its control's margin
    calibrated = papers[~papers.margin_text.str.startswith("no calibration run") & ~waiting]
    assert calibrated.margin.notna().all() or calibrated[calibrated.margin.isna()].status.eq(SCALE).all(), list(
        calibrated[calibrated.margin.isna()].id
    )
    weak = calibrated[~calibrated.powered.astype(bool) & (calibrated.status != SCALE)]
    assert weak.empty, "underpowered: " + "; ".join(f"{r.id} {r.margin_text}" for r in weak.itertuples())


def test_a_paper_claim_not_judged_at_this_scale_names_what_would_judge_it(ledger_table):
    papers = _paper(ledger_table)
    scale = papers[papers.status == SCALE]
    assert scale.reason.str.len().gt(0).all(), list(scale[scale.reason.str.len() == 0].id)


def test_no_paper_claim_on_the_ledger_fails_open(ledger_table):
    # a failure is a finding about the paper (its evidence and re-implementation) or a defect fixed, never open
    papers = _paper(ledger_table)
    open_ = papers[(papers.status == "failed") & (papers.kind != FINDING)]
    assert open_.empty, "failed (open): " + "; ".join(f"{r.id} {r.measured_text}" for r in open_.itertuples())
