"""Wang, Yu, E, Wu: induction-head targets, their approximation by two-layer transformers with learnable RPE, the
toy model's lazy-to-rich dynamics and their scaling laws, probing, and the language-model experiments
(docs/wang.md).  ``_shared`` serves ``wikitext`` and ``repeated-text``."""

from inductionlab.experiments.registry import register_experiment
from inductionlab.experiments.wang import (
    adam_vs_gd_highdim,
    approx_gihn,
    approx_ih2,
    approx_ihn,
    heads_dims,
    joint_training,
    lazy_to_rich,
    plateau_scaling,
    probe,
    repeated_text,
    wikitext,
)

EXPERIMENTS = (
    lazy_to_rich.EXPERIMENT,
    lazy_to_rich.BOOLEAN,  # workshop Fig. 3: Fig. 2 with ±1 tokens, in the same package
    plateau_scaling.EXPERIMENT,
    approx_ih2.EXPERIMENT,
    approx_ihn.EXPERIMENT,
    approx_gihn.EXPERIMENT,
    probe.EXPERIMENT,
    heads_dims.EXPERIMENT,
    adam_vs_gd_highdim.EXPERIMENT,
    joint_training.EXPERIMENT,
    wikitext.EXPERIMENT,
    repeated_text.EXPERIMENT,
)
for experiment in EXPERIMENTS:
    register_experiment(experiment)
