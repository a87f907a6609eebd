"""hermit-tui's version, as summaries, fingerprints and reports record it (``hermit_tui.__version__`` is this)."""

__version__ = "0.1.0"
