"""The dashboard: the Textual app (``app``, started by ``start``; a launch's life in ``launching``, triage in
``annotating``), its state (``state``), screens (one per module), reusable widgets, keys as data (``bindings``) and
the command palette (``palette``). Data flows one way: the engine's events into the store, the store into widgets."""
