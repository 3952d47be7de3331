"""The results ledger (docs/conventions.md#ledger): one small JSON file per job in a committed folder
(``results/``), from which the page is rendered.

``results/<experiment>/<job>.json`` holds the job's key (:mod:`~inductionlab.store.key`: config hash, closure
digest and its files, software), its canonical config, the commit and CPU that made it, its core-minutes, the date
it finished and the summary the claims read; the main run's figures lie beside it in
``results/<experiment>/figures/``.  An entry is written only from a run made by the code at a commit — every file
of the job's closure tracked by git and unchanged — and atomically; one that cannot be read is named, never
overwritten (it is moved to ``<job>.json.damaged`` when its job is made again).

A job is *current* at a commit when its key there equals its entry's, *stale* when not (the entry says which file
of its closure changed, or which library), *missing* without an entry.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from inductionlab import experiments
from inductionlab.runs import CONFIG, SUMMARY, RunFileError, read_json, write_json
from inductionlab.store import closure, key, provenance
from inductionlab.store.layout import REMAKE

FORMAT = 1
MAX_WIDTH = 1400  # pixels of a stored figure
DROPPED = ("code", "versions", "profile")  # summary keys the key or the entry itself holds


class LedgerError(RunFileError):
    """A ledger entry cannot be written (uncommitted code, a run of other code) or read (damaged)."""


@dataclass(frozen=True)
class Status:
    """A planned job's state at this commit: ``current``, ``stale`` (``why``: what changed) or ``missing``."""

    job: str
    state: str
    why: str = ""
    entry: dict[str, Any] | None = field(default=None, compare=False)


def cpu() -> dict[str, str]:
    """This machine's CPU: model, vendor, torch's vector capability and the AVX-512 BF16 / AMX flags, and ``kind``
    ("AMD AVX512 +bf16"), by which the page sums core-minutes."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    lines = dict(ln.split(":", 1) for ln in text.splitlines() if ":" in ln)
    model = lines.get("model name\t", platform.processor() or platform.machine()).strip()
    flags = set(lines.get("flags\t\t", "").split())
    vendor = "AMD" if "AMD" in model else "Intel" if "Intel" in model else platform.machine()
    isa = torch.backends.cpu.get_cpu_capability()
    extras = [name for flag, name in (("avx512_bf16", "+bf16"), ("amx_tile", "+amx")) if flag in flags]
    return {"model": model, "vendor": vendor, "isa": isa, "kind": " ".join([vendor, isa, *extras])}


class Ledger:
    """The ledger folder ``root``; ``package``: the package whose git checkout must hold a job's code
    (:func:`committed`; a test points it at a scratch copy)."""

    def __init__(self, root: str | os.PathLike, package: Path = closure.PACKAGE) -> None:
        self.root, self.package = Path(root), Path(package)

    def path(self, experiment: str, job: str) -> Path:
        return self.root / experiment / f"{job}.json"

    def read(self, experiment: str, job: str) -> dict[str, Any] | None:
        """The entry of ``job`` (None without one); a damaged entry raises :class:`LedgerError` naming its file."""
        path = self.path(experiment, job)
        if not path.exists():
            return None
        try:
            entry = read_json(path, "a ledger entry", fix="make the job again: `inductionlab reproduce --ledger`")
        except RunFileError as err:
            raise LedgerError(str(err), path) from None
        if entry.get("format") != FORMAT or not isinstance(entry.get("key"), dict) or "summary" not in entry:
            raise LedgerError(f"{path} is not a ledger entry of format {FORMAT} (no key or summary)", path)
        return entry

    def entries(self) -> list[dict[str, Any]]:
        """Every readable entry, in path order (damaged ones are left out: :meth:`status` names them)."""
        out = []
        for path in sorted(self.root.glob("*/*.json")):
            try:
                entry = self.read(path.parent.name, path.stem)
            except LedgerError:
                continue
            if entry is not None:
                out.append(entry)
        return out

    def status(self, planned: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[Status]:
        """Each planned job's :class:`Status`; ``planned``: (experiment, job, resolved config) triples."""
        out = []
        for experiment, job, config in planned:
            try:
                entry = self.read(experiment, job)
            except LedgerError as err:
                out.append(Status(job, "missing", f"damaged entry: {err}"))
                continue
            if entry is None:
                out.append(Status(job, "missing", "no entry"))
                continue
            now = key.of_job(experiment, _with_recorded_data(experiment, config, entry))
            if now.id == entry["key"].get("id"):
                out.append(Status(job, "current", "", entry))
            else:
                out.append(Status(job, "stale", "; ".join(key.changes(entry["key"], now)) or "the key", entry))
        return out

    def add(self, experiment: str, jobs: list[str], run_dir: Path, budget: str) -> list[Path]:
        """Write the entries of ``jobs`` (one run: equal keys) from the finished run in ``run_dir``; refused
        (:class:`LedgerError`) unless the run was made by this code and that code is committed."""
        run_dir = Path(run_dir)
        summary = read_json(run_dir / SUMMARY, "a run's summary", fix=REMAKE)
        saved = read_json(run_dir / CONFIG, "a run's config", fix=REMAKE)
        made = provenance.made_by(run_dir)
        if made is not None:
            raise LedgerError(
                f"{run_dir} was made by {provenance.describe(made)}, not this code "
                f"({provenance.what_changed(made, experiment)}); make it again before it enters the ledger",
                run_dir,
            )
        config = {k: v for k, v in saved.items() if k not in ("experiment", "plugins", "code")}
        job_key = key.of_job(experiment, config)
        commit = committed(job_key.files, self.package)
        entry = {
            "format": FORMAT,
            "experiment": experiment,
            "budget": budget,
            "key": job_key.as_dict(),
            "config": key.canonical_config(experiment, config),
            "commit": commit,
            "cpu": cpu(),
            "threads": int(summary.get("threads", 1)),
            "core_minutes": round(float(summary.get("wall_seconds", 0.0)) * int(summary.get("threads", 1)) / 60, 3),
            "finished": dt.datetime.fromtimestamp((run_dir / SUMMARY).stat().st_mtime, dt.UTC).isoformat(
                timespec="seconds"
            ),
            "summary": {k: v for k, v in summary.items() if k not in DROPPED},
        }
        written = []
        for job in jobs:
            path = self.path(experiment, job)
            self._set_aside_damaged(experiment, job)
            if job == experiment:
                entry["figures"] = self._store_figures(experiment, run_dir)
            write_json(path, {"job": job, **entry})
            written.append(path)
        return written

    def _set_aside_damaged(self, experiment: str, job: str) -> None:
        try:
            self.read(experiment, job)
        except LedgerError:
            path = self.path(experiment, job)
            path.rename(path.with_name(path.name + ".damaged"))

    def _store_figures(self, experiment: str, run_dir: Path) -> list[str]:
        folder = self.root / experiment / "figures"
        names = []
        for png in sorted(run_dir.glob("*.png")):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / png.name).write_bytes(small_png(png.read_bytes()))
            names.append(png.name)
        return names

    def figures(self, experiment: str, entry: Mapping[str, Any] | None) -> list[tuple[str, bytes]]:
        folder = self.root / experiment / "figures"
        names = (entry or {}).get("figures", [])
        return [(n, (folder / n).read_bytes()) for n in names if (folder / n).exists()]


def small_png(data: bytes, max_width: int = MAX_WIDTH) -> bytes:
    """A figure scaled down to ``max_width`` pixels and a 256-colour palette (line plots lose nothing visible)."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    if image.width > max_width:
        size = (max_width, round(image.height * max_width / image.width))
        image = image.resize(size, Image.LANCZOS)  # type: ignore[attr-defined]  # Pillow makes its constants at import
    buffer = io.BytesIO()
    image.quantize(256).save(buffer, format="PNG")
    return buffer.getvalue()


def _with_recorded_data(experiment: str, config: Mapping[str, Any], entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """``config``, its data path (where the data is not here) taken from the entry's recorded digest, so that a
    checkout without the data can still tell the rest of a text job's key."""
    data_key = experiments.get(experiment).data
    if not data_key:
        return config
    node: Any = config
    for part in data_key.split("."):
        node = node.get(part, "") if isinstance(node, Mapping) else ""
    if node or os.environ.get(key.DATA_ENV):
        return config
    recorded: Any = entry.get("config", {})
    for part in data_key.split("."):
        recorded = recorded.get(part, "") if isinstance(recorded, Mapping) else ""
    out = json.loads(json.dumps(config))
    target = out
    *parents, leaf = data_key.split(".")
    for part in parents:
        target = target[part]
    target[leaf] = recorded
    return out


def committed(files: Mapping[str, str], package: Path = closure.PACKAGE) -> str:
    """The commit that holds every file of a closure unchanged (labels as :mod:`~inductionlab.store.closure`
    gives them, the package's under ``package``); :class:`LedgerError` naming the files that are untracked or
    differ from it."""
    paths = [_path_of(label, package) for label in files]
    try:
        top = _git(paths[0].parent, "rev-parse", "--show-toplevel")
        head = _git(Path(top), "rev-parse", "--short=12", "HEAD")
        tracked = set(_git(Path(top), "ls-files", "--", *map(str, paths)).splitlines())
        dirty = _git(Path(top), "status", "--porcelain", "--untracked-files=all", "--", *map(str, paths))
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        raise LedgerError(f"the job's code is in no git checkout ({err}); commit it first", paths[0]) from None
    untracked = [str(p) for p in paths if os.path.relpath(p, top) not in tracked]
    changed = [line[3:] for line in dirty.splitlines()]
    if untracked or changed:
        named = ", ".join((untracked + changed)[:5])
        raise LedgerError(
            f"a ledger entry is made only from committed code: {named} differ from commit {head}; commit first",
            paths[0],
        )
    return head


class LedgerSource:
    """The ledger, at this commit's keys, as the page's :class:`~inductionlab.store.layout.Source`: ``statuses``
    (:meth:`Ledger.status` of the planned jobs) say which entries are current; ``info``: the page's header facts."""

    def __init__(self, ledger: Ledger, statuses: list[Status], info: dict[str, Any]) -> None:
        self.ledger, self.info = ledger, info
        self.by_job = {s.job: s for s in statuses}

    def _entry(self, job: str) -> dict[str, Any] | None:
        status = self.by_job.get(job)
        return status.entry if status else None

    def summary(self, job: str) -> dict[str, Any] | None:
        entry = self._entry(job)
        return dict(entry["summary"]) if entry else None

    def config(self, job: str) -> dict[str, Any]:
        entry = self._entry(job)
        return dict(entry["config"]) if entry else {}

    def failure(self, job: str) -> str:
        status = self.by_job.get(job)
        return f"not in the ledger ({status.why if status else 'not planned'})"

    def stale(self, job: str) -> str:
        status = self.by_job.get(job)
        return f"{job} stale: {status.why}" if status and status.state == "stale" else ""

    def figures(self, experiment: str) -> list[tuple[str, bytes]]:
        return self.ledger.figures(experiment, self._entry(experiment))


def _path_of(label: str, package: Path) -> Path:
    head, _, rest = label.partition("/")
    return package.joinpath(rest) if head == closure.NAME else Path(label)


def _git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True, timeout=30)
    return done.stdout.strip()
