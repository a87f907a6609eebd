"""The files an evaluation leaves: hermit's ``results.jsonl`` and ``summary.json`` (``results``) and where they live
(``folders``), read as columns at the speed of the file (``columns``, ``table``, ``rows``, ``index``, ``scores``;
``lines``: the line decoder they share, and one task's records read without numpy), written while a launch runs
(``journal``), and hermit-tui's sidecars beside them: transcripts and the triage annotations with their taxonomy.
Imports the workspace and the base modules only."""
