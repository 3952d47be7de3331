"""The page rendered from the committed ledger (docs/conventions.md#ledger): every claim of the full budget judged
from the ledger's entries and the claims' current code, at this commit's keys.

The header says at which commit the page was rendered, how many of the page's jobs are current there (the stale
and missing ones listed, each with the file of its closure that changed), the ledger's core-minutes by CPU kind,
the dates of its runs and the last audit (``reproduce --audit``).  Nothing of the moment enters it: two renders of
one ledger at one commit are byte-identical.  The counts are also in a ``<meta name="inductionlab-ledger">`` tag,
which ``report --ledger DIR --check`` reads back.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from inductionlab.analysis.claims import SCALE
from inductionlab.claims_report import judge, render_html
from inductionlab.runs import read_json, write_text
from inductionlab.store import provenance
from inductionlab.store.layout import job_name
from inductionlab.store.ledger import Ledger, LedgerSource, Status
from inductionlab.store.plan import plan

PAGE = Path("docs/report.html")
AUDIT = "audit.json"  # the last audit's record, in the ledger's folder
META = re.compile(r'<meta name="inductionlab-ledger" content="([^"]*)">')
CONVENTIONS = "conventions.md"  # beside the page: its margins block (docs/conventions.md#calibration)
MARGINS = re.compile(r"(<!-- margins: begin -->\n).*?(<!-- margins: end -->)", re.S)


def planned(data: str = "", scratch: Path = Path("reproduce")) -> list[tuple[str, str, dict[str, Any]]]:
    """The full page's jobs as (experiment, job name, resolved config), in plan order: the judged ones, then the
    calibration runs its margins are computed from (docs/conventions.md#calibration)."""
    judged = plan("all", "full", scratch, data, without_data=True)[0]
    jobs = judged + plan("all", "full", scratch, data, calibrate=True, without_data=True)[0]
    return [(j.experiment, job_name(j), j.config) for j in jobs]


def counts(statuses: list[Status]) -> dict[str, int]:
    """How many planned jobs are current, stale and missing, and how many there are."""
    out = {s: sum(x.state == s for x in statuses) for s in ("current", "stale", "missing")}
    return {"jobs": len(statuses), **out}


def header(statuses: list[Status], ledger: Ledger, commit: str) -> dict[str, Any]:
    """The facts the ledger page's header states (:func:`header_html`)."""
    entries = [s.entry for s in statuses if s.entry]
    by_cpu: dict[str, float] = {}
    for entry in entries:
        kind = str(entry.get("cpu", {}).get("kind", "unknown"))
        by_cpu[kind] = by_cpu.get(kind, 0.0) + float(entry.get("core_minutes", 0.0))
    dates = sorted(str(e.get("finished", "")) for e in entries if e.get("finished"))
    audit = read_json(ledger.root / AUDIT, "the last audit", {}) if (ledger.root / AUDIT).exists() else {}
    return {
        "ledger": {
            "root": ledger.root.as_posix(),
            "commit": commit,
            **counts(statuses),
            "by_cpu": dict(sorted(by_cpu.items())),
            "dates": [dates[0][:10], dates[-1][:10]] if dates else [],
            "not_current": [(s.job, s.state, s.why) for s in statuses if s.state != "current"],
            "audit": audit,
        },
        "paper": "all",
        "budget": "full",
        "skipped": {},
    }


def header_html(info: Mapping[str, Any]) -> str:
    """The ledger page's header: commit, jobs current, what is not, core-minutes by CPU, dates, the last audit."""
    led = info["ledger"]
    e = html.escape
    meta = ";".join(f"{k}={led[k]}" for k in ("commit", "jobs", "current", "stale", "missing"))
    cpu = ", ".join(f"{e(k)} {v:.1f}" for k, v in led["by_cpu"].items()) or "none"
    listed = "".join(f"<li><code>{e(j)}</code> {e(s)}: {e(w)}</li>" for j, s, w in led["not_current"])
    dates = " to ".join(led["dates"]) or "—"
    audit = led.get("audit") or {}
    audited = (
        f"Last audit: {audit.get('agreed', 0)} of {audit.get('entries', 0)} entries re-made agreed, on "
        f"{e(str(audit.get('cpu', '—')))} at commit {e(str(audit.get('commit', '—')))} ({e(str(audit.get('date', '')))}"
        f"{'; drawn ' + e(str(audit['drawn'])) if audit.get('drawn') else ''}"
        f"{' from the ' + e(str(audit['comparable'])) + ' comparable there' if audit.get('comparable') else ''})."
        if audit
        else "No audit yet (<code>inductionlab reproduce --ledger DIR --audit N</code>)."
    )
    return (
        f'<meta name="inductionlab-ledger" content="{e(meta)}">'
        f'<p class="meta">Rendered at commit <b>{e(led["commit"] or "—")}</b> from the ledger '
        f"<code>{e(led['root'])}/</code> by <code>inductionlab report --ledger {e(led['root'])}</code>: "
        f"<b>{led['current']} of {led['jobs']} jobs current</b> at that commit, {led['stale']} stale, "
        f"{led['missing']} missing (docs/conventions.md#ledger). Runs finished {e(dates)}; core-minutes in the "
        f"ledger by CPU kind: {cpu}. {audited}</p>" + (f'<ul class="meta">{listed}</ul>' if listed else "")
    )


def render(root: str | Path, page: str | Path = PAGE, data: str = "") -> pd.DataFrame:
    """Judge every claim from the ledger at ``root`` and write the page to ``page``; returns the claims table.  The
    margins block of ``conventions.md`` beside the page, where it holds one, is rewritten from the same table
    (:func:`margins_markdown`)."""
    ledger, jobs = Ledger(root), planned(data)
    statuses = ledger.status(jobs)
    info = header(statuses, ledger, provenance.commit())
    source = LedgerSource(ledger, statuses, info | {"header_html": header_html(info)})
    table = judge(source, sorted({e for e, _, _ in jobs}), "all", smoke=False)
    write_text(Path(page), render_html(source, table))
    conventions = Path(page).parent / CONVENTIONS
    text = conventions.read_text(encoding="utf-8") if conventions.exists() else ""
    if MARGINS.search(text):
        write_text(conventions, MARGINS.sub(lambda m: m[1] + margins_markdown(table) + m[2], text))
    return table


def margins_markdown(table: pd.DataFrame) -> str:
    """One row per paper claim: its calibration mean m and standard deviation s, its judged values n, its margin,
    its control's values k (one per seed over its draws) and margin, and whether it is powered
    (docs/conventions.md#calibration)."""
    lines = [
        "| claim | m | s | n | margin | control (k values) | control margin | powered |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table[table.group == "paper"].itertuples():
        if str(r.margin_text).startswith("no calibration run"):
            lines.append(f"| `{r.id}` | {r.margin_text} | | | | {r.control or '—'} | | |")
            continue
        k = getattr(r, "control_k", None)
        control = f"{r.control} ({int(k)})" if r.control and k is not None and not pd.isna(k) else r.control or "—"
        why = str(getattr(r, "unpowered", "") or "")
        powered = "yes" if r.powered else ("not judged at this scale" if r.status == SCALE else f"**no**: {why}")
        powered = "its control not run yet" if why == "its control has not run" and r.status != SCALE else powered
        lines.append(
            f"| `{r.id}` | {_g(r.calibration_m, 4)} | {_g(r.calibration_s, 2)} | {int(r.judged_n)} | {_g(r.margin, 2)} "
            f"| {control} | {_g(getattr(r, 'control_margin', None), 2)} | {powered} |"
        )
    return "\n".join(lines) + "\n"


def _g(x: Any, digits: int) -> str:
    if x is None or pd.isna(x):
        return "—"
    return "∞" if x == float("inf") else f"{x:.{digits}g}"


def check(root: str | Path, page: str | Path = PAGE, data: str = "") -> tuple[dict[str, int], dict[str, str]]:
    """(the counts at this commit, what the committed page says): ``report --ledger DIR --check``."""
    statuses = Ledger(root).status(planned(data))
    text = Path(page).read_text(encoding="utf-8") if Path(page).exists() else ""
    found = META.search(text)
    said = dict(part.split("=", 1) for part in html.unescape(found.group(1)).split(";")) if found else {}
    return counts(statuses), said
