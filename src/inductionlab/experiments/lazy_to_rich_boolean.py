"""Workshop Fig. 3 (spec §6.2): the lazy-to-rich experiment with Boolean tokens x_i ~ Unif{±1}.

Same model, target and protocol as :mod:`inductionlab.experiments.lazy_to_rich`; the closed forms of
§5.4 assume Gaussian tokens, so only the exact-softmax gradient flow (Monte Carlo over ±1 tokens) is
overlaid.
"""
from __future__ import annotations

from dataclasses import replace

from inductionlab.experiments import lazy_to_rich
from inductionlab.tasks.mixed import MixedTaskConfig

NAME = "lazy-to-rich-boolean"
DESCRIPTION = "The lazy-to-rich experiment with Boolean ±1 tokens (workshop Fig. 3)"
RUN_AXIS = True
Config = lazy_to_rich.Config
CONFIG = replace(lazy_to_rich.CONFIG, task=MixedTaskConfig(tokens="boolean"), gf="exact")
PRESETS = lazy_to_rich.PRESETS
run = lazy_to_rich.run
plot = lazy_to_rich.plot
