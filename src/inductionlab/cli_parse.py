"""How ``run`` and ``sweep`` tell their options from config keys (``cli.parse_command``): the command line's option
strings, the stand-ins of the first pass, and the near misses of an option refused by name."""

from __future__ import annotations

import argparse
import difflib
import re

from inductionlab.config import ConfigError


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of the command line: the main parser's and each command's."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices.values()
    return {o for p in (parser, *commands) for a in p._actions for o in a.option_strings}


def stand_in(argv: list[str], i: int, declared: set[str]) -> str:
    """``argv[i]`` for the first pass: a value that starts with ``-`` (``-1``, ``-hello``, and ``-h`` after an
    undeclared ``--KEY``) as ``0``, so that it never reads as an option or as help."""
    arg, before = argv[i], argv[i - 1] if i else ""
    after_key = before.startswith("--") and "=" not in before and before not in declared
    return "0" if re.fullmatch(r"-(?!-|h$).*", arg) or (arg == "-h" and after_key) else arg


def near(key: str, declared: set[str]) -> str:
    """`` Did you mean the option --X?`` for a key that is a near miss of an option ("" when none is); for one that
    is itself an option, of another command, that it is not this command's."""
    if key in declared:
        return f"; {key} is an option of another command, not of this one (inductionlab COMMAND -h lists its own)"
    close = difflib.get_close_matches(key, sorted(o for o in declared if o.startswith("--")), n=1, cutoff=0.8)
    return f". Did you mean the option {close[0]}?" if close else ""


def no_near_miss(keys: set[str], declared: set[str], name: str | None) -> None:
    """Refuse an undeclared ``--KEY`` that is a near miss of an option and no config key of the experiment
    ``name`` (``--keep-checkpoint`` for ``--keep-checkpoints``), naming the option."""
    from inductionlab import experiments
    from inductionlab.config import flatten

    toolkit = name in experiments.registry.TOOLKIT  # then its module alone is imported, not every experiment's
    known = (
        set(flatten(experiments.get(name).config))
        if name and (toolkit or name in experiments.all_experiments())
        else None
    )
    for key in sorted(keys):
        hint = near(key, declared)
        if hint and known is not None and key[2:] not in known:
            raise ConfigError(f"{key}: no option and no config key of {name}{hint}")


def real(text: str) -> float:
    """An option's number as typed: ASCII digits, a point, an exponent (``float()`` also takes ``١٫٥`` and ``1_0``)."""
    from inductionlab.config import NUMBER

    if not NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    return float(text)


def monitor_options(p: argparse.ArgumentParser) -> list[str]:
    """One ``--FIELD`` option of ``watch`` per :class:`~inductionlab.monitor.MonitorConfig` field but ``every``
    (``watch --every`` picks the checkpoints), typed as the field and helped by its comment; returns the fields."""
    import dataclasses

    from inductionlab.keys import field_help
    from inductionlab.monitor.settings import MonitorConfig

    helps, names = field_help(MonitorConfig), []
    for f in dataclasses.fields(MonitorConfig):
        if f.name == "every":
            continue
        kind = integer if isinstance(f.default, int) else real
        flag = f"--{f.name.replace('_', '-')}"
        p.add_argument(
            flag,
            dest=f"monitor_{f.name}",
            type=kind,
            metavar="N",
            help=f"{helps.get(f.name, '')} (default {f.default})",
        )
        names.append(f.name)
    return names


def integer(text: str) -> int:
    """An option's integer as typed: ASCII digits with an optional sign (``int()`` also takes ``١٠``, ``４０`` and
    ``1_0``, which no one means as a count)."""
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(text)
