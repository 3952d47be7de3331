"""Docstrings cite the papers or docs/conventions.md by anchor — never a document outside the repository or an
issue number — and every cited anchor exists.

:func:`problems` is the checker: every ``docs/<file>.md#<anchor>`` reference (and, inside docs/, every relative
``](file.md#anchor)`` link) must name a file and an anchor that exist — an explicit ``<a id="...">`` / ``{#...}``
or a heading's GitHub slug; no "(see docs/...)" placeholder; and a docstring or comment paragraph (or a Markdown
paragraph) that cites docs/ has balanced ( ), [ ] and backticks, so a sentence that cites an anchor is whole.

docs/equations.md maps the papers' numbered results to code: every `file:function` and `tests/…::test` it names
exists (:func:`missing_targets`), every row names one or says "not implemented: <why>" (:func:`unmapped_rows`), and
every theorem or lemma a docstring cites has a row.
"""

import ast
import io
import re
import tokenize
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).parents[1]
SCANNED_PY = ("src", "examples", "benchmarks", "tests")
DOC_REF = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")
RELATIVE_LINK = re.compile(r"\]\(([\w-]+\.md)?(?:#([\w-]+))?\)")
PLACEHOLDER = re.compile(r"\(see docs/[\w./-]*\)")
COMPOUND = re.compile(r"\bdocs/[\w-]+\.md#[\w-]+[/–][\w§]")  # "#wang-a1/A2", "#chen-5-1–5.2": one anchor per ref
PAIRS = {")": "(", "]": "["}


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces → hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors_of(text: str) -> set[str]:
    """Explicit ``<a id="x">`` and ``{#x}`` anchors and the slugs of the headings of a Markdown text."""
    explicit = re.findall(r'<a id="([^"]+)"', text) + re.findall(r"\{#([\w-]+)\}", text)
    headings = re.findall(r"^#+\s+(.+?)\s*$", strip_fences(text), flags=re.M)
    return set(explicit) | {slug(re.sub(r"\{#[\w-]+\}", "", h)) for h in headings}


def strip_fences(text: str) -> str:
    """``text`` with its fenced code blocks blanked (a ``# comment`` in a block is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def all_anchors() -> dict[str, set[str]]:
    """docs/<file>.md → its anchors."""
    return {f"docs/{p.name}": anchors_of(p.read_text()) for p in (ROOT / "docs").glob("*.md")}


def reference_problems(text: str, anchors: Mapping[str, set[str]], here: str | None = None) -> list[str]:
    """Missing files or anchors among the docs/ references of ``text``, placeholders and compound anchors.
    ``here`` (a docs/<file>.md) also resolves its relative links ``](file.md#anchor)`` and ``](#anchor)``."""
    refs = [(f"docs/{f}", a) for f, a in DOC_REF.findall(text)]
    if here is not None:
        refs += [(f"docs/{f}" if f else here, a) for f, a in RELATIVE_LINK.findall(text) if f or a]
    found = [f"{doc} does not exist" for doc, _ in refs if doc not in anchors]
    found += [f"{doc}#{a} does not exist" for doc, a in refs if a and doc in anchors and a not in anchors[doc]]
    found += [f"placeholder {m!r}" for m in PLACEHOLDER.findall(text)]
    return found + [f"one anchor per reference, not {m!r}" for m in COMPOUND.findall(text)]


def bracket_problems(unit: str) -> list[str]:
    """Unbalanced ( ), [ ] or an odd number of backticks in a paragraph that cites docs/ (else none)."""
    if not DOC_REF.search(unit) and not RELATIVE_LINK.search(unit):
        return []
    stack: list[str] = []
    for ch in unit:
        if ch in "([":
            stack.append(ch)
        elif ch in PAIRS and (not stack or stack.pop() != PAIRS[ch]):
            return [f"unmatched {ch!r} in {squash(unit)!r}"]
    found = [f"unclosed {''.join(stack)!r} in {squash(unit)!r}"] if stack else []
    return found + ([f"odd number of backticks in {squash(unit)!r}"] if unit.count("`") % 2 else [])


def squash(unit: str) -> str:
    return " ".join(unit.split())


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def python_units(source: str) -> list[str]:
    """The paragraphs of every string literal and of every block of consecutive comment lines."""
    strings = [n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    blocks: list[list[str]] = []
    last = -2
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            if tok.start[0] != last + 1:
                blocks.append([])
            blocks[-1].append(tok.string.lstrip("#").strip())
            last = tok.start[0]
    return [p for s in strings + ["\n".join(b) for b in blocks] for p in paragraphs(s)]


def markdown_units(text: str) -> list[str]:
    """The paragraphs of a Markdown text; a fenced code block's lines count as one paragraph, fences left out."""
    units, prose, code, fenced = [], [], [], False
    for line in text.splitlines():
        if line.startswith("```"):
            if fenced:
                units.append("\n".join(code))
                code = []
            fenced = not fenced
        else:
            (code if fenced else prose).append(line)
    return units + paragraphs("\n".join(prose))


def problems(text: str, kind: str, anchors: Mapping[str, set[str]], here: str | None = None) -> list[str]:
    """Everything wrong with the docs/ references of a ``.py`` (``kind="py"``) or Markdown (``"md"``) text."""
    units = python_units(text) if kind == "py" else markdown_units(text)
    return reference_problems(text, anchors, here) + [p for u in units for p in bracket_problems(u)]


def scanned() -> list[tuple[Path, str, str | None]]:
    """(path, kind, docs name) of every file the check reads; this file's planted examples are left out."""
    py = [p for d in SCANNED_PY for p in sorted((ROOT / d).rglob("*.py")) if p != Path(__file__).resolve()]
    md = [(p, "md", f"docs/{p.name}") for p in sorted((ROOT / "docs").glob("*.md"))]
    return [(p, "py", None) for p in py] + md + [(ROOT / "README.md", "md", None)]  # its links are from the root


def test_citations_stay_inside_the_repository():
    for path in (ROOT / "src").rglob("*.py"):
        assert not re.search(r"\bspec (§|A\d)|\bissue \d+", path.read_text(), flags=re.I), (
            f"{path} cites an outside document"
        )


def test_every_docs_reference_resolves_and_every_citing_sentence_is_whole():
    anchors = all_anchors()
    found = [
        f"{path.relative_to(ROOT)}: {p}"
        for path, kind, here in scanned()
        for p in problems(path.read_text(), kind, anchors, here)
    ]
    assert not found, "\n".join(found)


def test_the_checker_catches_each_kind_of_break():
    anchors = {"docs/conventions.md": {"wang-a1", "seeds"}, "docs/wang.md": {"what-is-implemented"}}
    ok = '"""Keys s = 2..L−1 (docs/conventions.md#wang-a1); ``seeds`` (``docs/conventions.md#seeds``)."""\n'
    assert problems(ok, "py", anchors) == []
    broken = {
        '"""Keys docs/conventions.md#wang-a1: s = 2..L−1)."""': "unmatched ')'",
        '"""Keys (docs/conventions.md#wang-a1.\n\nNext."""': "unclosed '('",
        "# the run axis `docs/conventions.md#seeds\n": "odd number of backticks",
        '"""the initialisation of (see docs/conventions.md)."""': "placeholder",
        '"""(docs/conventions.md#wang-a2)."""': "docs/conventions.md#wang-a2 does not exist",
        '"""(docs/nowhere.md#seeds)."""': "docs/nowhere.md does not exist",
        '"""(docs/conventions.md#wang-a1/A2)."""': "one anchor per reference",
    }
    for text, expected in broken.items():
        assert any(expected in p for p in problems(text, "py", anchors)), text
    md = "See [the list](wang.md#what-is-implemented) and [seeds](conventions.md#seeds).\n"
    assert problems(md, "md", anchors, "docs/architecture.md") == []
    assert problems("[x](wang.md#nope)\n", "md", anchors, "docs/chen.md") == ["docs/wang.md#nope does not exist"]
    assert problems("A [link](#nope (docs/wang.md).\n", "md", anchors, "docs/chen.md")  # unclosed
    assert slug("What is implemented (Wang et al.)") == "what-is-implemented-wang-et-al"


EQUATIONS = ROOT / "docs" / "equations.md"
TARGET = re.compile(r"`(src/[\w/]+\.py):([\w.]+)`")
TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
CITED = re.compile(r"\b(?:Theorem|Lemma|Proposition|Corollary|Assumption|Definition) (?:[A-H]\.)?\d+(?:\.\d+)?\b")


def defined_names(path: Path) -> set[str]:
    """The top-level functions and classes of a module, and the methods of its classes as ``Class.method``."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{m.name}" for m in node.body if isinstance(m, ast.FunctionDef)}
    return names


def missing_targets(text: str, root: Path = ROOT) -> list[str]:
    """Every `file:function` and `tests/…::test` of ``text`` whose file or definition does not exist."""
    found = []
    for rel, name in TARGET.findall(text) + TEST.findall(text):
        path = root / rel
        if not path.is_file():
            found.append(f"{rel} does not exist")
        elif name not in defined_names(path):
            found.append(f"{rel} defines no {name}")
    return found


def unmapped_rows(text: str) -> list[str]:
    """Table rows whose "implemented / checked by" cell (the second last) names no `file:function`, does not say
    "not implemented: <why>" and does not point to another row ("as …")."""
    found = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) < 3 or cells[0] in ("item", "result") or set(cells[0]) <= set("-"):
            continue
        cell = cells[-2]
        if not (TARGET.search(cell) or re.match(r"not implemented(?: as [\w ]+)?: \S", cell) or cell.startswith("as ")):
            found.append(line[:80])
    return found


def test_equations_md_names_functions_and_tests_that_exist():
    text = EQUATIONS.read_text()
    assert len(TARGET.findall(text)) > 100 and len(TEST.findall(text)) > 80  # the tables are there
    assert not missing_targets(text), "\n".join(missing_targets(text))
    assert not unmapped_rows(text), "\n".join(unmapped_rows(text))


def test_every_result_a_docstring_cites_has_a_row_in_equations_md():
    rows = {m for line in EQUATIONS.read_text().splitlines() if line.startswith("| ") for m in CITED.findall(line)}
    cited = {(m, p.name) for p in (ROOT / "src").rglob("*.py") for m in CITED.findall(p.read_text())}
    assert not {c for c in cited if c[0] not in rows}, sorted(c for c in cited if c[0] not in rows)


def test_the_equation_checkers_catch_a_missing_target_and_an_unmapped_row():
    ok = (
        "| eq. (4) | IH_2 | `src/inductionlab/tasks/induction.py:induction_head` | `tests/test_docs.py::test_docs_ok` |"
    )
    assert missing_targets(ok) == ["tests/test_docs.py defines no test_docs_ok"]
    assert missing_targets("`src/inductionlab/theory/mixed.py:PhaseTimes.as_dict`") == []
    assert missing_targets("`src/inductionlab/theory/mixed.py:no_such`") == [
        "src/inductionlab/theory/mixed.py defines no no_such"
    ]
    assert missing_targets("`src/inductionlab/nowhere.py:f`") == ["src/inductionlab/nowhere.py does not exist"]
    assert unmapped_rows(ok) == []
    assert unmapped_rows("| Lemma D.6 | Karamata | not implemented: a tool of the proof | — |") == []
    assert unmapped_rows("| Lemma D.6 | Karamata | see the proof | — |") == [
        "| Lemma D.6 | Karamata | see the proof | — |"
    ]
    assert unmapped_rows("| Lemma D.6 | Karamata | not implemented | — |")  # no reason given
