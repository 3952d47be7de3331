"""What reproduce judges of the across wing's experiments: one module per experiment, ``claims/<name>.py`` (its name with
``-`` as ``_``), defining its ``CLAIMS``, ``CONTROLS`` and, where it draws more than one data seed, ``DRAWS``
(docs/conventions.md#claims).  The registry imports it with the experiment; no run module imports it."""
