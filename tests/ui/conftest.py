"""The UI tests' fixtures, defined in ui_fixtures.py (a module of its own name, so that mypy can check it beside
tests/conftest.py: two files named conftest.py would both be the module ``conftest``)."""

from ui_fixtures import demo, evaluated_copy, evaluated_template, steady_cursors

__all__ = ["demo", "evaluated_copy", "evaluated_template", "steady_cursors"]
