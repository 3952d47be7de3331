"""The results store (docs/conventions.md#provenance, #ledger): what a job is keyed by — its config, the digest of
exactly the source files its run imports (:mod:`~inductionlab.store.closure`) and the software it ran on
(:mod:`~inductionlab.store.key`) —, which code made a run directory (:mod:`~inductionlab.store.provenance`), the
layout of a reproduce directory (:mod:`~inductionlab.store.layout`), and the committed results ledger the page is
rendered from (:mod:`~inductionlab.store.ledger`).  ``reproduce``, ``sweep`` and ``report`` are its clients."""
