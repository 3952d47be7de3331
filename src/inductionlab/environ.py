"""The environment variables the toolkit reads, each parsed once and strictly (docs/conventions.md#environment): a
value it cannot read fails with :class:`~inductionlab.config.ConfigError` naming the variable and what it takes,
never a silent default."""

from __future__ import annotations

import os
import re
import shlex
import shutil

from inductionlab.config import ConfigError

TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
MAX_THREADS = 1024  # more torch threads than any CPU the toolkit meets: a typo, not a machine
COUNT = re.compile(r"[0-9]+")  # ASCII digits only: '²', '١٠' or '1_0' are no count


def flag(name: str, default: bool) -> bool:
    """``$name`` as a switch: 1/true/yes/on or 0/false/no/off (any case); unset or empty: ``default``."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if value.lower() in TRUE + FALSE:
        return value.lower() in TRUE
    raise ConfigError(f"{name}: a switch, one of {', '.join(TRUE)} or {', '.join(FALSE)}; got {value!r}")


def count(text: str, where: str) -> int:
    """A thread count from ``where`` (an option or a variable): ASCII digits, 1 to :data:`MAX_THREADS`."""
    value = text.strip()
    if not COUNT.fullmatch(value) or not 1 <= int(value) <= MAX_THREADS:
        raise ConfigError(f"{where}: an integer from 1 to {MAX_THREADS} (the torch threads of a run), got {text!r}")
    return int(value)


def compiler() -> list[str] | None:
    """The C compiler as a command: ``$CC`` (a program on the PATH or a path, with its own arguments, e.g.
    ``ccache gcc`` or ``gcc -m64``) when set, else ``gcc``, else ``cc``; None when it is unset and neither exists.
    A ``$CC`` that names no program fails, naming it."""
    value = os.environ.get("CC", "").strip()
    if not value:
        found = next((c for c in ("gcc", "cc") if shutil.which(c)), None)
        return None if found is None else [found]
    try:
        command = shlex.split(value)
    except ValueError as err:
        raise ConfigError(f"CC: not a command ({err}), got {value!r}") from None
    if not command or shutil.which(command[0]) is None:
        raise ConfigError(f"CC: {command[0] if command else value!r} is no program here (set CC to a C compiler)")
    return command


def check() -> None:
    """Read every switch the toolkit has (the command line calls it first): a bad one fails before any work."""
    flag("INDUCTIONLAB_FUSED", True)
    if os.environ.get("CC", "").strip():
        compiler()
