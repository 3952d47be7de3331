"""Wang, Yu, E, Wu: induction-head targets, their approximation by two-layer transformers with learnable RPE, the
toy model's lazy-to-rich dynamics and their scaling laws, probing, and the language-model experiments
(docs/wang.md).  ``_shared`` serves ``wikitext`` and ``repeated-text``.

It imports none of them: the registry imports each experiment when first asked for it
(``experiments/registry.py``)."""
