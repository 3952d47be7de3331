"""Docstrings cite the papers or docs/conventions.md by anchor — never a document outside the repository or an
issue number — and every cited anchor exists."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_citations_stay_inside_the_repository():
    anchors = {
        doc.name: set(re.findall(r'<a id="([^"]+)"></a>', doc.read_text())) for doc in (ROOT / "docs").glob("*.md")
    }
    for path in (ROOT / "src").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"\bspec (§|A\d)|\bissue \d+", text), f"{path} cites an outside document"
        for doc, anchor in re.findall(r"docs/([a-z_]+\.md)#([a-z0-9-]+)", text):
            assert anchor in anchors.get(doc, set()), f"{path}: docs/{doc}#{anchor} does not exist"
