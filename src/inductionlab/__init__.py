"""inductionlab: how transformers learn induction heads — tasks, models, trainers, theory and analyses."""

from __future__ import annotations

from inductionlab._version import __version__
from inductionlab.runner import run_experiment
from inductionlab.runs import load_run

__all__ = ["__version__", "load_run", "run_experiment"]
