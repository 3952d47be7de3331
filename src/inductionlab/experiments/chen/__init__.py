"""Chen, Sheen, Wang, Yang: in-context n-gram Markov chains, the staged training of their two-attention-layer model
and the generalised induction head (docs/conventions.md#chen-3-1).  ``_shared`` serves the experiments that train
variants of the model (``markov-stages``, ``markov-joint``, ``markov-full``).

It imports none of them: the registry imports each experiment when first asked for it
(``experiments/registry.py``)."""
