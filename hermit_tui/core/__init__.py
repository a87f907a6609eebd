"""The evaluation engine. Nothing in this package imports Textual (tests/test_architecture.py checks it)."""
