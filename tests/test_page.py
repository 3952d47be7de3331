"""The committed page (docs/report.html) is its ledger's (docs/conventions.md#ledger): re-rendered from the committed
``results/`` at this checkout it has the same rows — each claim's verdict, measured value, margin and control
verdict — and it never says more of its jobs are current than ``report --ledger results --check`` finds here.  The
power of its paper claims is the registry's rule (``tests/test_claims_registry.py``)."""

import re
from pathlib import Path

import pytest

from inductionlab import ledger_page

ROOT = Path(__file__).parents[1]
LEDGER, PAGE = ROOT / "results", ROOT / "docs" / "report.html"
ROW = re.compile(
    r'<tr id="claim-([^"]+)" data-status="([^"]*)" data-measured="([^"]*)" data-margin="([^"]*)" '
    r'data-control="([^"]*)">'
)


def rows(text: str) -> dict[str, tuple[str, ...]]:
    return {m[0]: m[1:] for m in ROW.findall(text)}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The page re-rendered from the committed ledger, without the text data (the entries' digests stand for it)."""
    mp = pytest.MonkeyPatch()
    mp.delenv("INDUCTIONLAB_DATA", raising=False)
    page = tmp_path_factory.mktemp("page") / "report.html"
    table = ledger_page.render(LEDGER, page, "")
    yield table, page.read_text(encoding="utf-8")
    mp.undo()


def test_the_committed_page_has_the_rows_of_its_ledger(rendered):
    _, again = rendered
    committed = rows(PAGE.read_text(encoding="utf-8"))
    assert committed, "docs/report.html holds no ledger rows: render it with `inductionlab report --ledger results`"
    differ = {k: (committed.get(k), v) for k, v in rows(again).items() if committed.get(k) != v}
    assert not differ, f"the committed page differs from its ledger (re-render it): {dict(list(differ.items())[:5])}"


def test_the_page_never_says_more_jobs_are_current_than_are(rendered, monkeypatch):
    monkeypatch.delenv("INDUCTIONLAB_DATA", raising=False)
    now, said = ledger_page.check(LEDGER, PAGE, "")
    assert said and int(said["jobs"]) == now["jobs"], (said, now)
    assert int(said["current"]) <= now["current"], f"the page says {said['current']} current, HEAD has {now}"


def test_the_margins_table_of_the_conventions_is_its_ledgers(rendered):
    """docs/conventions.md#margins: each paper claim's m, s, n, margin and its control's, as the ledger gives them;
    `inductionlab report --ledger results` rewrites it with the page."""
    table, _ = rendered
    text = (ROOT / "docs" / "conventions.md").read_text(encoding="utf-8")
    found = ledger_page.MARGINS.search(text)
    assert found, "docs/conventions.md has no margins block"
    assert found[0] == found[1] + ledger_page.margins_markdown(table) + found[2], (
        "the margins table differs from its ledger: re-render with `inductionlab report --ledger results`"
    )


def _pins() -> dict[str, str]:
    """The versions `make setup` installs: constraints.txt's pins and the Makefile's torch."""
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pins = dict(line.split("==") for line in lines if line.strip() and not line.startswith("#"))
    torch = re.search(r"torch==(\S+)", (ROOT / "Makefile").read_text(encoding="utf-8"))
    assert torch, "the Makefile pins no torch"
    return {**pins, "torch": torch[1]}


def test_the_install_pins_are_the_software_of_the_ledger():
    """docs/conventions.md#provenance: a fresh `make setup` finds the committed page current only when it installs
    the versions the ledger's keys hold — every library an entry's key names is pinned, at that version (torch up
    to its local build tag, which the CPU wheel adds)."""
    from inductionlab.store.ledger import Ledger

    pins, differ = _pins(), set()
    for entry in Ledger(LEDGER).entries():
        for lib, version in entry["key"]["software"].items():
            if pins.get(lib) != version.split("+")[0]:
                differ.add((lib, version, pins.get(lib, "unpinned")))
    assert not differ, f"ledger software → pin differs (pin it or re-run): {sorted(differ)}"
