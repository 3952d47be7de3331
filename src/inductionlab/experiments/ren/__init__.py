"""Ren, Wang, Lee: sparse contextual bigrams learnt by a one-layer linear transformer, preconditioned projected
proximal gradient descent, its SGD and softmax comparisons, and transfer (docs/ren.md).

It imports none of them: the registry imports each experiment when first asked for it
(``experiments/registry.py``)."""
