"""Closed-form population losses, gradient-flow vector fields and predictions."""
