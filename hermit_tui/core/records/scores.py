"""Attempt scores grouped by task, vectorised: what every statistic in ``core.stats`` starts from.

A selector's attempts come either as ``AttemptRecord`` objects or ``(task_id, repeat, score)`` tuples (what the
files and the dashboard hold today), or as columns (:class:`AttemptColumns`: a task index into the test ids, the
repeat and the score, as numpy arrays) so that a columnar store can feed the statistics without building objects.
Both end in a :class:`TaskTable`: the kept scores sorted by task, with per-task counts, means, standard deviations
and solved counts computed with ``numpy.bincount`` (no Python loop over tasks).

Rules, the same for both inputs: a NaN or infinite score counts as 0 (and is counted); the later record of a
(task, repeat) replaces an earlier one; attempts on ids outside the test tasks are left out; both are counted in
``n_ignored``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Protocol, runtime_checkable

import numpy as np

from hermit_tui.core.records.results import AttemptRecord

Attempt = AttemptRecord | tuple[str, int, float]


@dataclass(frozen=True)
class AttemptColumns:
    """One selector's attempts as columns. ``task[i]`` indexes the test task ids passed beside it (``-1``: an id
    outside them); ``repeat`` and ``score`` are the attempt's repeat number and judge score."""

    task: np.ndarray
    repeat: np.ndarray
    score: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.task)
        if len(self.repeat) != n or len(self.score) != n:
            raise ValueError("AttemptColumns: task, repeat and score must have the same length")


@dataclass(frozen=True)
class TaskTable:
    """One selector's kept scores grouped by task.

    ``ids`` are the test task ids in order; ``index`` the positions (into ``ids``, ascending) of the tasks with at
    least one attempt; per attempted task: ``n`` attempts, ``mean``, ``sd`` (NaN with one attempt) and ``solved``
    (attempts scoring at least the threshold). ``scores`` holds every kept score, task by task (repeats in order):
    task ``j``'s are ``scores[offsets[j]:offsets[j + 1]]``.
    """

    ids: list[str]
    index: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    solved: np.ndarray
    scores: np.ndarray
    offsets: np.ndarray
    n_ignored: int
    nonfinite: int
    threshold: float

    @property
    def n_tasks(self) -> int:
        return len(self.index)

    @property
    def n_attempts(self) -> int:
        return len(self.scores)

    @property
    def missing(self) -> np.ndarray:
        """Positions (into ``ids``) of the test tasks without an attempt."""
        mask = np.ones(len(self.ids), dtype=bool)
        mask[self.index] = False
        return np.flatnonzero(mask)

    def task_scores(self, j: int) -> np.ndarray:
        return self.scores[self.offsets[j] : self.offsets[j + 1]]


def _from_objects(
    attempts: Iterable[Attempt], task_ids: Sequence[str] | None
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Columns of records or tuples; the ids are ``task_ids`` or, when None, the ids met, in order."""
    items = attempts if isinstance(attempts, list) else list(attempts)
    if items and all(type(x) is tuple for x in items):
        tids, reps, scores = (list(c) for c in zip(*items)) if items else ([], [], [])
        tids = [t if type(t) is str else str(t) for t in tids]
    else:
        tids, reps, scores = [], [], []
        for rec in items:
            if isinstance(rec, AttemptRecord):
                tid, rep, score = rec.id, rec.repeat, rec.judge.score
            else:
                tid, rep, score = rec
            tids.append(str(tid))
            reps.append(rep)
            scores.append(score)
    ids = list(dict.fromkeys(task_ids if task_ids is not None else tids))
    position = {tid: i for i, tid in enumerate(ids)}
    task = np.fromiter(map(position.get, tids, repeat(-1)), dtype=np.int64, count=len(tids))
    return ids, task, np.asarray(reps, dtype=np.int64), np.asarray(scores, dtype=float)


@runtime_checkable
class ColumnarSource(Protocol):
    """Attempts held as columns (``core.records.columns.AttemptTable``, ``core.records.index.Snapshot``): their task ids
    and, for a list of test task ids, the :class:`AttemptColumns`."""

    @property
    def ids(self) -> Sequence[str]: ...

    def attempt_columns(self, task_ids: Sequence[str]) -> AttemptColumns: ...


def tabulate(
    attempts: Iterable[Attempt] | AttemptColumns | TaskTable | ColumnarSource,
    task_ids: Sequence[str] | None,
    threshold: float,
) -> TaskTable:
    """Group one selector's attempts by test task (see the module's rules). A :class:`TaskTable` made for the same
    task ids and threshold is returned as it is (so a report groups each selector once). A columnar source (an
    object with ``ids`` and ``attempt_columns(task_ids)``: ``core.records.columns.AttemptTable``, an attempt index's
    snapshot) is taken as its columns."""
    if not isinstance(attempts, (TaskTable, AttemptColumns)) and isinstance(attempts, ColumnarSource):
        if task_ids is None:  # a columnar source (core.records.columns, core.records.index): its ids in their order
            task_ids = list(attempts.ids)
        attempts = attempts.attempt_columns(task_ids)
    if isinstance(attempts, TaskTable):
        same_ids = task_ids is None or list(task_ids) == attempts.ids
        if same_ids and attempts.threshold == threshold:
            return attempts
        raise ValueError("a TaskTable made for other task ids or another threshold")
    if isinstance(attempts, AttemptColumns):
        if task_ids is None:
            raise ValueError("AttemptColumns need the task ids their task indices refer to")
        ids = list(task_ids)
        task = np.asarray(attempts.task, dtype=np.int64)
        rep = np.asarray(attempts.repeat, dtype=np.int64)
        score = np.array(attempts.score, dtype=float)  # a copy: non-finite scores are replaced below
    else:
        ids, task, rep, score = _from_objects(attempts, task_ids)
    total = len(score)
    bad = ~np.isfinite(score)
    nonfinite = int(bad.sum())
    score[bad] = 0.0

    # the last record of each (task, repeat) wins: order by (task, repeat, arrival), keep each key's last
    order = np.lexsort((np.arange(total), rep, task))
    task, rep, score = task[order], rep[order], score[order]
    last = np.ones(total, dtype=bool)
    if total > 1:
        last[:-1] = (task[1:] != task[:-1]) | (rep[1:] != rep[:-1])
    keep = last & (task >= 0) & (task < len(ids))
    task, score = task[keep], score[keep]

    index, starts, n = np.unique(task, return_index=True, return_counts=True)
    which = np.repeat(np.arange(len(index)), n)
    sums = np.bincount(which, weights=score, minlength=len(index))
    mean = sums / np.maximum(n, 1)
    resid2 = np.bincount(which, weights=(score - mean[which]) ** 2, minlength=len(index))
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(n > 1, np.sqrt(resid2 / np.maximum(n - 1, 1)), np.nan)
    solved = np.bincount(which, weights=(score >= threshold), minlength=len(index)).astype(np.int64)
    offsets = np.append(starts, len(score)).astype(np.int64)
    return TaskTable(
        ids=ids,
        index=index.astype(np.int64),
        n=n.astype(np.int64),
        mean=mean,
        sd=sd,
        solved=solved,
        scores=score,
        offsets=offsets,
        n_ignored=total - len(score),
        nonfinite=nonfinite,
        threshold=threshold,
    )


def score_range(*tables: TaskTable) -> tuple[float, float]:
    """The score scale the intervals respect: [0, 1], widened to the lowest and highest score observed."""
    lo, hi = 0.0, 1.0
    for t in tables:
        if len(t.scores):
            lo, hi = min(lo, float(t.scores.min())), max(hi, float(t.scores.max()))
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else (0.0, 1.0)


__all__ = ["Attempt", "AttemptColumns", "ColumnarSource", "TaskTable", "score_range", "tabulate"]
