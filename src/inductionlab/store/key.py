"""A job's key (docs/conventions.md#provenance): its canonical config, its code closure
(:mod:`~inductionlab.store.closure`) and the software it ran on — the versions of torch, numpy, scipy and of every
library its closure imports.  Two jobs with one key are one run.  The CPU is recorded beside the key, not in it: a
run is a measurement on any CPU, within the portable tolerances (docs/conventions.md#portable-numbers).

The config enters by its hash, with one change: the path of the data an experiment reads (``Experiment.data``)
enters as the digest of the files there, so the same text under another path is the same job, and other text
under the same path is not.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from inductionlab import experiments
from inductionlab.store import closure

ALWAYS = ("torch", "numpy", "scipy")  # in every key, whatever the closure imports
DATA_ENV = "INDUCTIONLAB_DATA"  # an empty data path means this variable (tasks/text.py)


@dataclass(frozen=True)
class Key:
    """``config``: the canonical config's hash; ``code``: the closure's digest, ``files`` its files' digests;
    ``software``: library → version."""

    config: str
    code: str
    files: Mapping[str, str]
    software: Mapping[str, str]

    @property
    def id(self) -> str:
        """16 hex digits naming the key: equal ids, one run."""
        text = json.dumps([self.config, self.code, dict(sorted(self.software.items()))])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "config": self.config,
            "code": self.code,
            "files": dict(sorted(self.files.items())),
            "software": dict(sorted(self.software.items())),
        }


def starts(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Where experiment ``name``'s closure starts: :data:`~inductionlab.store.closure.ALWAYS`, and the package
    modules, and the files of a plug-in's own modules (wherever they live), that define its ``run`` and its config's
    class."""
    exp = experiments.get(name)
    modules, files = list(closure.ALWAYS), []
    for module in dict.fromkeys([exp.run.__module__, type(exp.config).__module__]):
        if module.split(".")[0] == closure.NAME:
            modules.append(module)
        elif (file := closure.find_spec_file(module)) is not None:
            files.append(str(file))
    return tuple(modules), tuple(files)


def experiment_closure(name: str) -> closure.Closure:
    """The closure of experiment ``name`` (:func:`starts`), once per process and version of a plug-in's file."""
    modules, files = starts(name)
    stamps = tuple((os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files)
    return closure.of_experiment_modules(modules, files, stamps)


def software(libraries: tuple[str, ...]) -> dict[str, str]:
    """The versions of :data:`ALWAYS` and of the distributions that provide ``libraries`` ("absent" where one is
    not installed: a run that imports it then fails, which its key need not say)."""
    providers = _providers()
    out: dict[str, str] = {}
    for top in dict.fromkeys([*ALWAYS, *libraries]):
        for dist in providers.get(top, [top]):
            out[dist] = _version(dist)
    return out


@functools.cache
def _providers() -> dict[str, list[str]]:
    return {k: sorted(set(v)) for k, v in metadata.packages_distributions().items()}


@functools.cache
def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def canonical_config(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (nested, as config.json holds it without its meta keys) with the data path of experiment ``name``
    replaced by the digest of the data there."""
    key = experiments.get(name).data
    if not key:
        return dict(config)
    out = json.loads(json.dumps(config))
    node = out
    *parents, leaf = key.split(".")
    for part in parents:
        node = node[part]
    raw = node[leaf] or os.environ.get(DATA_ENV, "")
    node[leaf] = f"sha256:{data_digest(Path(raw))}" if raw and Path(raw).exists() else raw
    return out


@functools.cache
def data_digest(path: Path) -> str:
    """16 hex digits of SHA-256 over the files under ``path`` (or the file itself): names and bytes."""
    h = hashlib.sha256()
    files = sorted(p for p in Path(path).rglob("*") if p.is_file()) if Path(path).is_dir() else [Path(path)]
    for file in files:
        h.update(file.relative_to(path).as_posix().encode() + b"\0" if file != Path(path) else b"\0")
        h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()[:16]


def of_job(name: str, config: Mapping[str, Any]) -> Key:
    """The key of a job of experiment ``name`` with the resolved ``config`` (nested dict)."""
    code = experiment_closure(name)
    text = json.dumps(canonical_config(name, config), sort_keys=True)
    return Key(hashlib.sha256(text.encode()).hexdigest()[:16], code.digest, code.files, software(code.libraries))


def changes(old: Mapping[str, Any], new: Key) -> list[str]:
    """What differs between a recorded key (:meth:`Key.as_dict`) and ``new``, one phrase each: the config, each
    file of the closure that changed, came or went, each library whose version moved."""
    out = ["the config" for _ in [0] if old.get("config") != new.config]
    files = old.get("files") or {}
    for label in sorted(set(files) | set(new.files)):
        if label not in new.files:
            out.append(f"{label} left the closure")
        elif label not in files:
            out.append(f"{label} joined the closure")
        elif files[label] != new.files[label]:
            out.append(f"{label} changed")
    if old.get("code") != new.code and not any("closure" in c or "changed" in c for c in out):
        out.append("the code")
    soft = old.get("software") or {}
    out += [f"{lib} {soft.get(lib, 'absent')} → {v}" for lib, v in sorted(new.software.items()) if soft.get(lib) != v]
    return out
