"""One evaluation's attempts as the dashboard holds them: an :class:`~hermit_tui.core.columns.AttemptTable` (read
from disk, or growing with a live launch), which row is the attempt of each (task, repeat) now (a retried attempt
replaces the earlier one), and per task the figures every view shows, as arrays.

Per task (by the table's task index): ``n`` attempts, ``total`` score, ``solved`` (at least the threshold), pipeline
``errors``, ``judge_errors``, ``unknown_cost`` attempts, ``failed`` (``core.annotations.is_failure``), the lowest
and highest score (``lo``, ``hi``: finite scores only); over the evaluation: ``done``, ``score_sum``, the error
counts, ``known_cost``, ``unknown_cost``, ``outside_unit`` (scores outside [0, 1]) and ``failures``.

:meth:`AttemptIndex.from_table` computes them at once (numpy, in a worker: a million attempts in well under a
second); :meth:`AttemptIndex.add` keeps them up to date one live attempt at a time (a few microseconds). The row of a
key is found in a dense (task, repeat) array for repeats 1..``DENSE_REPEATS`` (a dict for any other repeat, which
only a hostile file holds).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import NamedTuple

import numpy as np

from hermit_tui.core.columns import ERROR, JUDGE_ERROR, OK, STATUSES, AttemptTable
from hermit_tui.core.records import SOLVED_THRESHOLD, AttemptRecord
from hermit_tui.core.scores import AttemptColumns

DENSE_REPEATS = 64
_INT = np.int32


class AttemptIndex:
    """See the module's docstring. ``ids``, ``task``, ``repeat``, ``status``, ``score``, ``latest()``, ``record()``
    and ``find()`` make it a ``core.column_taxonomy.LatestView``."""

    def __init__(self, table: AttemptTable | None = None, threshold: float = SOLVED_THRESHOLD):
        self.table = table if table is not None else AttemptTable()
        self.threshold = float(threshold)
        self._alive = np.zeros(0, dtype=bool)
        self._slot = np.full((0, 0), -1, dtype=_INT)
        self._odd: dict[tuple[int, int], int] = {}
        self._cells: dict[str, np.ndarray] = {}
        self._resize_tasks(0)
        self.done = 0
        self.score_sum = 0.0
        self.errors = 0
        self.judge_errors = 0
        self.unknown_cost = 0
        self.known_cost = 0.0
        self.outside_unit = 0
        self.failures = 0

    # -- the table's columns (what the taxonomy and the views read) -----------------------------------------------
    @property
    def ids(self) -> list[str]:
        return self.table.ids

    @property
    def task(self) -> np.ndarray:
        return self.table.task

    @property
    def repeat(self) -> np.ndarray:
        return self.table.repeat

    @property
    def status(self) -> np.ndarray:
        return self.table.status

    @property
    def score(self) -> np.ndarray:
        return self.table.score

    def record(self, row: int) -> AttemptRecord:
        return self.table.record(row)

    def alive(self) -> np.ndarray:
        """Per row: the attempt of its (task, repeat) now."""
        return self._alive[:self.table.n]

    def latest(self) -> np.ndarray:
        """The rows that count now, in arrival order."""
        return np.flatnonzero(self.alive())

    # -- per task -------------------------------------------------------------------------------------------------
    def cell(self, name: str) -> np.ndarray:
        """A per-task figure (``n``, ``total``, ``solved``, ``errors``, ``judge_errors``, ``unknown_cost``,
        ``failed``, ``lo``, ``hi``), by task index, for the tasks of ``ids``."""
        return self._cells[name][:len(self.ids)]

    def _resize_tasks(self, tasks: int) -> None:
        old = self._cells.get("n")
        have = 0 if old is None else len(old)
        if tasks <= have and old is not None:
            return
        size = max(tasks, 2 * have, 16)
        cells = {}
        for name, dtype, fill in (("n", _INT, 0), ("total", float, 0.0), ("solved", _INT, 0), ("errors", _INT, 0),
                                  ("judge_errors", _INT, 0), ("unknown_cost", _INT, 0), ("failed", _INT, 0),
                                  ("lo", float, math.inf), ("hi", float, -math.inf)):
            array = np.full(size, fill, dtype=dtype)
            if old is not None:
                array[:have] = self._cells[name]
            cells[name] = array
        self._cells = cells
        width = self._slot.shape[1]
        slot = np.full((size, width), -1, dtype=_INT)
        slot[:self._slot.shape[0]] = self._slot
        self._slot = slot

    def _widen(self, repeats: int) -> None:
        width = self._slot.shape[1]
        if repeats <= width:
            return
        slot = np.full((self._slot.shape[0], min(DENSE_REPEATS, max(repeats, 2 * width, 4))), -1, dtype=_INT)
        slot[:, :width] = self._slot
        self._slot = slot

    # -- keys -----------------------------------------------------------------------------------------------------
    def row_of(self, task_id: str, repeat: int) -> int:
        """The row of the attempt at (``task_id``, ``repeat``) now, or -1."""
        local = self.table.index.get(task_id)
        return -1 if local is None else self._row(local, repeat)

    find = row_of

    def _row(self, local: int, repeat: int) -> int:
        if 1 <= repeat <= self._slot.shape[1]:
            return int(self._slot[local, repeat - 1]) if local < self._slot.shape[0] else -1
        return self._odd.get((local, repeat), -1)

    def _set_row(self, local: int, repeat: int, row: int) -> None:
        if 1 <= repeat <= DENSE_REPEATS:
            self._widen(repeat)
            self._slot[local, repeat - 1] = row
        else:
            self._odd[(local, repeat)] = row

    def task_rows(self, task_id: str) -> list[int]:
        """The rows of a task's attempts now, by repeat."""
        local = self.table.index.get(task_id)
        if local is None:
            return []
        rows = [int(r) for r in self._slot[local].tolist() if r >= 0] if local < self._slot.shape[0] else []
        rows += [row for (t, _), row in self._odd.items() if t == local]
        return sorted(rows, key=lambda r: int(self.table.repeat[r]))

    def keys(self) -> Iterator[tuple[str, int]]:
        """(task id, repeat) of every attempt now, in arrival order."""
        ids, task, rep = self.ids, self.task, self.repeat
        for row in self.latest().tolist():
            yield ids[task[row]], int(rep[row])

    def mark(self, task_id: str, repeat: int) -> tuple[str | None, float | None]:
        """(status, score) of the attempt at a key, (None, None) when there is none: what the grid draws."""
        row = self.row_of(task_id, repeat)
        if row < 0:
            return None, None
        return STATUSES[int(self.table.status[row])], float(self.table.score[row])

    def failed_row(self, row: int) -> bool:
        s = self.table.score[row]
        return bool(self.table.status[row] != OK or not s >= self.threshold)

    # -- building -------------------------------------------------------------------------------------------------
    @classmethod
    def from_table(cls, table: AttemptTable, threshold: float = SOLVED_THRESHOLD,
                   pause: Callable[[], None] | None = None) -> AttemptIndex:
        """Everything at once from a table read from disk (the last line of a (task, repeat) counts). ``pause``
        is called between the steps (a worker giving way to an interface)."""
        pause = pause or (lambda: None)
        index = cls(table, threshold)
        n = table.n
        index._alive = np.zeros(n, dtype=bool)
        rows = table.latest()
        pause()
        index._alive[rows] = True
        index._resize_tasks(len(table.ids))
        task, rep = table.task[rows].astype(np.int64), table.repeat[rows]
        dense = (rep >= 1) & (rep <= DENSE_REPEATS)
        if dense.any():
            index._widen(int(rep[dense].max()))
            index._slot[task[dense], rep[dense] - 1] = rows[dense]
        for row in rows[~dense].tolist():
            index._odd[(int(table.task[row]), int(table.repeat[row]))] = row
        pause()
        index._recount()
        return index

    def _recount(self) -> None:
        """Every figure from the rows alive (after a build, or a new threshold)."""
        t = self.table
        rows = self.latest()
        tasks = len(t.ids)
        self._resize_tasks(tasks)
        task = t.task[rows].astype(np.int64)
        score, status = t.score[rows], t.status[rows]
        cost = t.cost[rows]
        with np.errstate(invalid="ignore"):
            solved = score >= self.threshold
            failed = (status != OK) | ~solved
            outside = ~((score >= 0.0) & (score <= 1.0))
        unknown = np.isnan(cost)

        def count(weights=None) -> np.ndarray:
            return np.bincount(task, weights=weights, minlength=tasks)[:tasks]

        c = self._cells
        c["n"][:tasks] = count()
        c["total"][:tasks] = count(score)
        c["solved"][:tasks] = count(solved)
        c["errors"][:tasks] = count(status == ERROR)
        c["judge_errors"][:tasks] = count(status == JUDGE_ERROR)
        c["unknown_cost"][:tasks] = count(unknown)
        c["failed"][:tasks] = count(failed)
        finite = np.isfinite(score)
        lo = np.full(tasks, math.inf)
        hi = np.full(tasks, -math.inf)
        np.minimum.at(lo, task[finite], score[finite])
        np.maximum.at(hi, task[finite], score[finite])
        c["lo"][:tasks], c["hi"][:tasks] = lo, hi
        self.done = len(rows)
        self.score_sum = float(score.sum())
        self.errors = int((status == ERROR).sum())
        self.judge_errors = int((status == JUDGE_ERROR).sum())
        self.unknown_cost = int(unknown.sum())
        self.known_cost = float(cost[~unknown].sum())
        self.outside_unit = int(outside.sum())
        self.failures = int(failed.sum())

    def rethreshold(self, threshold: float) -> None:
        """Recount what is solved (and failed) under another success threshold."""
        self.threshold = float(threshold)
        self._recount()

    # -- one live attempt -----------------------------------------------------------------------------------------
    def add(self, record: AttemptRecord, traceback: str | None = None) -> int:
        """Add an attempt (a retried one replaces the earlier attempt at its key); returns its row."""
        row = self.table.append(record, traceback)
        if len(self._alive) <= row:
            alive = np.zeros(max(2 * len(self._alive), 64, row + 1), dtype=bool)
            alive[:len(self._alive)] = self._alive
            self._alive = alive
        local = int(self.table.task[row])
        self._resize_tasks(local + 1)
        old = self._row(local, record.repeat)
        self._set_row(local, record.repeat, row)
        self._alive[row] = True
        if old >= 0:
            self._alive[old] = False
            self._count(old, -1)
            self._recount_task(local)
        else:
            self._count_task(row, local)
        self._count(row, +1)
        return row

    def _count(self, row: int, sign: int) -> None:
        """Add (sign 1) or take away (-1) a row's part of the evaluation's totals."""
        t = self.table
        score, status, cost = float(t.score[row]), int(t.status[row]), float(t.cost[row])
        self.done += sign
        self.score_sum += sign * score
        self.errors += sign * (status == ERROR)
        self.judge_errors += sign * (status == JUDGE_ERROR)
        self.outside_unit += sign * (not 0.0 <= score <= 1.0)
        self.failures += sign * (status != OK or not score >= self.threshold)
        if math.isnan(cost):
            self.unknown_cost += sign
        else:
            self.known_cost += sign * cost

    def _count_task(self, row: int, local: int) -> None:
        t, c = self.table, self._cells
        score, status = float(t.score[row]), int(t.status[row])
        solved = score >= self.threshold
        c["n"][local] += 1
        c["total"][local] += score
        c["solved"][local] += solved
        c["errors"][local] += status == ERROR
        c["judge_errors"][local] += status == JUDGE_ERROR
        c["unknown_cost"][local] += math.isnan(float(t.cost[row]))
        c["failed"][local] += status != OK or not solved
        if math.isfinite(score):
            c["lo"][local] = min(c["lo"][local], score)
            c["hi"][local] = max(c["hi"][local], score)

    def _recount_task(self, local: int) -> None:
        c = self._cells
        for name, fill in (("n", 0), ("total", 0.0), ("solved", 0), ("errors", 0), ("judge_errors", 0),
                           ("unknown_cost", 0), ("failed", 0), ("lo", math.inf), ("hi", -math.inf)):
            c[name][local] = fill
        for row in self.task_rows(self.ids[local]):
            self._count_task(row, local)

    # -- snapshots for the statistics -----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The attempts that count now, in arrival order, copied: a worker computes on it while attempts keep
        arriving (a few milliseconds at 333,000 attempts)."""
        t = self.table
        rows = self.latest()
        return Snapshot(list(t.ids), t.task[rows], t.repeat[rows], t.score[rows], t.status[rows], t.cost[rows])


class ScoredAttempt(NamedTuple):
    """An attempt's key and score, shaped like a record where the statistics read one (``judge.score``)."""

    id: str
    repeat: int
    score: float

    @property
    def judge(self) -> ScoredAttempt:
        return self

    @property
    def key(self) -> tuple[str, int]:
        return self.id, self.repeat


class Snapshot:
    """Attempts as arrays (task index into ``ids``, repeat, score, status, cost), in arrival order. The statistics
    take it where they take records (``attempt_columns``); a slice is the first attempts (a running mean);
    iterating gives :class:`ScoredAttempt` (for the rare reader that needs keys, e.g. a sequential replay)."""

    def __init__(self, ids: list[str], task: np.ndarray, repeat: np.ndarray, score: np.ndarray, status: np.ndarray,
                 cost: np.ndarray):
        self.ids, self.task, self.repeat, self.score, self.status, self.cost = ids, task, repeat, score, status, cost

    def __len__(self) -> int:
        return len(self.task)

    def __getitem__(self, i: slice) -> Snapshot:
        if not isinstance(i, slice):
            raise TypeError("a Snapshot is sliced, not indexed")
        return Snapshot(self.ids, self.task[i], self.repeat[i], self.score[i], self.status[i], self.cost[i])

    def __iter__(self) -> Iterator[ScoredAttempt]:
        ids = self.ids
        for t, r, s in zip(self.task.tolist(), self.repeat.tolist(), self.score.tolist()):
            yield ScoredAttempt(ids[t], r, s)

    def attempt_columns(self, task_ids) -> AttemptColumns:
        pos = dict(zip(task_ids, range(len(task_ids))))
        where = np.fromiter(map(pos.get, self.ids, repeat(-1)), dtype=np.int64, count=len(self.ids))
        return AttemptColumns(task=where[self.task] if len(self.task) else np.zeros(0, np.int64),
                              repeat=self.repeat, score=self.score)

    def count_status(self, code: int) -> int:
        return int((self.status == code).sum())

    def count_repeat(self, r: int) -> int:
        return int((self.repeat == r).sum())

    @property
    def known_cost(self) -> float:
        return float(self.cost[~np.isnan(self.cost)].sum())

    @property
    def known(self) -> int:
        return int((~np.isnan(self.cost)).sum())


__all__ = ["DENSE_REPEATS", "AttemptIndex", "ScoredAttempt", "Snapshot"]
