"""``report.html`` of a reproduce directory: one self-contained page (docs/conventions.md#claims).

Every figure is embedded as a base64 PNG and the styles are inline, so the page needs no network and reads the
same when mailed.  Layout: a header (budget, wall time, host, versions), a summary bar (counts per status), then
a table of contents (every experiment and claim, linked), then one section per paper, and in it one block per
experiment: its claims (status, claim, measured, expected, test, negative control, note) beside the run's figures.
A failed claim's note says what kind of failure it is (docs/conventions.md#findings): *a finding about the paper*,
with its evidence (the paper's sentence, the in-regime run, the independent re-implementation), or *open*; claims
not judged at this scale and undefined values are counted apart from failures; the control column gives the
control's verdict, and an undefined control is no control (docs/conventions.md#controls).
"""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from inductionlab import experiments
from inductionlab.analysis import power
from inductionlab.analysis.claims import (
    CONTROL_STATUSES,
    DID_NOT_LEARN,
    FINDING,
    PAPERS,
    SCALE,
    STATUSES,
    UNEARNED,
)
from inductionlab.analysis.verdicts import earn, judge_control
from inductionlab.analysis.verdicts import judge as judge_claim
from inductionlab.runs import write_text
from inductionlab.store import provenance
from inductionlab.store.layout import Source, calibration_job, draw_job
from inductionlab.store.plan import calibration_draws, control_jobs

MAX_WIDTH = 1400  # pixels of an embedded figure
OBSERVATIONS = "Observations (not the papers' claims)"
COLORS = {
    "passed": "#1a7f37",
    UNEARNED: "#d4a72c",
    "failed": "#cf222e",
    DID_NOT_LEARN: "#9a6700",
    "undefined": "#8250df",
    SCALE: "#0969da",
    "not run": "#6e7781",
    "smoke, not judged": "#bf8700",
    "rejects": "#1a7f37",
    "accepts": "#cf222e",
}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #1f2328; padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #d0d7de; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin: 1.4em 0 0.4em; } .meta { color: #57606a; font-size: 0.9em; }
.bar { display: flex; height: 28px; border-radius: 6px; overflow: hidden; margin: 1em 0 0.4em; }
.bar div { color: white; font-size: 0.85em; display: flex; align-items: center; justify-content: center; }
.counts span { margin-right: 1.4em; font-weight: 600; }
.block { display: flex; gap: 1.2em; align-items: flex-start; flex-wrap: wrap; }
.block table { flex: 1 1 620px; border-collapse: collapse; font-size: 0.9em; }
.block th, .block td { border-bottom: 1px solid #d0d7de; padding: 0.35em 0.5em; text-align: left; vertical-align: top; }
.figs { flex: 0 1 640px; } .figs img { width: 100%; max-height: 480px; object-fit: contain; border: 1px solid #d0d7de;
  margin-bottom: 0.5em; }
.badge { color: white; border-radius: 4px; padding: 0.1em 0.45em; font-size: 0.8em; white-space: nowrap; }
.id { font-family: ui-monospace, monospace; font-size: 0.85em; color: #57606a; }
.stale { font-size: 0.85em; color: #9a6700; font-weight: bold; }
code { font-size: 0.85em; } .toc { columns: 3 320px; font-size: 0.85em; } .toc ul { margin: 0.2em 0; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def embed_png(name: str, data: bytes, where: str, max_width: int = MAX_WIDTH) -> str:
    """An <img> with the PNG ``data`` as a data URI, scaled down to ``max_width`` pixels and to a 256-colour palette
    (Pillow, which matplotlib requires) so that the page stays a few megabytes; ``where``: its run, as a title."""
    from inductionlab.store.ledger import small_png

    encoded = base64.b64encode(small_png(data, max_width)).decode("ascii")
    return f'<img alt="{_e(name)}" title="{_e(where)}/{_e(name)}" src="data:image/png;base64,{encoded}">'


def judge(source: Source, names: list[str], paper: str, smoke: bool) -> pd.DataFrame:
    """One row per claim of ``paper`` ("all": every paper) of the experiments ``names``, judged against the
    source's runs, with its negative control's verdict beside it (docs/conventions.md#claims)."""
    rows = []
    for name in [n for n in experiments.all_experiments() if n in names]:
        exp = experiments.get(name)
        summary, config = source.summary(name), source.config(name)
        draws = [source.summary(draw_job(name, i)) for i in range(1, exp.draws)] if not smoke else []
        reason = source.info.get("skipped", {}).get(name) or source.failure(name)
        gpu = str(config.get("device", "cpu")).startswith("cuda")
        breaks = {c.name: c.breaks for c in exp.controls}
        calibration = _fresh(source, [calibration_job(name, i) for i in range(calibration_draws(name))])
        for claim in [c for c in exp.claims if paper in ("all", c.paper)]:
            row = judge_claim(claim, summary, smoke=smoke, gpu=gpu, reason=reason, draws=draws)
            controls = control_jobs(name, claim.control)[: 1 if smoke else None]
            control = [source.summary(job) for job in controls]
            row = earn(row | judge_control(claim, control, smoke=smoke), claim)
            row["control_breaks"] = breaks.get(claim.control, "")
            jobs = [name, *(draw_job(name, i) for i in range(1, exp.draws) if not smoke), *controls]
            row["made_by"] = "; ".join(m for m in map(source.stale, jobs) if m)
            # the planned judged values (a run's values times the draws), however many draws have landed
            landed = [s for s in [summary, *draws] if s is not None]
            judged = len(power.per_seed(claim, landed[:1])) * exp.draws or claim.seeds or exp.draws
            fresh = [None if source.stale(job) else c for job, c in zip(controls, control)]  # as _fresh, read once
            row |= power.columns(claim, calibration, judged, fresh)
            rows.append({**row, "experiment": name, "run_dir": name})
    return pd.DataFrame(rows)


def _fresh(source: Source, jobs: list[str]) -> list[dict[str, Any] | None]:
    """The summaries of ``jobs`` made by this code (None for the others): a calibration or control run made by other
    code powers nothing, since a protocol is powered at the code it judges with (docs/conventions.md#calibration);
    the verdict beside it names the runs that other code made."""
    return [None if source.stale(job) else source.summary(job) for job in jobs]


def _badge(status: str) -> str:
    return f'<span class="badge" style="background:{COLORS[status]}">{_e(status)}</span>'


def summary_bar(table: pd.DataFrame) -> str:
    """The stacked bar and the counts per status."""
    counts = {s: int((table.status == s).sum()) for s in STATUSES} if len(table) else dict.fromkeys(STATUSES, 0)
    total = max(sum(counts.values()), 1)
    parts = "".join(
        f'<div style="width:{100 * n / total:.2f}%;background:{COLORS[s]}" title="{_e(s)}">{n}</div>'
        for s, n in counts.items()
        if n
    )
    text = "".join(f'<span style="color:{COLORS[s]}">{n} {_e(s)}{_kinds(table, s)}</span>' for s, n in counts.items())
    return f'<div class="bar">{parts}</div><div class="counts">{sum(counts.values())} claims: {text}</div>'


def _kinds(table: pd.DataFrame, status: str) -> str:
    """After the failed count: how many are findings about the paper and how many are open."""
    if status != "failed" or not len(table) or "kind" not in table:
        return ""
    failed = table[table.status == "failed"]
    findings = int((failed.kind == FINDING).sum())
    return f" ({findings} findings about the paper, {len(failed) - findings} open)"


def _note(r: pd.Series) -> str:
    """The note of a claim's row: for a failed claim, the measured value, its kind and, for a finding, the evidence;
    for a claim over seeds, the per-seed values."""
    if r["status"] == "smoke, not judged":
        return ""
    seeds = f'<div class="id">per seed: {_e(r["per_seed"])}</div>' if r.get("per_seed") else ""
    if r.get("learned"):
        seeds += f'<div class="id">{_e(r["learned"])}</div>'
    if r["status"] != "failed":
        return _e(r["reason"]) + seeds
    kind, _, why = (r.get("if_failed") or "open: not yet explained.").partition(":")
    evidence = "".join(
        f"<div><i>{_e(part)}</i>:{_e(text)}</div>"
        for part, _, text in (line.partition(":") for line in str(r.get("evidence") or "").splitlines())
    )
    return f"{_e(r['reason'])}. <b>{_e(kind)}</b>:{_e(why)}{evidence}{seeds}"


def _control(r: pd.Series) -> str:
    """The control column: its verdict, what it breaks and what the claim's key measured on it."""
    if not r.get("control"):
        return '<span class="meta">none</span>'
    return (
        f"{_badge(r['control_status'])} <div>{_e(r['control_breaks'])}</div>"
        f'<div class="id">{_e(r["control"])} · measured {_e(r["control_measured_text"])}</div>'
    )


def _row(r: pd.Series) -> str:
    return (
        f'<tr id="claim-{_e(r["id"])}" data-status="{_e(r["status"])}" data-measured="{_e(r["measured_text"])}" '
        f'data-margin="{_e(r.get("margin_text") or "")}" data-control="{_e(r.get("control_status") or "")}">'
        f"<td>{_badge(r['status'])}</td><td><div>{_e(r['statement'])}</div>"
        f'<div class="id">{_e(r["id"])} · {_e(r["where"])} · <code>{_e(r["key"])}</code></div>'
        + (f'<div class="stale">{_e(r["made_by"])}</div>' if r.get("made_by") else "")
        + f"</td><td>{_e(r['measured_text'])}</td><td>{_margin(r)}</td><td>{_e(r['expected'])}</td>"
        f"<td>{_e(r['test'])}</td><td>{_control(r)}</td><td>{_note(r)}</td></tr>"
    )


def _margin(r: pd.Series) -> str:
    """The margin column: the protocol's power from its calibration seeds (docs/conventions.md#calibration)."""
    text = str(r.get("margin_text") or "—")
    if r.get("group") == "observation" or r.get("margin") is None:
        return f'<span class="meta">{_e(text)}</span>'
    colour = COLORS["passed"] if r.get("powered") else COLORS["undefined"]
    need = r.get("draws_needed")
    extra = "" if r.get("powered") or need is None or pd.isna(need) else f"; {int(need)} draws would power it"
    return f'<span style="color:{colour}">{_e(text)}{_e(extra)}</span>'


def power_line(table: pd.DataFrame) -> str:
    """How many paper claims are powered (margin ≥ 1.645 from their calibration seeds), underpowered, or have no
    calibration run yet (docs/conventions.md#calibration); a claim not judged at this scale is counted apart."""
    if not len(table) or "margin" not in table:
        return ""
    papers = table[(table.group != "observation") & (table.status != SCALE)]
    calibrated = ~papers.margin_text.str.startswith("no calibration run")
    waiting = calibrated & (papers.get("unpowered", "") == "its control has not run")  # its control's margin unknown
    powered = int((papers.powered.fillna(False).astype(bool) & calibrated).sum())
    return (
        f'<p class="counts">Power (docs/conventions.md#calibration): of {len(papers)} paper claims judged at this '
        f'scale, <span style="color:{COLORS["passed"]}">{powered} powered</span>, '
        f'<span style="color:{COLORS["undefined"]}">{int(calibrated.sum()) - powered - int(waiting.sum())} '
        f"underpowered</span>, {int(waiting.sum())} awaiting their control's run, {int((~calibrated).sum())} without "
        "a calibration run.</p>"
    )


def controls_line(table: pd.DataFrame) -> str:
    """How many claims have a negative control, and each control's verdict: an undefined control (its value missing
    on the control run) is counted apart, never as a rejection."""
    if not len(table) or "control_status" not in table:
        return ""
    counts = {s: int((table.control_status == s).sum()) for s in CONTROL_STATUSES}
    with_control = int((table.control != "").sum())
    parts = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return (
        f'<p class="counts">Negative controls: {with_control} of {len(table)} claims have one; '
        f'<span style="color:{COLORS["rejects"]}">{counts["rejects"]} reject the claim\'s check on a defined '
        f'value</span>, <span style="color:{COLORS["accepts"]}">{counts["accepts"]} accept it</span>, '
        f'<span style="color:{COLORS["undefined"]}">{counts["undefined"]} undefined</span> ({parts}).</p>'
    )


def papers_in(table: pd.DataFrame) -> dict[str, str]:
    """The sources of the table's claims, by name: the three papers first, then any other (its name as title)."""
    others = [p for p in dict.fromkeys(table.paper) if p not in PAPERS] if len(table) else []
    return {**PAPERS, **{p: p for p in others}}


def toc(table: pd.DataFrame) -> str:
    """Every paper, experiment and claim, linked."""
    items = []
    for paper, title in papers_in(table).items():
        rows = table[table.paper == paper] if len(table) else table
        if not len(rows):
            continue
        exps = "".join(
            f'<li><a href="#{_e(name)}">{_e(name)}</a>: '
            + ", ".join(f'<a href="#claim-{_e(i)}">{_e(i)}</a>' for i in g.id)
            + "</li>"
            for name, g in rows.groupby("experiment", sort=False)
        )
        items.append(f'<li><a href="#{paper}">{_e(title)}</a><ul>{exps}</ul></li>')
    return f'<h2>Contents</h2><ul class="toc">{"".join(items)}</ul>'


def _block(source: Source, name: str, rows: pd.DataFrame, shown: frozenset[str] = frozenset()) -> str:
    """One experiment's table of claims beside its run's figures (those of an experiment in ``shown``, whose
    figures the page already holds, are pointed to, not embedded twice)."""
    exp = experiments.get(name)
    imgs = "".join(embed_png(f, data, name) for f, data in source.figures(name)) if name not in shown else ""
    if name in shown and source.figures(name):
        imgs = f'<p class="meta">figures: <a href="#{_e(name)}">above</a></p>'
    head = (
        "<tr><th>status</th><th>claim</th><th>measured</th><th>margin</th><th>paper / theory</th><th>test</th>"
        "<th>negative control</th><th>note</th></tr>"
    )
    return (
        f'<h3 id="{_e(name + ("-observations" if name in shown else ""))}">{_e(name)} <span class="meta">{_e(f"— {exp.figure}; " if exp.figure else "— ")}run <code>{_e(name)}</code>'
        f"</span></h3>"
        f'<div class="block"><table>{head}{"".join(_row(r) for _, r in rows.iterrows())}</table>'
        f'<div class="figs">{imgs or "<p class=meta>no figure</p>"}</div></div>'
    )


_CALIBRATION = (
    '<p class="meta"><b>Calibration seeds</b> (every seed moved up by 1000): this page chooses protocols before the judged '
    "draws (docs/conventions.md#calibration); its verdicts say nothing about the papers.</p>"
)


def _header(info: dict) -> str:
    wall = info.get("wall_seconds")
    versions = " · ".join(f"{_e(k)} {_e(v)}" for k, v in info.get("versions", {}).items())
    skipped = "".join(f"<li><code>{_e(k)}</code>: {_e(v)}</li>" for k, v in info.get("skipped", {}).items())
    return (
        (_CALIBRATION if info.get("calibration") else "")
        + f'<p class="meta">Made by <code>inductionlab reproduce --paper {_e(info["paper"])} --budget '
        f"{_e(info['budget'])}{' --calibrate' if info.get('calibration') else ''}</code> on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; wall time "
        f"{'—' if wall is None else f'{wall / 60:.1f} min'} (runs it reused cost nothing; the runs' own wall "
        f"times add up to {info.get('runs_wall_seconds', 0.0) / 60:.1f} min, the other data draws' to "
        f"{info.get('draws_wall_seconds', 0.0) / 60:.1f} min, the negative controls' to "
        f"{info.get('controls_wall_seconds', 0.0) / 60:.1f} min); host {_e(info.get('host', '—'))}.</p>"
        + _code(info)
        + _where(info.get("profile", {}))
        + _cost(info.get("core_minutes", {}))
        + f'<p class="meta">Versions: {versions}.</p>'
        + (f'<ul class="meta">{skipped}</ul>' if skipped else "")
    )


def _code(info: dict) -> str:
    """How many of the page's runs other code made (docs/conventions.md#provenance): each experiment's runs are
    keyed by the closure of its code, so a run is current while the files its run imports are unchanged."""
    if "stale_runs" not in info:
        return ""
    stale = info["stale_runs"]
    listed = "".join(f"<li><code>{_e(d)}</code>: {_e(c)}</li>" for d, c in stale.items())
    return (
        f'<p class="meta">Commit {_e(provenance.commit() or "—")}. Runs made by other code than their experiment\'s '
        f"closure here (kept with <code>--reuse-stale</code>): <b>{len(stale)}</b>.</p>"
        + (f'<ul class="meta">{listed}</ul>' if listed else "")
    )


def _cost(cost: dict[str, dict[str, float]]) -> str:
    """The core-minutes per experiment (wall time × threads): main run, other data draws, negative controls."""
    if not cost:
        return ""
    rows = "".join(
        f"<tr><td>{_e(n)}</td>" + "".join(f"<td>{v:.1f}</td>" for v in (*c.values(), sum(c.values()))) + "</tr>"
        for n, c in sorted(cost.items(), key=lambda kv: -sum(kv[1].values()))
    )
    total = [sum(c[k] for c in cost.values()) for k in ("main", "draws", "controls")]
    foot = "<tr><td><b>all</b></td>" + "".join(f"<td><b>{v:.1f}</b></td>" for v in (*total, sum(total))) + "</tr>"
    return (
        '<details class="meta"><summary>Core-minutes per experiment (wall time × threads): '
        f"{sum(total):.1f} in all</summary><table><tr><th>experiment</th><th>main</th><th>draws</th>"
        f"<th>controls</th><th>all</th></tr>{rows}{foot}</table></details>"
    )


def _where(profile: dict[str, float]) -> str:
    """Where the runs' time went, summed over them (docs/conventions.md#profile)."""
    total = sum(profile.values())
    if total <= 0:
        return ""
    parts = ", ".join(f"{_e(k)} {v / 60:.1f} min ({100 * v / total:.0f} %)" for k, v in profile.items() if v >= 0.5)
    return f'<p class="meta">Where the runs\' time went: {parts}.</p>'


def render_html(source: Source, table: pd.DataFrame) -> str:
    """The whole page as a string."""
    sections = []
    papers, observed = split_observations(table)
    for paper, title in papers_in(papers).items():
        rows = papers[papers.paper == paper] if len(papers) else papers
        if not len(rows):
            continue
        blocks = "".join(_block(source, name, g) for name, g in rows.groupby("experiment", sort=False))
        sections.append(f'<h2 id="{paper}">{_e(title)}</h2>{summary_bar(rows)}{blocks}')
    if len(observed):
        shown = frozenset(papers.experiment) if len(papers) else frozenset[str]()
        blocks = "".join(_block(source, name, g, shown) for name, g in observed.groupby("experiment", sort=False))
        sections.append(
            f'<h2 id="observations">{_e(OBSERVATIONS)}</h2><p class="meta">The project\'s own observations and '
            f"robustness notes: counted apart from the papers' claims; no control is asked of them.</p>"
            f"{summary_bar(observed)}{blocks}"
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>inductionlab: claims</title>'
        f"<style>{STYLE}</style></head><body><h1>inductionlab — the papers' claims, measured</h1>"
        f"{source.info.get('header_html') or _header(source.info)}{summary_bar(papers)}{controls_line(papers)}{power_line(papers)}{toc(table)}{''.join(sections)}</body></html>\n"
    )


def split_observations(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the papers' claims, the project's own observations) of a claims table (docs/conventions.md#claims)."""
    if not len(table) or "group" not in table:
        return table, table.iloc[0:0]
    return table[table.group != "observation"], table[table.group == "observation"]


def write_report(path: Path, source: Source, table: pd.DataFrame) -> Path:
    """Write the page of ``table`` (judged from ``source``) to ``path`` (atomically); return its path."""
    write_text(Path(path), render_html(source, table))
    return path
