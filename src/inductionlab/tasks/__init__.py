"""Data generators and targets, one per file (Wang et al. mixed target: :mod:`inductionlab.tasks.mixed`)."""
