"""The experiments that span papers or libraries: Wang et al.'s transformer on Chen et al.'s chains
(``markov-transformer``), the interventions on both papers' models, and the induction-head monitor on Hugging Face,
TransformerLens and the toolkit's own models (``hf-induction``, ``fast-induction``; docs/monitor.md).

It imports none of them: the registry imports each experiment when first asked for it
(``experiments/registry.py``)."""
