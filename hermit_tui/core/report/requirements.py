"""The gate's vocabulary: the requirements a gate can check and the ones it checks by default. Their own module, with
no imports, so that the command line can offer them (``--require``'s help) without loading the gate's statistics."""

from __future__ import annotations

REQUIREMENTS = ("improvement", "no-regression", "comparable", "complete", "robust-to-errors")
#: What is checked when no requirement is named: the candidate is measured properly and is not worse.
DEFAULT_REQUIRE = ("comparable", "complete", "no-regression")
NEEDS_BASELINE = frozenset({"improvement", "no-regression", "comparable", "robust-to-errors"})

__all__ = ["DEFAULT_REQUIRE", "NEEDS_BASELINE", "REQUIREMENTS"]
