"""inductionlab: how transformers learn induction heads — tasks, models, trainers, theory and analyses.

The public API, on one screen (each name is imported when first used, so ``import inductionlab`` stays fast)::

    tasks      MixedTaskConfig, MixedTarget, InductionTaskConfig, induction_head, generalized_induction_head,
               repeated_random_tokens, sample_induction_tokens, MarkovConfig, sample_markov, SCBConfig,
               random_instance, sample_scb, TextConfig, load_corpus; every sampler takes a torch.Generator
               (rng.generator(seed)); your own task: docs/own_task.md
    models     toy (the six-parameter model), ToyConfig, TransformerConfig, init_transformer, forward,
               ChenConfig, HighDimConfig
    training   RunContext, Hook, JsonlLogger, FreezeColumns, ToyTrainConfig, train_toy, TrainConfig, train_autograd,
               pack, fit_induction, fit_lm, fit_tokens (any token task), StagedConfig, train_staged,
               SCBTrainConfig, train_scb
    interventions  InterventionConfig, ClampColumns, AblateHeads (hooks of the loop); loggers TensorBoardLogger,
               WandbLogger
    theory     FlowProblem, solve_flow, PhaseTimes
    analysis   phase_times, head_scores, probe_distance, head_ablation, patch_heads, patch_layers,
               direct_logit_attribution; Claim, Control, Between, Near, Is, judge (claims)
    models out of runs  load_model, LoadedModel, to_hooked_transformer (TransformerLens; docs/models.md)
    monitor    Monitor, MonitorConfig, PhaseChange, adapter_for, InductionCallback (transformers.Trainer): induction
               heads forming in any model (docs/monitor.md)
    runs       Experiment, register_experiment (docs/own_experiment.md), configure, experiments (the registry),
               run_experiment, Results, run_sweep, load_run, load_sweep, cli (cli.main(argv)), rng (seeds), and
               the module reproduce (reproduce.reproduce / render: every claim judged, report.html)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from inductionlab._version import __version__

_EXPORTS = {
    "MixedTaskConfig": "tasks.mixed",
    "MixedTarget": "tasks.mixed",
    "InductionTaskConfig": "tasks.induction",
    "induction_head": "tasks.induction",
    "generalized_induction_head": "tasks.induction",
    "repeated_random_tokens": "tasks.induction",
    "MarkovConfig": "tasks.markov",
    "SCBConfig": "tasks.scb",
    "random_instance": "tasks.scb",
    "TextConfig": "tasks.text",
    "load_corpus": "tasks.text",
    "ToyConfig": "models.toy",
    "TransformerConfig": "models.transformer",
    "ChenConfig": "models.chen",
    "HighDimConfig": "models.highdim",
    "RunContext": "runs",
    "load_run": "runs",
    "Hook": "train.loop",
    "JsonlLogger": "train.hooks",
    "FreezeColumns": "train.hooks",
    "InterventionConfig": "train.interventions",
    "ClampColumns": "train.interventions",
    "AblateHeads": "train.interventions",
    "TensorBoardLogger": "train.hooks",
    "WandbLogger": "train.hooks",
    "ToyTrainConfig": "train.toy",
    "train_toy": "train.toy",
    "TrainConfig": "train.autograd",
    "fit_induction": "train.transformer",
    "fit_lm": "train.text",
    "fit_tokens": "train.tokens",
    "pack": "train.autograd",
    "StagedConfig": "train.chen",
    "train_staged": "train.chen",
    "SCBTrainConfig": "train.proximal",
    "train_scb": "train.proximal",
    "FlowProblem": "train.flow",
    "solve_flow": "train.flow",
    "PhaseTimes": "theory.mixed",
    "phase_times": "analysis.phases",
    "head_scores": "analysis.heads",
    "probe_distance": "analysis.heads",
    "head_ablation": "analysis.ablation",
    "patch_heads": "analysis.ablation",
    "patch_layers": "analysis.ablation",
    "direct_logit_attribution": "analysis.ablation",
    "to_hooked_transformer": "loading",
    "load_model": "loading",
    "LoadedModel": "loading",
    "run_experiment": "runner",
    "run_sweep": "sweep",
    "Claim": "analysis.claims",
    "Control": "analysis.claims",
    "Between": "analysis.claims",
    "Near": "analysis.claims",
    "Is": "analysis.claims",
    "judge": "analysis.claims",
    "Results": "runs",
    "Experiment": "experiments.experiment",
    "register_experiment": "experiments",
    "configure": "experiments",
    "load_sweep": "sweep",
    "Monitor": "monitor",
    "MonitorConfig": "monitor",
    "PhaseChange": "monitor",
    "adapter_for": "monitor",
    "InductionCallback": "monitor",
}
_ALIASES = {
    "init_transformer": ("models.transformer", "init_params"),
    "forward": ("models.transformer", "forward"),
    "train_autograd": ("train.autograd", "train"),
    "sample_markov": ("tasks.markov", "sample"),
    "sample_scb": ("tasks.scb", "sample"),
    "sample_induction_tokens": ("tasks.induction", "sample_tokens"),
}
_MODULES = {"toy": "models.toy", "experiments": "experiments", "plots": "plots", "cli": "cli", "rng": "rng"}

if TYPE_CHECKING:  # what IDEs and type checkers see; at run time each name is imported when first used
    from inductionlab import cli, experiments, plots, rng
    from inductionlab.analysis.ablation import direct_logit_attribution, head_ablation, patch_heads, patch_layers
    from inductionlab.analysis.claims import Between, Claim, Control, Is, Near, judge
    from inductionlab.analysis.heads import head_scores, probe_distance
    from inductionlab.analysis.phases import phase_times
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
    from inductionlab.theory.mixed import PhaseTimes
    from inductionlab.train.autograd import TrainConfig, pack
    from inductionlab.train.autograd import train as train_autograd
    from inductionlab.train.chen import StagedConfig, train_staged
    from inductionlab.train.flow import FlowProblem, solve_flow
    from inductionlab.train.hooks import FreezeColumns, JsonlLogger, TensorBoardLogger, WandbLogger
    from inductionlab.train.interventions import AblateHeads, ClampColumns, InterventionConfig
    from inductionlab.train.loop import Hook
    from inductionlab.train.proximal import SCBTrainConfig, train_scb
    from inductionlab.train.text import fit_lm
    from inductionlab.train.tokens import fit_tokens
    from inductionlab.train.toy import ToyTrainConfig, train_toy
    from inductionlab.train.transformer import fit_induction

__all__ = [
    "__version__",
    "MixedTaskConfig",
    "MixedTarget",
    "InductionTaskConfig",
    "induction_head",
    "generalized_induction_head",
    "repeated_random_tokens",
    "MarkovConfig",
    "SCBConfig",
    "random_instance",
    "TextConfig",
    "load_corpus",
    "ToyConfig",
    "TransformerConfig",
    "ChenConfig",
    "HighDimConfig",
    "RunContext",
    "load_run",
    "Hook",
    "JsonlLogger",
    "FreezeColumns",
    "InterventionConfig",
    "ClampColumns",
    "AblateHeads",
    "TensorBoardLogger",
    "WandbLogger",
    "ToyTrainConfig",
    "train_toy",
    "TrainConfig",
    "fit_induction",
    "fit_lm",
    "fit_tokens",
    "pack",
    "StagedConfig",
    "train_staged",
    "SCBTrainConfig",
    "train_scb",
    "FlowProblem",
    "solve_flow",
    "PhaseTimes",
    "phase_times",
    "head_scores",
    "probe_distance",
    "head_ablation",
    "patch_heads",
    "patch_layers",
    "direct_logit_attribution",
    "to_hooked_transformer",
    "load_model",
    "LoadedModel",
    "run_experiment",
    "run_sweep",
    "Claim",
    "Control",
    "Between",
    "Near",
    "Is",
    "judge",
    "Results",
    "Experiment",
    "register_experiment",
    "configure",
    "load_sweep",
    "Monitor",
    "MonitorConfig",
    "PhaseChange",
    "adapter_for",
    "InductionCallback",
    "init_transformer",
    "forward",
    "train_autograd",
    "sample_markov",
    "sample_scb",
    "sample_induction_tokens",
    "toy",
    "experiments",
    "plots",
    "cli",
    "rng",
]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"inductionlab.{_EXPORTS[name]}"), name)
    if name in _ALIASES:
        module, attr = _ALIASES[name]
        return getattr(importlib.import_module(f"inductionlab.{module}"), attr)
    if name in _MODULES:
        return importlib.import_module(f"inductionlab.{_MODULES[name]}")
    raise AttributeError(f"module 'inductionlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
