"""The public API: the imports under ``TYPE_CHECKING`` in ``inductionlab/__init__.py`` are its one list — what IDEs
and type checkers see is what the package gives at run time, ``__all__`` and ``dir()`` name the same, and
``import inductionlab`` imports none of it."""

import ast
import importlib
import subprocess
import sys
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
    assert dir(inductionlab) == sorted(inductionlab.__all__)
    for name, (module, attr) in seen.items():
        expected = getattr(importlib.import_module(module), attr, None)
        if expected is None:  # `from inductionlab import experiments`: a submodule
            expected = importlib.import_module(f"{module}.{attr}")
        assert getattr(inductionlab, name) is expected, name


def test_importing_the_package_imports_none_of_its_modules():
    code = "import sys, inductionlab; print(sorted(m for m in sys.modules if m.startswith(('inductionlab.', 'torch'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['inductionlab._version']"


def test_an_unknown_name_is_an_attribute_error():
    try:
        inductionlab.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("no AttributeError")


# The public names, as released: removing or renaming one breaks researchers' scripts, so it is a deliberate change
# here, never a side effect of editing the list in ``inductionlab/__init__.py``.
RELEASED = {
    "AblateHeads",
    "Between",
    "ChenConfig",
    "Claim",
    "ClampColumns",
    "Control",
    "Experiment",
    "FlowProblem",
    "FreezeColumns",
    "HighDimConfig",
    "Hook",
    "InductionCallback",
    "InductionTaskConfig",
    "InterventionConfig",
    "Is",
    "JsonlLogger",
    "LoadedModel",
    "MarkovConfig",
    "MixedTarget",
    "MixedTaskConfig",
    "Monitor",
    "MonitorConfig",
    "Near",
    "PhaseChange",
    "PhaseTimes",
    "Results",
    "RunContext",
    "SCBConfig",
    "SCBTrainConfig",
    "StagedConfig",
    "TensorBoardLogger",
    "TextConfig",
    "ToyConfig",
    "ToyTrainConfig",
    "TrainConfig",
    "TransformerConfig",
    "WandbLogger",
    "__version__",
    "adapter_for",
    "cli",
    "configure",
    "direct_logit_attribution",
    "experiments",
    "fit_induction",
    "fit_lm",
    "fit_tokens",
    "forward",
    "generalized_induction_head",
    "head_ablation",
    "head_scores",
    "induction_head",
    "init_transformer",
    "judge",
    "load_corpus",
    "load_model",
    "load_run",
    "load_sweep",
    "pack",
    "patch_heads",
    "patch_layers",
    "phase_times",
    "plots",
    "probe_distance",
    "random_instance",
    "register_experiment",
    "repeated_random_tokens",
    "rng",
    "run_experiment",
    "run_sweep",
    "sample_induction_tokens",
    "sample_markov",
    "sample_scb",
    "solve_flow",
    "to_hooked_transformer",
    "toy",
    "train_autograd",
    "train_scb",
    "train_staged",
    "train_toy",
}


def test_the_released_names_are_all_still_public():
    assert RELEASED <= set(inductionlab.__all__), sorted(RELEASED - set(inductionlab.__all__))
