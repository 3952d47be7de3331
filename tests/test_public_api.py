"""The public API: every name of ``inductionlab.__all__`` resolves, and what IDEs and type checkers see (the
``TYPE_CHECKING`` imports of ``inductionlab/__init__.py``) is what the package gives at run time."""

import ast
import importlib
from pathlib import Path

import inductionlab


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    """name → (module, attribute) of every import under ``if TYPE_CHECKING:``."""
    tree = ast.parse(Path(inductionlab.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    out = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.dump(node)
        for alias in node.names:
            out[alias.asname or alias.name] = (node.module, alias.name)
    return out


def test_every_public_name_resolves_to_what_type_checkers_see():
    seen = _type_checking_imports()
    assert set(inductionlab.__all__) == {"__version__", *seen}
    for name, (module, attr) in seen.items():
        expected = getattr(importlib.import_module(module), attr, None)
        if expected is None:  # `from inductionlab import experiments`: a submodule
            expected = importlib.import_module(f"{module}.{attr}")
        assert getattr(inductionlab, name) is expected, name


def test_an_unknown_name_is_an_attribute_error():
    try:
        inductionlab.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("no AttributeError")
