"""The anytime-valid design's looks and entries told apart and named: whether a plan, an entry or a look is of
that design (:func:`is_anytime`, by its method), its method text with clusters (:func:`clustered_method`,
:func:`clustered_by`), what an entry recorded (:func:`recorded_order`, :func:`recorded_clusters`) and where a look
stands (:func:`look_text`, :func:`interval_words`)."""

from __future__ import annotations

from typing import Any

from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.stats.sequential.anytime import CLUSTERED, METHOD
from hermit_tui.core.stats.sequential.look import SequentialLook


def is_anytime(thing: Any) -> bool:
    """Whether a plan, a ``sequential`` entry or a look is of the anytime-valid design (by its method)."""
    method = getattr(thing, "method", None)
    return method == METHOD or (isinstance(method, str) and method.startswith(_CLUSTERED_HEAD))


_CLUSTERED_HEAD = METHOD.split(" on the ")[0] + " " + CLUSTERED


def clustered_method(by: str, cap: int) -> str:
    """The method of a clustered launch's sequence, naming its clusters (``by``: the field, or ``file:<path>``)."""
    return (
        f"{_CLUSTERED_HEAD} (clustered by {by}; each cluster one observation, weighted by its tasks over the "
        f"largest cluster's {cap}) in a fixed order, inverted for the task-weighted mean difference, running "
        "intersection"
    )


def clustered_by(thing: Any) -> str | None:
    """What a clustered look's (or entry's) sequence was clustered by (from its method), or None."""
    method = getattr(thing, "method", None)
    if not isinstance(method, str) or not method.startswith(_CLUSTERED_HEAD + " (clustered by "):
        return None
    return method[len(_CLUSTERED_HEAD + " (clustered by ") :].split("; each cluster one observation")[0]


def recorded_clusters(entry: SequentialEntry | None) -> tuple[int, list[int]] | None:
    """(K, the cluster sizes of the stream in order) a clustered anytime launch recorded (summary.json's
    ``sequential.cluster_cap`` and ``sequential.cluster_sizes``), or None (an unclustered one)."""
    cap = getattr(entry, "cluster_cap", None) if entry is not None else None
    sizes = getattr(entry, "cluster_sizes", None) if entry is not None else None
    if not isinstance(cap, int) or not isinstance(sizes, list) or not all(isinstance(n, int) for n in sizes):
        return None
    return cap, [int(n) for n in sizes]


def recorded_order(entry: SequentialEntry | None) -> list[str]:
    """The tasks an anytime launch looked at, in order (summary.json's ``sequential.order``; [] when absent)."""
    order = getattr(entry, "order", None) if entry is not None else None
    return [str(t) for t in order] if isinstance(order, list) else []


def look_text(look: SequentialLook) -> str:
    """Where ``look`` was taken: 'n of the G tasks (R repeats each)'."""
    return f"{look.tasks} of the {look.total_tasks} tasks ({look.max_rounds} repeat{'s' * (look.max_rounds != 1)} each)"


def decided_where(look: SequentialLook) -> str:
    return f"after {look.decided_tasks} of the {look.total_tasks} tasks"


def entry_where(entry: SequentialEntry) -> str:
    """Where a recorded anytime entry stands: 'after n of the G tasks (R repeats each)'."""
    r = entry.max_rounds
    return f"after {entry.tasks_looked} of the {entry.total_tasks} tasks ({r} repeat{'s' * (r != 1)} each)"


def interval_words(look: SequentialLook) -> tuple[str, str]:
    """(what the interval is called, where it was taken) for a one-line figure: '95% CS', ' (anytime-valid, ...)'."""
    return "anytime-valid 95% CS", f" (after {look_text(look)})"


__all__ = [
    "clustered_by",
    "clustered_method",
    "decided_where",
    "entry_where",
    "interval_words",
    "is_anytime",
    "look_text",
    "recorded_clusters",
    "recorded_order",
]
