"""The optional packages, imported through one function (docs/conventions.md#extras): :func:`require` imports a
module of an optional package by name and, where the package is missing, cannot be imported, or lies outside the
version range ``pyproject.toml``'s extras state, raises :class:`MissingExtra`, whose one-line message names what
needed it, the package, its extra and the command that installs it (modelled on pandas'
``import_optional_dependency``).  No other module of the package imports an optional package, and each does so inside
the function that needs it: ``import inductionlab`` imports none of them."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

# import name → (distribution, extra, version range), as pyproject.toml's [project.optional-dependencies] states them
PACKAGES: dict[str, tuple[str, str, str]] = {
    "transformers": ("transformers", "hf", ">=4.40"),
    "accelerate": ("accelerate", "hf", ">=0.26"),
    "transformer_lens": ("transformer-lens", "tl", ">=3.9,<4"),  # 4.x removed HookedTransformer
    "nnsight": ("nnsight", "nnsight", ">=0.5"),
    "lightning": ("lightning", "lightning", ">=2.1"),
    "tensorboard": ("tensorboard", "log", ">=2.14"),
    "wandb": ("wandb", "log", ">=0.16"),
    "devinterp": ("devinterp", "llc", ">=2.0.1"),
    "tokenizers": ("tokenizers", "text", ">=0.15"),
}
# modules outside the table that one of its packages brings, so that its extra installs them: torch's TensorBoard
# writer needs tensorboard, datasets comes with devinterp, pytorch_lightning is lightning's older distribution
BROUGHT_BY = {"torch.utils.tensorboard": "tensorboard", "datasets": "devinterp", "pytorch_lightning": "lightning"}


class MissingExtra(ImportError):
    """An optional package that is not installed, cannot be imported or is at a version outside the supported
    range; ``extra`` is the extra that installs it, and the message says what needed it and the command.  The
    command line prints it as one line and exits with status 2, as for any other usage error."""

    def __init__(self, message: str, package: str, extra: str):
        super().__init__(message, name=package)
        self.package, self.extra = package, extra

    def __reduce__(self) -> tuple:  # whole across processes (a sweep's workers)
        return type(self), (str(self), self.package, self.extra)


def require(name: str, what: str) -> ModuleType:
    """The module ``name`` — a package of :data:`PACKAGES`, one of its submodules (``transformers.models.auto``),
    or a module of :data:`BROUGHT_BY` — imported.  :class:`MissingExtra` when it is missing or cannot be imported,
    or when its package's version lies outside the range of :data:`PACKAGES`; ``what`` names what needs it
    (``"watch --llc"``)."""
    package, top = _package(name), name.split(".")[0]
    dist, extra, supported = PACKAGES[package]
    own = top in (package, "torch")  # torch.utils.tensorboard is tensorboard's
    needed = f"{package} (the {extra} extra)" if own else f"{top} (the {extra} extra installs it with {package})"
    try:
        module = importlib.import_module(name)
    except ImportError as err:
        parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)} | {package}
        if isinstance(err, ModuleNotFoundError) and getattr(err, "name", None) in parents:
            state = "which is not installed"
        else:
            state = f"but {name} cannot be imported ({type(err).__name__}: {_first_line(err)})"
        raise MissingExtra(_message(what, needed, extra, state), package, extra) from err
    version = _version(package, dist) if own else None
    if version is not None and not _within(version, supported):
        state = f"but {dist} {version} is installed and the toolkit needs {dist}{supported}"
        raise MissingExtra(_message(what, needed, extra, state), package, extra)
    return module


def _package(name: str) -> str:
    """The package of :data:`PACKAGES` that provides the module ``name``."""
    for i in range(name.count(".") + 1, 0, -1):
        prefix = ".".join(name.split(".")[:i])
        if prefix in BROUGHT_BY:
            return BROUGHT_BY[prefix]
    top = name.split(".")[0]
    if top not in PACKAGES:
        raise ValueError(f"{name!r} is no optional package of inductionlab.extras.PACKAGES or BROUGHT_BY")
    return top


def _message(what: str, needed: str, extra: str, state: str) -> str:
    return f"{what} needs {needed}, {state}: {install_command(extra)}"


def install_command(extra: str) -> str:
    """``pip install 'inductionlab[EXTRA]'``, and where the package is imported from a source checkout (an editable
    install, or ``src/`` on the path) the editable form run in that checkout."""
    command = f"pip install 'inductionlab[{extra}]'"
    root = source_checkout()
    return command if root is None else f"{command} (in the source checkout {root}: pip install -e '.[{extra}]')"


def source_checkout() -> Path | None:
    """The root of the source checkout this package is imported from (``ROOT/src/inductionlab`` beside
    ``ROOT/pyproject.toml``); None for an installed wheel."""
    here = Path(__file__).resolve().parent
    root = here.parents[1]
    return root if here == root / "src" / "inductionlab" and (root / "pyproject.toml").is_file() else None


def _version(package: str, dist: str) -> str | None:
    """The installed version of ``package`` (its ``__version__``, else its distribution's metadata); None when
    neither says."""
    version = getattr(sys.modules.get(package), "__version__", None)
    if isinstance(version, str):
        return version
    from importlib import metadata  # only for a version check: the command line imports this module

    try:
        return metadata.version(dist)
    except (metadata.PackageNotFoundError, ValueError):
        return None


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: ``"4.57.0.dev0"`` → (4, 57, 0), ``"2.14rc1"`` → (2, 14)."""
    numbers = []
    for part in version.split("+")[0].split("."):
        match = re.match(r"[0-9]+", part)
        if match is None:
            break
        numbers.append(int(match[0]))
        if match.end() < len(part):
            break
    return tuple(numbers)


def _within(version: str, supported: str) -> bool:
    """Whether ``version`` meets every clause of ``supported`` (``">=3.9,<4"``), compared by release numbers."""
    have = release(version)
    for clause in supported.split(","):
        match = re.fullmatch(r"\s*(>=|<=|==|<|>)\s*([0-9][0-9.]*)\s*", clause)
        if match is None:
            raise ValueError(f"version range {supported!r}: clauses such as >=4.40 or <4, got {clause!r}")
        want = release(match[2])
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        if not {">=": a >= b, "<=": a <= b, "==": a == b, "<": a < b, ">": a > b}[match[1]]:
            return False
    return True


def _first_line(err: BaseException) -> str:
    line = (str(err).splitlines() or [""])[0]
    return line if len(line) <= 160 else line[:160].rsplit(" ", 1)[0] + " …"
