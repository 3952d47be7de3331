"""Frozen, typed configuration dataclasses: validation, dotted-key overrides, JSON round trips.

Every experiment config is a tree of frozen dataclasses.  This module turns such a tree into a flat
``{"task.alpha_star": 1.0, ...}`` view, applies command-line overrides by dotted key (parsed by the
field's annotation, never ``eval``), rebuilds the tree (which re-runs each dataclass's validation)
and hashes it for the sweep manifest.  What each key means, as ``inductionlab list --keys`` shows it, is
:mod:`inductionlab.keys`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import hashlib
import json
import math
import os
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin, get_type_hints

from inductionlab.paths import what_is


class ConfigError(ValueError):
    """A configuration value or key is invalid; the message names the field and what is allowed."""


def require(ok: bool, field: str, message: str) -> None:
    """Raise :class:`ConfigError` naming ``field`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{field}: {message}")


def to_dict(cfg: Any) -> dict[str, Any]:
    """Nested plain-JSON dict of a dataclass tree (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def flatten(cfg: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a.b": value}`` for every leaf field of a dataclass tree."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            out.update(flatten(value, key + "."))
        else:
            out[key] = value
    return out


def _describe(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    return getattr(tp, "__name__", str(tp))


# a number as typed: ASCII digits only (not ١٠, ４０ or 1_0, which int() and float() take), or inf / nan (refused later)
NUMBER = re.compile(r"\s*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)\s*", re.IGNORECASE)


def coerce(value: Any, tp: Any, field: str) -> Any:
    """Convert ``value`` (a CLI string or a JSON value) to annotation ``tp``; raise ConfigError if impossible."""
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(value, tp, field)
    if origin is Literal:
        allowed = get_args(tp)
        for a in allowed:
            if (value == a and isinstance(value, bool) == isinstance(a, bool)) or (
                isinstance(value, str) and str(a) == value
            ):
                return a
        raise ConfigError(f"{field}: got {value!r}; allowed: {', '.join(repr(a) for a in allowed)}")
    if origin is tuple:
        return tuple(coerce(v, get_args(tp)[0], field) for v in _items(value, field))
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{field}: expected a bool (true/false), got {value!r}")
    if tp in (int, float, str):
        if isinstance(value, bool):  # a JSON true is no count, size or name (bool is a subclass of int)
            raise ConfigError(f"{field}: expected {_describe(tp)}, got the bool {format_value(value)}")
        try:
            if (tp is int and isinstance(value, float) and not value.is_integer()) or (
                isinstance(value, str) and tp is not str and not NUMBER.fullmatch(value)
            ):
                raise ValueError
            out = _int_of_text(value) if tp is int and isinstance(value, str) else tp(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{field}: expected {_describe(tp)}, got {value!r}") from None
        if tp is int and not -(2**63) <= out < 2**63:
            raise ConfigError(f"{field}: {value!r} is beyond a 64-bit integer; no size, count or seed is that large")
        if tp is float and not math.isfinite(out):
            raise ConfigError(f"{field}: must be a finite number, got {value!r}")
        return out
    raise ConfigError(f"{field}: unsupported field type {tp!r}")


def _items(value: Any, field: str) -> list:
    """The items of a list value: ``1,2``, ``[1, 2]`` (JSON), ``(1, 2)`` (a tuple's repr) or a JSON list."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] == "(" and text[-1:] == ")":  # the repr of a tuple, e.g. "(1, 2)"
            text = text[1:-1]
        if not text.startswith("["):
            return [v for v in text.split(",") if v.strip()]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(f"{field}: {value!r} is not a JSON list ({err.msg}); give e.g. 1,2 or [1,2]") from None
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{field}: expected a list (e.g. 1,2), got {value!r}")
    return list(value)


def _int_of_text(text: str) -> int:
    """An integer typed as ``12``, ``1e3`` or ``1000.0`` (exactly: ``9007199254740993`` stays itself)."""
    with contextlib.suppress(ValueError):
        return int(text)
    if not float(text).is_integer():
        raise ValueError(text)
    return int(float(text))


def _coerce_union(value: Any, tp: Any, field: str) -> Any:
    """A value of the first alternative of ``tp`` that accepts it (an int before a list of ints: ``1`` or ``1,2``);
    ``none`` only where ``tp`` allows None."""
    args = get_args(tp)
    options = [a for a in args if a is not type(None)]
    if type(None) in args and (value is None or (isinstance(value, str) and value.lower() in ("none", "null"))):
        return None
    if len(options) == 1:
        return coerce(value, options[0], field)
    for option in options:
        try:
            return coerce(value, option, field)
        except ConfigError:
            continue
    raise ConfigError(f"{field}: expected {type_name(tp)}, got {value!r}")


def _rebuild(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        key = sorted(unknown)[0]
        close = difflib.get_close_matches(key, names, n=3)
        hint = f" Did you mean {', '.join(prefix + c for c in close)}?" if close else ""
        raise ConfigError(
            f"{prefix}{key}: unknown key.{hint} Known keys: {', '.join(sorted(prefix + n for n in names))}"
        )
    kwargs = {}
    for name, value in data.items():
        tp = hints[name]
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            if not isinstance(value, dict):
                raise ConfigError(f"{prefix}{name}: expected a section of keys, got {value!r}")
            kwargs[name] = _rebuild(tp, value, f"{prefix}{name}.")
        else:
            kwargs[name] = coerce(value, tp, prefix + name)
    for name, value in kwargs.items():
        check_rate(prefix + name, value)
    try:
        return cls(**kwargs)
    except ConfigError as err:
        raise _in_section(err, prefix, names) from None


LR_MAX = 10.0  # the largest learning rate of a trainer with no NaN stop (transformers.Trainer): none trains above
RATE_CEILING = 1e6  # the largest any learning-rate key accepts: the toolkit's loops stop a diverging run at once
RATE_KEYS = re.compile(r"lr|eta\d*|\w+_lr")  # the names of learning-rate keys (lr, eta1, gd_lr; not lr_final_fraction)


def check_rate(key: str, value: Any) -> None:
    """Refuse a learning rate (a float key named as :data:`RATE_KEYS` matches) outside (0, :data:`RATE_CEILING`],
    naming ``key``: no step descends at 0 or less, and one that large is a typo, not a rate."""
    if RATE_KEYS.fullmatch(key.rsplit(".", 1)[-1]) and isinstance(value, float):
        require(
            math.isfinite(value) and 0 < value <= RATE_CEILING,
            key,
            f"a learning rate must be a finite number in (0, {RATE_CEILING:g}] (0 or less does not descend), "
            f"got {value!r}",
        )


def set_here(section: Any, prefix: str, defaults: Mapping[str, Any], by: str) -> None:
    """Refuse a value of ``prefix.key`` other than ``defaults[key]``: ``by`` sets that key in this experiment, one
    value per variant, so a shared section's key keeps its default there (docs/conventions.md#keys)."""
    for key, default in defaults.items():
        why = f"{by} sets it in this experiment, so it keeps its default {default!r}"
        require(getattr(section, key) == default, f"{prefix}.{key}", why)


def _in_section(err: ConfigError, prefix: str, names: set[str]) -> ConfigError:
    """``err`` with the keys it names moved to section ``prefix``: a class used as two sections (``train`` and
    ``tf_train``) names its fields by the usual one, e.g. ``train.steps`` where the key is ``tf_train.steps``."""
    key, sep, rest = str(err).partition(": ")
    leaf = key.rsplit(".", 1)[-1]
    if not prefix or not sep or leaf not in names or key == prefix + leaf:
        return err
    usual = key[: len(key) - len(leaf)]
    if usual:
        rest = re.sub(rf"(?<![\w.]){re.escape(usual)}", prefix, rest)
    return ConfigError(f"{prefix}{leaf}: {rest}")


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Build (and so validate) a config of class ``cls`` from a nested dict such as ``config.json``."""
    return _rebuild(cls, data)


def read_config_file(source: os.PathLike) -> dict[str, Any]:
    """The keys of a ``--config`` file: any JSON object of (nested) config keys, such as a run's config.json."""
    if not os.path.isfile(source):
        kind = "is a folder" if os.path.isdir(source) else what_is(source)
        raise ConfigError(
            f"--config {source}: {'no such file' if kind == 'does not exist' else kind + ', not a file'} (give a "
            "JSON file of config keys, e.g. a run's config.json)"
        )
    try:
        with open(source, encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"--config {source}: not a JSON file ({type(err).__name__}: {err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("experiment", ""), str):
        raise ConfigError(f'--config {source}: expected a JSON object of config keys ("experiment": a name)')
    return data


def override(cfg: Any, overrides: Mapping[str, Any], experiment: str = "NAME") -> Any:
    """A copy of ``cfg`` with dotted-key overrides applied, e.g. ``{"task.alpha_star": "2"}``.

    Unknown keys raise :class:`ConfigError` listing close matches; values are parsed by annotation.
    """
    nested = to_dict(cfg)
    flat = flatten(cfg)
    for key, value in overrides.items():
        if key not in flat:
            if any(k.startswith(key + ".") for k in flat):
                raise ConfigError(
                    f"{key}: is a section; set one of its keys, e.g. {next(k for k in flat if k.startswith(key + '.'))}"
                )
            close = difflib.get_close_matches(key, list(flat), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"{key}: unknown key.{hint} Run `inductionlab list --keys {experiment}` to see all keys.")
        node = nested
        *parents, leaf = key.split(".")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return from_dict(type(cfg), nested)


def config_hash(cfg: Any) -> str:
    """Stable short hash of a config (sorted JSON)."""
    text = json.dumps(to_dict(cfg), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def human_bytes(n: float) -> str:
    """``n`` bytes as ``12.3 GB`` (powers of 1000; never cut mid-number)."""
    units, k = ("B", "kB", "MB", "GB", "TB", "PB", "EB"), 0
    while n >= 1000 and k < len(units) - 1:
        n, k = n / 1000, k + 1
    return f"{n:.3g} {units[k]}"


def check_memory(field: str, n_bytes: float, what: str, also: str = "") -> None:
    """Refuse a size before anything is allocated, naming ``field`` (and ``also``, another key the size grows
    with), where ``what`` it sizes would need ``n_bytes`` (an estimate, a lower bound) — more than this machine's
    physical memory."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")  # this machine's physical memory in bytes
    require(
        n_bytes <= total,
        field,
        f"out of memory: {what} would need about {human_bytes(n_bytes)}, more than this machine's "
        f"{human_bytes(total)}; lower {field}{f' or {also}' if also else ''}",
    )


def check_schedule(steps_field: str, steps: int, every_field: str, every: int, runs: int = 1) -> None:
    """Refuse a training length whose evaluation schedule outgrows memory, naming ``steps_field``: the loop holds
    the schedule (≈ 100 bytes an evaluation) and one metrics row per run and evaluation (≈ 200 bytes)."""
    evaluations = steps // every + 1
    check_memory(
        steps_field,
        evaluations * (100 + 200 * runs),
        f"{steps} steps with an evaluation every {every} ({every_field}), {evaluations} evaluations,",
    )


SEED_LIMIT = 2**31  # seeds and the seeds derived from them (seed + offsets) stay within every generator's range


def check_seeds(seeds: tuple[int, ...], run_axis: bool = True) -> None:
    """Validate an experiment's ``seeds`` — the run axis (``docs/conventions.md#seeds``): at least one, each
    ≥ 0 and distinct; exactly one where the experiment has no run axis."""
    require(len(seeds) >= 1, "seeds", "give at least one seed, e.g. --seeds 0")
    require(all(0 <= s < SEED_LIMIT for s in seeds), "seeds", f"must be integers in 0..2^31 − 1, got {list(seeds)}")
    require(
        len(set(seeds)) == len(seeds), "seeds", f"must be distinct (a repeated seed repeats a run), got {list(seeds)}"
    )
    require(
        run_axis or len(seeds) == 1,
        "seeds",
        f"this experiment has no run axis, so it takes one seed, got "
        f"{list(seeds)}; run several with `inductionlab sweep NAME --n-seeds K`",
    )


def with_seeds(cfg: Any, first: int, count: int | None = None) -> Any:
    """``cfg`` with ``seeds`` first, first + 1, …: ``count`` of them (None keeps the config's count)."""
    n = len(cfg.seeds) if count is None else count
    return override(cfg, {"seeds": list(range(first, first + n))})


def format_value(value: Any) -> str:
    """A value as it is typed on the command line: tuples as ``1,2`` (tuples of tuples as JSON,
    ``[[true,false],[true,true]]``), None as ``none``, booleans as ``true``."""
    if isinstance(value, tuple) and any(isinstance(v, tuple) for v in value):  # nested: JSON, e.g. [[true,false]]
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, tuple):
        return ",".join(format_value(v) for v in value)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def type_name(tp: Any) -> str:
    """Annotation ``tp`` as ``list --keys`` and error messages name it: ``choice``, ``list of int``, ``float or
    none``."""
    origin = get_origin(tp)
    if origin is Literal:
        return "choice"
    if origin is tuple:
        inner = get_args(tp)[0]
        if get_origin(inner) is tuple:
            return f"JSON list of lists of {type_name(get_args(inner)[0])}"
        return f"list of {type_name(inner)}"
    if origin in (typing.Union, types.UnionType):
        args = get_args(tp)
        names = " or ".join(type_name(a) for a in args if a is not type(None))
        return names + (" or none" if type(None) in args else "")
    return getattr(tp, "__name__", str(tp))


def dotted(nested: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a.b": value}`` for every leaf of a nested dict (such as a saved ``config.json``)."""
    out: dict[str, Any] = {}
    for k, v in nested.items():
        out.update(dotted(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def differences(saved: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """``key: saved → wanted`` for every flattened key whose values differ (configs as nested dicts)."""

    a, b = dotted(saved), dotted(wanted)
    return [
        f"{k}: {a.get(k)!r} in the saved run, {b.get(k)!r} here"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]


CUDA = re.compile(r"cuda(:\d+)?")  # a CUDA device: cuda or cuda:i


def check_device(device: str) -> None:
    """``cpu``, ``cuda`` or ``cuda:i``; a CUDA device must be visible to torch (``docs/conventions.md#devices``)."""
    require(
        device == "cpu" or CUDA.fullmatch(device) is not None, "device", f"'cpu', 'cuda' or 'cuda:i', got {device!r}"
    )
    if device != "cpu":
        import torch

        require(
            torch.cuda.is_available(),
            "device",
            f"{device} was asked for, but torch sees no CUDA GPU here "
            "(torch.cuda.is_available() is False); use --device cpu",
        )
