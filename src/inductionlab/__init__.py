"""inductionlab: how transformers learn induction heads — tasks, models, trainers, theory and analyses.

Quick API::

    from inductionlab import load_run, run_experiment, experiments
    cfg = experiments.get("lazy-to-rich").CONFIG
    run_experiment("lazy-to-rich", cfg, "runs/l2r")
    run = load_run("runs/l2r"); run.metrics  # pandas
"""
from __future__ import annotations

__version__ = "0.1.0"

from inductionlab.runs import load_run, run_experiment  # noqa: E402

__all__ = ["__version__", "load_run", "run_experiment"]
