"""The package version (one place; ``inductionlab.__version__`` and summary.json read it)."""

__version__ = "0.1.0"
