"""How the report writes its figures, shared by its renderers (Markdown and CSV in ``core.report.text``, HTML in
``core.report.html``, the attempt CSV in ``core.report.exports``) so that every format reads the same: figures to 4
decimals, intervals, thresholds, exact values for machines, spreadsheet-safe text cells, fingerprint fields, the
interval method of each selector and the protocol row of a --stop-when-decided launch."""

from __future__ import annotations

import re
from typing import Any

from hermit_tui.core.present import fixed, interval_text
from hermit_tui.core.report.model import Report, SelectorReport
from hermit_tui.core.safe import csv_cell
from hermit_tui.core.stats.sequential import anytime_looks
from hermit_tui.core.stats.sequential.look import entry_stopped_how


def figure(x: float | None, digits: int = 4) -> str:
    """A figure to ``digits`` decimals (4: the report's precision), or ``—``."""
    return fixed(x, digits)


def interval(lo: float | None, hi: float | None, digits: int = 4) -> str:
    """``0.1200 to 0.4000``, or ``—`` without an interval."""
    return interval_text(lo, hi, digits)


def compact(x: float) -> str:
    """A threshold as written: ``1.0`` for a whole number, else the shortest form (``0.5``)."""
    return f"{x:.1f}" if float(x).is_integer() else f"{x:g}"


def exact(x: float | None) -> str:
    """A figure for a machine: the shortest repr that reads back as the same float; empty when None."""
    return "" if x is None else repr(float(x))


def spreadsheet_text(value: Any) -> str:
    """A text cell a spreadsheet will not run as a formula and a terminal will not act on (``core.safe.csv_cell``):
    one starting with = + - @ (or a tab or carriage return) gets a leading apostrophe, control characters are shown
    as their escape."""
    return str(csv_cell(str(value)))


def fingerprint_value(value: Any) -> str:
    """A fingerprint field in a table: a sha256 shortened to 12 characters, ``—`` when not recorded."""
    if value is None:
        return "—"
    text = str(value)
    return text[:12] if re.fullmatch(r"[0-9a-f]{64}", text) else text


def methods_by_selector(selectors: list[SelectorReport]) -> str:
    """Which interval method each selector's row used, e.g. ``none, root: score; final: no-spread``."""
    by: dict[str, list[str]] = {}
    for s in selectors:
        by.setdefault(s.stats.ci_method or "none", []).append(s.label)
    return "; ".join(f"{', '.join(labels)}: {m}" for m, labels in by.items())


def sequential_protocol(r: Report) -> str:
    """The protocol row of a --stop-when-decided launch: baseline, rounds run of the maximum, method."""
    entries = [(s.label, s.sequential) for s in r.selectors if s.sequential is not None]
    if not entries:
        return ""
    launches: dict[tuple[str, str, float | None], list[str]] = {}
    for label, e in entries:
        how = entry_stopped_how(e)  # (how a launch that stopped early stopped)
        if anytime_looks.is_anytime(e):  # every repeat of each task looked at: tasks, not rounds
            stopped = e.tasks_looked is not None and e.total_tasks is not None and e.tasks_looked < e.total_tasks
            where = f"{e.tasks_looked} of the {e.total_tasks} tasks (anytime-valid; "
            where += f"{how})" if stopped else "ran every task)"
        else:
            within = f"{e.tasks_looked} of the {e.total_tasks} tasks of round 1, " if e.within_first_round else ""
            run = how if e.rounds < e.max_rounds or within else "ran every round"
            where = f"{within}{e.rounds} of at most {e.max_rounds} rounds ({run})"
        launches.setdefault((e.baseline, where, e.margin), []).append(label)
    parts = []
    for (baseline, where, margin), labels in launches.items():
        parts.append(
            f"{', '.join(x for x in labels if x != baseline) or 'no candidate'} against baseline {baseline}: {where}"
            + (f", equivalence margin ±{margin:g}" if margin is not None else "")
        )
    return "; ".join(parts) + f". Method: {entries[0][1].method}, alpha {entries[0][1].alpha:g}."


def not_run_note(summary: Any, missing: int) -> str:
    """Why a launch that stopped early left ``missing`` test tasks without attempts, when the summary's
    ``sequential`` entry says so (the tasks it did not look at), else ''."""
    seq = getattr(summary, "sequential", None) if summary is not None else None
    if seq is None or not getattr(summary, "is_complete", False):
        return ""
    looked, total = seq.tasks_looked, seq.total_tasks
    if looked is None or total is None or total - looked != missing:
        return ""
    return f" (not run: the launch {entry_stopped_how(seq)} after {looked} of the {total} tasks)"


__all__ = [
    "compact",
    "exact",
    "figure",
    "fingerprint_value",
    "interval",
    "methods_by_selector",
    "not_run_note",
    "sequential_protocol",
    "spreadsheet_text",
]
