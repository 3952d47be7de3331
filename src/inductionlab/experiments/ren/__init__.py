"""Ren, Wang, Lee: sparse contextual bigrams learnt by a one-layer linear transformer, preconditioned projected
proximal gradient descent, its SGD and softmax comparisons, and transfer (docs/ren.md)."""

from inductionlab.experiments.registry import register_experiment
from inductionlab.experiments.ren import scb_convergence, scb_noise_sim, scb_softmax, scb_transfer

EXPERIMENTS = (scb_convergence.EXPERIMENT, scb_softmax.EXPERIMENT, scb_transfer.EXPERIMENT, scb_noise_sim.EXPERIMENT)
for experiment in EXPERIMENTS:
    register_experiment(experiment)
