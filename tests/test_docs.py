"""Docstrings cite the papers or docs/conventions.md by anchor — never a document outside the repository or an
issue number — and every cited anchor exists."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_citations_stay_inside_the_repository():
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', (ROOT / "docs" / "conventions.md").read_text()))
    arch = set(re.findall(r'<a id="([^"]+)"></a>', (ROOT / "docs" / "architecture.md").read_text()))
    for path in (ROOT / "src").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"\bspec (§|A\d)|\bissue \d+", text), f"{path} cites an outside document"
        for anchor in re.findall(r"docs/conventions\.md#([a-z0-9-]+)", text):
            assert anchor in anchors, f"{path}: docs/conventions.md#{anchor} does not exist"
        for anchor in re.findall(r"docs/architecture\.md#([a-z0-9-]+)", text):
            assert anchor in arch, f"{path}: docs/architecture.md#{anchor} does not exist"
