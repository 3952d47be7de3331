"""Chen, Sheen, Wang, Yang: in-context n-gram Markov chains, the staged training of their two-attention-layer model
and the generalised induction head (docs/conventions.md#chen-3-1).  ``_shared`` serves the experiments that train
variants of the model (``markov-stages``, ``markov-joint``, ``markov-full``)."""

from inductionlab.experiments.chen import (
    markov_full,
    markov_joint,
    markov_length_generalization,
    markov_mi,
    markov_stages,
)
from inductionlab.experiments.registry import register_experiment

EXPERIMENTS = (
    markov_stages.EXPERIMENT,
    markov_joint.EXPERIMENT,
    markov_mi.EXPERIMENT,
    markov_length_generalization.EXPERIMENT,
    markov_full.EXPERIMENT,
)
for experiment in EXPERIMENTS:
    register_experiment(experiment)
