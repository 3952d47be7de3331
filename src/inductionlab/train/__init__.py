"""Training loops, functional optimisers with per-run learning rates, and the gradient-flow solver."""
