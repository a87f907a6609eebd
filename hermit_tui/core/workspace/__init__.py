"""The user's files, read as hermit reads them: the config (``run.yaml``), task rows and splits, the adapter tree
and the selectors that name its versions, the pipeline and judge callables, the protocol fingerprint, and safe file
reading. Imports only the base modules of ``hermit_tui.core``."""
