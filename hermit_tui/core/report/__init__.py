"""What is reported from the evaluations on disk: the report's model and its builder (``model``, ``build``), its
renderers (``text``, ``html``, ``svg``, ``exports``, ``formatting``), the gate for CI (``gate``), the protocol checks
and whether evaluations compare (``comparable``). Imports stats and below; never publish."""
