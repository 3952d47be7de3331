"""The monitor after the fact (docs/monitor.md#the-watch-command): an ordered series of checkpoints
(:mod:`inductionlab.monitor.series`: the ``checkpoint-STEP`` folders a HuggingFace ``Trainer`` saved, any
``save_pretrained`` folders named by their step, TransformerLens state dicts, a toolkit run that kept its
checkpoints), each loaded and measured by one :class:`~inductionlab.monitor.core.Monitor` in step order, gives the
same tables and phase change as a monitor that ran during training (docs/monitor.md#phase-detection), written
beside the checkpoints with the monitor's figure.

``transformers`` is imported only when a directory of HuggingFace checkpoints is watched (the ``hf`` extra, checked
before any checkpoint is read; docs/conventions.md#extras)."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np

from inductionlab.config import ConfigError, require
from inductionlab.extras import MissingExtra
from inductionlab.extras import require as require_extra
from inductionlab.monitor.adapters import AdapterError
from inductionlab.monitor.core import Monitor
from inductionlab.monitor.figure import plot_monitor
from inductionlab.monitor.llc import LLCConfig
from inductionlab.monitor.pick import adapter_for
from inductionlab.monitor.series import HF, Series, find_series, no_series
from inductionlab.monitor.settings import MonitorConfig
from inductionlab.runs import write_parquet

CHECKPOINT = re.compile(r"checkpoint-([0-9]+)")
FILES = ("watch_heads.parquet", "watch_steps.parquet", "watch.png")
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
log = logging.getLogger(__name__)


def _step(folder: Path, number: int) -> int:
    """The ``global_step`` of the folder's ``trainer_state.json``; the number in its name when it has none, or one
    that cannot be read (said in a log line)."""
    state = folder / "trainer_state.json"
    if not state.is_file():
        return number
    try:
        step = json.loads(state.read_text(encoding="utf-8"))["global_step"]
        if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
            return step
        why = f"its global_step is {step!r}, not a step"
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        why = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:120]}"
    log.warning("watch: %s cannot be read (%s); using the step %d in the folder's name", state, why, number)
    return number


def checkpoints(directory: str | Path) -> list[tuple[int, Path]]:
    """The ``checkpoint-STEP`` folders of a Trainer output directory as (step, folder), by step; the step is the
    ``global_step`` of the folder's ``trainer_state.json`` when it has a readable one, else the number in its name.
    Complete or not: :func:`incomplete` says why a folder cannot be measured."""
    found: dict[int, Path] = {}
    for folder in sorted(Path(directory).iterdir()) if Path(directory).is_dir() else ():
        match = CHECKPOINT.fullmatch(folder.name)
        if match and folder.is_dir():
            step = _step(folder, int(match[1]))
            require(step not in found, "directory", f"{found.get(step)} and {folder} are both step {step}: keep one")
            found[step] = folder
    return sorted(found.items())


def _safetensors_gap(path: Path) -> str | None:
    """Why a safetensors file is not whole (its size against what its header promises); None when it is."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        raw = f.read(n) if 0 <= n <= size - 8 else b""
    try:
        header = json.loads(raw)
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return f"{path.name} is truncated or damaged (its header cannot be read; {size} bytes)"
    if 8 + n + end != size:
        return f"{path.name} holds {size} bytes, its header promises {8 + n + end}: truncated (still being written?)"
    return None


def _weights_gap(folder: Path) -> str | None:
    """Why a checkpoint folder's weights are incomplete; None when they look whole."""
    present = [name for name in WEIGHTS if (folder / name).is_file()]
    if not present:
        return f"no weights ({' or '.join(WEIGHTS[::2])}): the Trainer is still writing it, or it is not a checkpoint"
    if present[0] == "model.safetensors":
        return _safetensors_gap(folder / present[0])
    if present[0].endswith(".index.json"):
        try:
            shards = set(json.loads((folder / present[0]).read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            return f"{present[0]} is damaged ({type(err).__name__})"
        missing = sorted(str(s) for s in shards if not (folder / str(s)).is_file())
        if missing:
            return f"shards missing: {', '.join(missing[:4])}"
        gaps = [_safetensors_gap(folder / s) for s in sorted(shards) if str(s).endswith(".safetensors")]
        return next((g for g in gaps if g), None)
    return None  # pytorch_model.bin: read (and refused if damaged) when loaded


def _not_causal(config: dict) -> str | None:
    """Why a checkpoint's config.json is not that of a causal language model; None when it is."""
    causal = require_extra("transformers.models.auto.modeling_auto", HF).MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    kind, listed = str(config.get("model_type")), config.get("architectures")
    saved = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
    if kind not in causal:
        return f"its model type {kind!r} is not a causal language model (transformers has no causal LM for it)"
    if saved and not any(name in causal.values() for name in saved):
        return (
            f"it was saved as {', '.join(saved)}, not a causal language model (such as {causal[kind]}); "
            "the monitor measures causal LMs only"
        )
    return None


def incomplete(folder: str | Path) -> str | None:
    """Why the checkpoint ``folder`` cannot be measured — no or a damaged ``config.json``, a model that is not a
    causal LM, weights missing or truncated (a Trainer still writing) — or None when it looks complete."""
    folder, config = Path(folder), Path(folder) / "config.json"
    if not config.is_file():
        return "no config.json: the Trainer is still writing it, or it is not a model checkpoint"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return f"config.json is damaged ({type(err).__name__})"
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        return "config.json names no model_type: not a transformers model's"
    return _not_causal(data) or _weights_gap(folder)


def trainer_dirs(directory: str | Path) -> list[Path]:
    """``directory`` when it holds checkpoint-* folders, else its subfolders that do (an hf-induction run of
    several seeds keeps one Trainer output directory per seed: RUN/hf/seed-0, seed-1, ...)."""
    directory = Path(directory)
    if checkpoints(directory):
        return [directory]
    subs = sorted(d for d in directory.iterdir() if d.is_dir()) if directory.is_dir() else []
    return [d for d in subs if any(CHECKPOINT.fullmatch(c.name) and c.is_dir() for c in d.iterdir())]


def _no_checkpoints(directory: Path) -> ConfigError:
    subs = trainer_dirs(directory)
    if subs:
        each = " ; ".join(f"inductionlab watch {d}" for d in subs)
        return ConfigError(
            f"watch: {directory} holds no checkpoint-* folders itself; its subfolders {', '.join(d.name for d in subs)} "
            f"do (one Trainer output directory per seed): watch each of them: {each}"
        )
    return no_series(directory)


def _skip(skipped: list[str], folder: Path, why: str) -> None:
    """One log line (and one entry of ``skipped``) naming a checkpoint that is not measured and why."""
    log.warning("watch: skipped %s: %s", folder, why)
    skipped.append(f"{folder.name}: {why}")


def _complete(series: Series, every: int, skipped: list[str]) -> list[tuple[int, Path]]:
    """The complete checkpoints whose step is a multiple of ``every`` (the last complete one always)."""
    whole = []
    for step, folder in series.items:
        why = series.incomplete(folder)
        if why:
            _skip(skipped, folder, why)
        else:
            whole.append((step, folder))
    return [(step, folder) for step, folder in whole[:-1] if step % every == 0] + whole[-1:]


def watch(
    directory: str | Path,
    config: MonitorConfig = MonitorConfig(),
    every: int = 1,
    template: Any = None,
    name: str | None = None,
    run: int = 0,
    llc: LLCConfig | None = None,
) -> tuple[Monitor, list[Path]]:
    """Measure the complete checkpoints of ``directory`` whose step is a multiple of ``every`` (the last complete
    one always), in step order — a Trainer's output directory, ``save_pretrained`` folders named by their step,
    TransformerLens state dicts (loaded into ``template``), or a toolkit run kept with ``--keep-checkpoints`` (its
    model ``name``, default the main one, run ``run``): :func:`inductionlab.monitor.series.find_series` — and write
    ``watch_heads.parquet``, ``watch_steps.parquet`` and ``watch.png`` there.  A checkpoint that cannot be measured
    (still being written, damaged, not a causal LM) is skipped with a log line naming it and why.  ``llc``: also
    the LLC of every checkpoint (:class:`~inductionlab.monitor.llc.LLCConfig`, docs/monitor.md#the-llc).  Returns the
    monitor (its :meth:`~Monitor.phase` is the phase change) and the paths written.  A directory without
    checkpoints, or with none that can be measured, is a :class:`ConfigError` (for an hf-induction run of several
    seeds, naming the seed folders to watch)."""
    directory = Path(directory)
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ConfigError(f"--every: must be an integer ≥ 1, got {every!r}")
    series = find_series(directory, checkpoints, incomplete, template, name, run)
    if series is None:
        raise _no_checkpoints(directory)
    if not series.kind.startswith("kept") and (name is not None or run != 0):
        raise ConfigError(f"--name, --run: for a run kept with --keep-checkpoints; {directory} holds {series.kind}")
    skipped: list[str] = []
    chosen = _complete(series, every, skipped)
    monitor = _measure(chosen, series, config, every, skipped, llc) if chosen else None
    if monitor is None or monitor.steps.empty:
        raise ConfigError(
            f"watch: none of the {len(series.items)} {series.kind} in {directory} can be measured ("
            + "; ".join(skipped[:3])
            + ("; ..." if len(skipped) > 3 else "")
            + "): wait for the trainer to finish writing one, or give a series of a causal LM's checkpoints"
        )
    paths = [directory / name for name in FILES]
    write_parquet(paths[0], monitor.heads)
    write_parquet(paths[1], monitor.steps)
    title = f"{directory.name}: induction heads across {series.kind}"
    phase, threshold = monitor.phase(), monitor.config.threshold
    plot_monitor(monitor.heads, monitor.steps, phase, monitor.chance, threshold, paths[2], title, monitor.attainable)
    return monitor, paths


def _measure(
    chosen: list[tuple[int, Path]],
    series: Series,
    config: MonitorConfig,
    every: int,
    skipped: list[str],
    llc: LLCConfig | None = None,
) -> Monitor | None:
    """One monitor over the checkpoints in step order; one that fails to load or to measure is skipped with a log
    line naming it.  None when none could be loaded."""
    monitor = None
    for step, folder in chosen:
        try:
            model = series.load(folder)
        except MissingExtra:  # not a bad checkpoint: no checkpoint could be read
            raise
        except Exception as err:  # noqa: BLE001 - transformers', safetensors' and torch's errors, reported per item
            _skip(skipped, folder, f"it cannot be loaded ({_why(err)})")
            continue
        if monitor is None:
            try:
                monitor = Monitor(model, _fitted(config, model, [s for s, _ in chosen], every), llc=llc)
            except ConfigError as err:
                raise ConfigError(f"watch: {folder}: {err}") from None
        try:
            monitor.measure(step, model)
        except AdapterError as err:
            _skip(skipped, folder, str(err))
    return monitor


def _why(err: BaseException) -> str:
    return f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:200]}".rstrip(": ")


def _fitted(config: MonitorConfig, model, steps: list[int], every: int) -> MonitorConfig:
    """``config`` with ``every`` = the checkpoints' spacing ("coincides" allows two measurement intervals) and the
    copy ``period`` shortened to fit a model with fewer positions than ``period · repeats``."""
    spacing = int(np.diff(steps).min()) if len(steps) > 1 else every
    n_ctx = int(getattr(adapter_for(model), "n_ctx", 0) or 0)
    period = min(config.period, n_ctx // config.repeats) if n_ctx else config.period
    return dataclasses.replace(config, every=max(spacing, 1), period=period)
