"""The experiments that span papers or libraries: Wang et al.'s transformer on Chen et al.'s chains
(``markov-transformer``), the interventions on both papers' models, and the induction-head monitor on Hugging Face,
TransformerLens and the toolkit's own models (``hf-induction``, ``fast-induction``; docs/monitor.md)."""

from inductionlab.experiments.across import fast_induction, hf_induction, interventions, markov_transformer
from inductionlab.experiments.registry import register_experiment

EXPERIMENTS = (
    markov_transformer.EXPERIMENT,
    interventions.EXPERIMENT,
    hf_induction.EXPERIMENT,
    fast_induction.EXPERIMENT,
)
for experiment in EXPERIMENTS:
    register_experiment(experiment)
