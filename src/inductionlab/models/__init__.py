"""Models, one per file with its config dataclass on top (the reparameterised toy: :mod:`inductionlab.models.toy`)."""
