"""The failure taxonomy (``core.records.annotations``) computed from columns: the same figures as ``selector_taxonomy``
and ``pair_taxonomy``, with the cost growing with the annotations, not with the attempts.

The records-based functions walk every attempt as an AttemptRecord; here the attempts are arrays (a
``core.records.columns.AttemptTable``, or a dashboard column: anything with the :class:`LatestView` members) and only
the annotated attempts are read back as records (an annotation applies only to the attempt it was made on: its digest
needs the whole record).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from hermit_tui.core.records.annotations import (
    DEFAULT_LABEL_SET,
    Annotation,
    PairTaxonomy,
    SelectorTaxonomy,
    _ordered,
    attempt_digest,
    pair_changes,
)
from hermit_tui.core.records.columns import OK
from hermit_tui.core.records.results import SOLVED_THRESHOLD

Key = tuple[str, int]


class LatestView(Protocol):
    """What the taxonomy reads: the task ids, the latest row of each (task, repeat), per-row columns, a row's
    record, and the row of a key."""

    @property
    def ids(self) -> list[str]: ...

    @property
    def task(self) -> np.ndarray: ...

    @property
    def status(self) -> np.ndarray: ...

    @property
    def score(self) -> np.ndarray: ...

    def latest(self) -> np.ndarray: ...

    def record(self, row: int) -> Any: ...

    def find(self, task_id: str, repeat: int) -> int: ...


def failed_rows(view: LatestView, rows: np.ndarray, threshold: float) -> np.ndarray:
    """Per row: a failure (status error/judge_error, or a score below the threshold, NaN included)."""
    with np.errstate(invalid="ignore"):
        failed: np.ndarray = (view.status[rows] != OK) | ~(view.score[rows] >= threshold)
    return failed


def live_annotations(view: LatestView, annotations: Mapping[Key, Annotation]) -> dict[Key, tuple[Annotation, int]]:
    """The annotations that describe the attempts recorded now, each with its row (``annotations.applying``)."""
    out = {}
    for key, ann in annotations.items():
        row = view.find(*key)
        if row < 0:
            continue
        if ann.attempt is not None and ann.attempt != attempt_digest(view.record(row)):
            continue  # made on an earlier attempt, re-run since
        out[key] = (ann, row)
    return out


def task_mean(
    view: LatestView, rows: np.ndarray, task_ids: Sequence[str] | None, scores: Mapping[int, float] | None = None
) -> float | None:
    """``annotations.task_mean`` of ``rows``: the mean over tasks (``task_ids`` only, when given) of each task's
    mean score, with ``scores`` (row -> score) in place of the recorded ones; a non-finite score counts 0."""
    score = view.score[rows].astype(float)
    if scores:
        where = {int(r): i for i, r in enumerate(rows.tolist())}
        for row, value in scores.items():
            if row in where:
                score[where[row]] = value
    task = view.task[rows].astype(np.int64)
    if task_ids is not None:
        wanted = set(task_ids)
        keep = np.fromiter((t in wanted for t in view.ids), dtype=bool, count=len(view.ids))
        mask = keep[task] if len(task) else np.zeros(0, bool)
        task, score = task[mask], score[mask]
    if not len(task):
        return None
    score[~np.isfinite(score)] = 0.0
    n = np.bincount(task, minlength=len(view.ids))
    sums = np.bincount(task, weights=score, minlength=len(view.ids))
    present = n > 0
    return float((sums[present] / n[present]).mean())


def selector_taxonomy(
    label: str,
    view: LatestView,
    annotations: Mapping[Key, Annotation],
    threshold: float = SOLVED_THRESHOLD,
    label_set: Sequence[str] = DEFAULT_LABEL_SET,
    task_ids: Sequence[str] | None = None,
    live: dict[Key, tuple[Annotation, int]] | None = None,
) -> SelectorTaxonomy:
    """``annotations.selector_taxonomy`` from columns (``live``: :func:`live_annotations`, when already known)."""
    rows = view.latest()
    failed = failed_rows(view, rows, threshold)
    live = live_annotations(view, annotations) if live is None else live
    counts: dict[str, int] = {}
    failure_counts: dict[str, int] = {}
    labelled_failures = 0
    for ann, row in live.values():
        if not ann.labels:
            continue
        is_failed = bool(failed_rows(view, np.array([row]), threshold)[0])
        labelled_failures += is_failed
        for name in ann.labels:
            counts[name] = counts.get(name, 0) + 1
            if is_failed:
                failure_counts[name] = failure_counts.get(name, 0) + 1
    corrected = {row: a.corrected_score for a, row in live.values() if a.corrected_score is not None}
    recorded_mean = corrected_mean = None
    if corrected:
        recorded_mean = task_mean(view, rows, task_ids)
        corrected_mean = task_mean(view, rows, task_ids, corrected)
    anns = [a for a, _ in live.values()]
    return SelectorTaxonomy(
        label=label,
        attempts=len(rows),
        failures=int(failed.sum()),
        labelled_failures=labelled_failures,
        labelled_attempts=sum(1 for a in anns if a.labels),
        counts=_ordered(counts, label_set),
        failure_counts=_ordered(failure_counts, label_set),
        notes=sum(1 for a in anns if a.note),
        corrected=len(corrected),
        stale=len(annotations) - len(live),
        corrected_mean=corrected_mean,
        recorded_mean=recorded_mean,
    )


def task_labels(view: LatestView, live: Mapping[Key, tuple[Annotation, int]]) -> dict[str, set[str]]:
    """task id -> the labels any of its attempts carries."""
    out: dict[str, set[str]] = {}
    for key, (ann, _) in live.items():
        if ann.labels:
            out.setdefault(key[0], set()).update(ann.labels)
    return out


def untriaged_tasks(
    view: LatestView, live: Mapping[Key, tuple[Annotation, int]], threshold: float = SOLVED_THRESHOLD
) -> set[str]:
    """Tasks with a failure that carries no label."""
    rows = view.latest()
    failed = failed_rows(view, rows, threshold)
    labelled = np.array(sorted(row for ann, row in live.values() if ann.labels), dtype=np.int64)
    if len(labelled):
        failed &= ~np.isin(rows, labelled)
    return _ids_of(view, view.task[rows][failed])


def present_tasks(view: LatestView) -> set[str]:
    return _ids_of(view, view.task[view.latest()])


def _ids_of(view: LatestView, tasks: np.ndarray) -> set[str]:
    """The ids of the task indices in ``tasks`` (a count per task instead of a sort: linear in the tasks)."""
    ids = view.ids
    seen = np.bincount(tasks.astype(np.int64), minlength=len(ids)) if len(tasks) else np.zeros(0, np.int64)
    return set(map(ids.__getitem__, np.flatnonzero(seen).tolist()))


def pair_taxonomy(
    a: str,
    view_a: LatestView,
    annotations_a: Mapping[Key, Annotation],
    b: str,
    view_b: LatestView,
    annotations_b: Mapping[Key, Annotation],
    label_set: Sequence[str] = DEFAULT_LABEL_SET,
    task_order: Sequence[str] | None = None,
    threshold: float = SOLVED_THRESHOLD,
    live_a: dict[Key, tuple[Annotation, int]] | None = None,
    live_b: dict[Key, tuple[Annotation, int]] | None = None,
) -> PairTaxonomy:
    """``annotations.pair_taxonomy`` from columns."""
    live_a = live_annotations(view_a, annotations_a) if live_a is None else live_a
    live_b = live_annotations(view_b, annotations_b) if live_b is None else live_b
    return pair_changes(
        a,
        b,
        task_labels(view_a, live_a),
        task_labels(view_b, live_b),
        untriaged_tasks(view_a, live_a, threshold),
        untriaged_tasks(view_b, live_b, threshold),
        present_tasks(view_a) & present_tasks(view_b),
        label_set,
        task_order,
    )


__all__ = [
    "LatestView",
    "failed_rows",
    "live_annotations",
    "pair_taxonomy",
    "present_tasks",
    "selector_taxonomy",
    "task_labels",
    "task_mean",
    "untriaged_tasks",
]
