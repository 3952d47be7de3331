"""inductionlab: how transformers learn induction heads — tasks, models, trainers, theory and analyses.

The public API is the list of imports under ``if TYPE_CHECKING:`` below, by module: the tasks (every sampler takes
a ``torch.Generator``, ``rng.generator(seed)``; your own task: docs/own_task.md), the models, the trainers with the
loop's hooks (interventions, loggers), the theory, the analyses and claims, models out of runs (docs/models.md), the
monitor (docs/monitor.md), and running experiments (``register_experiment``: docs/own_experiment.md; the module
``reproduce``: every claim judged, report.html).  IDEs and type checkers read that list; at run time
:func:`__getattr__` reads the same list and imports each name when first used, so that ``import inductionlab``
stays fast (docs/architecture.md).
"""

# ruff: noqa: F401 - the imports under TYPE_CHECKING are the public API, re-exported when first used

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inductionlab._version import __version__

if TYPE_CHECKING:  # the public API, one list: what type checkers see and what __getattr__ imports when first used
    from inductionlab import cli, experiments, plots, rng
    from inductionlab.analysis.ablation import direct_logit_attribution, head_ablation, patch_heads, patch_layers
    from inductionlab.analysis.claims import Between, Claim, Control, Is, Learned, Near
    from inductionlab.analysis.heads import head_scores, probe_distance
    from inductionlab.analysis.phases import phase_times
    from inductionlab.analysis.verdicts import judge
    from inductionlab.experiments import configure, register_experiment
    from inductionlab.experiments.experiment import Experiment
    from inductionlab.loading import LoadedModel, load_model, to_hooked_transformer
    from inductionlab.models import toy
    from inductionlab.models.chen import ChenConfig
    from inductionlab.models.highdim import HighDimConfig
    from inductionlab.models.toy import ToyConfig
    from inductionlab.models.transformer import TransformerConfig
    from inductionlab.models.transformer import forward as forward
    from inductionlab.models.transformer import init_params as init_transformer
    from inductionlab.monitor import Monitor, MonitorConfig, PhaseChange, adapter_for
    from inductionlab.monitor.hf import InductionCallback
    from inductionlab.runner import run_experiment
    from inductionlab.runs import Results, RunContext, load_run
    from inductionlab.sweep import load_sweep, run_sweep
    from inductionlab.tasks.induction import (
        InductionTaskConfig,
        generalized_induction_head,
        induction_head,
        repeated_random_tokens,
    )
    from inductionlab.tasks.induction import sample_tokens as sample_induction_tokens
    from inductionlab.tasks.markov import MarkovConfig
    from inductionlab.tasks.markov import sample as sample_markov
    from inductionlab.tasks.mixed import MixedTarget, MixedTaskConfig
    from inductionlab.tasks.scb import SCBConfig, random_instance
    from inductionlab.tasks.scb import sample as sample_scb
    from inductionlab.tasks.text import TextConfig, load_corpus
    from inductionlab.theory.laws import Law
    from inductionlab.theory.mixed import PhaseTimes
    from inductionlab.train.autograd import TrainConfig, pack
    from inductionlab.train.autograd import train as train_autograd
    from inductionlab.train.chen import StagedConfig, train_staged
    from inductionlab.train.flow import FlowProblem, solve_flow
    from inductionlab.train.hooks import FreezeColumns, JsonlLogger, Logger, TensorBoardLogger, WandbLogger
    from inductionlab.train.interventions import ClampColumns, InterventionConfig
    from inductionlab.train.loop import Hook
    from inductionlab.train.proximal import SCBTrainConfig, train_scb
    from inductionlab.train.text import fit_lm
    from inductionlab.train.tokens import fit_tokens
    from inductionlab.train.toy import ToyTrainConfig, train_toy
    from inductionlab.train.transformer import fit_induction
    from inductionlab.train.transformer_interventions import AblateHeads


@functools.cache
def _exports() -> dict[str, tuple[str, str]]:
    """Public name → (module, attribute), read from the imports under ``if TYPE_CHECKING:`` above."""
    import ast

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    imports = [node for node in block.body if isinstance(node, ast.ImportFrom)]
    return {alias.asname or alias.name: (str(node.module), alias.name) for node in imports for alias in node.names}


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return ["__version__", *_exports()]
    if name not in _exports():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _exports()[name]
    value = getattr(importlib.import_module(module), attr, None) if module != __name__ else None
    return value if value is not None else importlib.import_module(f"{module}.{attr}")  # a submodule: cli, toy


def __dir__() -> list[str]:
    return sorted(__getattr__("__all__"))
