"""The dashboard's state: one store for the app's life (``store``) and its parts: an evaluation shown
(``column``), the per-task table on arrays (``rows``) and the triage (``triage``). Imports the engine only."""
