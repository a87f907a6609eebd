"""What a gate is asked, checked: the requirements named (``--require``, ``--only``), the margin and the error
rate (``core.report.gate``); bad values are InputError. Loads no statistics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hermit_tui.core.errors import InputError
from hermit_tui.core.report.requirements import DEFAULT_REQUIRE, NEEDS_BASELINE, REQUIREMENTS


def parse_requirements(values: Sequence[str] | None) -> list[str]:
    """``--require`` values (repeatable, or comma-separated) in order, without repeats; [] when none is given."""
    out: list[str] = []
    for value in values or ():
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            if part not in REQUIREMENTS:
                raise InputError(f"--require: unknown requirement {part[:40]!r} (one of {', '.join(REQUIREMENTS)})")
            if part not in out:
                out.append(part)
    return out


def requirements_for(named: Sequence[str] | None, *, only: bool = False, has_baseline: bool = True) -> list[str]:
    """The checks a gate runs: the defaults (those that need a baseline only when there is one), then each named
    requirement not among them; with ``only``, just the named ones."""
    named = list(dict.fromkeys(named or ()))
    if only:
        if not named:
            raise InputError("--only needs the requirements to check: name them with --require")
        return named
    defaults = [r for r in DEFAULT_REQUIRE if has_baseline or r not in NEEDS_BASELINE]
    return defaults + [r for r in named if r not in defaults]


def check_margin(margin: Any) -> float:
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin < 0:
        raise InputError(f"--margin must be a finite number at least 0, got {str(margin)[:40]}")
    return float(margin)


def check_error_rate(rate: Any) -> float | None:
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise InputError(f"--max-error-rate must be a share between 0 and 1, got {str(rate)[:40]}")
    return float(rate)


__all__ = ["check_error_rate", "check_margin", "parse_requirements", "requirements_for"]
