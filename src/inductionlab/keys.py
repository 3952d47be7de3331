"""The documentation of config keys, as ``inductionlab list --keys/--presets`` shows it: each field's help (its
comment in the source), each leaf key's type, default and allowed values, and what a preset changes."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import textwrap
import tokenize
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal, get_args, get_origin, get_type_hints

from inductionlab.config import ConfigError, coerce, format_value, require, type_name


def field_help(cls: type) -> dict[str, str]:
    """Each field's help: its comment in the class body — the ``#`` lines directly above its definition (for a
    help too long for the line), then the trailing ``# comment`` of each line of the definition, joined — from the
    class and its dataclass bases; a field without one is absent.  The comment is the one source of a key's
    help (``docs/conventions.md#keys``)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            out.update(_own_field_comments(klass))
    return out


def _own_field_comments(cls: type) -> dict[str, str]:
    """The trailing comments of the annotated fields defined in ``cls``'s own body."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    comments = {  # line number (1-based) → its comment's text
        tok.start[0]: tok.string.lstrip("#").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    body = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef)).body
    out = {}
    for node in body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            first = node.lineno
            while first - 1 in comments and lines[first - 2].lstrip().startswith("#"):  # comment lines above
                first -= 1
            text = " ".join(comments[i] for i in range(first, (node.end_lineno or node.lineno) + 1) if i in comments)
            if text:
                out[node.target.id] = text
    return out


def describe(cfg: Any, prefix: str = "") -> list[dict[str, str]]:
    """One entry per leaf key of a config tree: key, type, default (pasteable), allowed values, help (the field's
    comment in the source, :func:`field_help`)."""
    out: list[dict[str, str]] = []
    hints, comments = get_type_hints(type(cfg)), field_help(type(cfg))
    for f in dataclasses.fields(cfg):
        value, tp = getattr(cfg, f.name), hints[f.name]
        if dataclasses.is_dataclass(value):
            out += describe(value, f"{prefix}{f.name}.")
            continue
        allowed = ", ".join(format_value(a) for a in get_args(tp)) if get_origin(tp) is Literal else ""
        out.append(
            {
                "key": prefix + f.name,
                "type": type_name(tp),
                "default": format_value(value),
                "allowed": allowed,
                "help": comments.get(f.name, ""),
            }
        )
    return out


def preset_changes(cfg: Any, values: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(key, default, value)`` for each dotted key a preset sets, both as typed on the command line: the value
    parsed by the field's annotation but not validated with the rest (a preset for another machine, such as
    ``device cuda``, shows here too)."""
    out = []
    for key, value in values.items():
        *sections, leaf = key.split(".")
        node = cfg
        for section in sections:
            node = getattr(node, section, None)
        known = dataclasses.is_dataclass(node) and leaf in {f.name for f in dataclasses.fields(node)}
        require(known, key, "unknown key in a preset")
        typed = coerce(value, get_type_hints(type(node))[leaf], key)
        out.append((key, format_value(getattr(node, leaf)), format_value(typed)))
    return out


@contextmanager
def keys_as(names: Mapping[str, str]) -> Iterator[None]:
    """Inside, a :class:`ConfigError` about a library config's key is re-raised about the experiment's key that set
    it: ``names`` maps the library key's last part (``momentum`` of ``train.momentum``) to the key a user types
    (``own.momentum``), for a library config an experiment builds from its own keys."""
    try:
        yield
    except ConfigError as err:
        key, sep, rest = str(err).partition(": ")
        leaf = key.rsplit(".", 1)[-1]
        if not sep or leaf not in names:
            raise
        raise ConfigError(f"{names[leaf]}: {rest}") from None
