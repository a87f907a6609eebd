"""One evaluation's attempts as the dashboard holds them: an :class:`~hermit_tui.core.records.columns.AttemptTable`
(read from disk, or growing with a live launch), which row is the attempt of each (task, repeat) now (a retried attempt
replaces the earlier one), and per task the figures every view shows, as arrays.

Per task (by the table's task index): ``n`` attempts, ``total`` score, ``solved`` (at least the threshold), pipeline
``errors``, ``judge_errors``, ``unknown_cost`` attempts, ``failed`` (``core.records.annotations.is_failure``), the
lowest and highest score (``lo``, ``hi``: finite scores only); over the evaluation: ``done``, ``score_sum``, the error
counts, ``known_cost``, ``unknown_cost``, ``outside_unit`` (scores outside [0, 1]) and ``failures``.

:meth:`AttemptIndex.from_table` computes them at once (numpy, in a worker: a million attempts in well under a
second); :meth:`AttemptIndex.add` keeps them up to date one live attempt at a time (a few microseconds). The row of a
key is found in a dense (task, repeat) array for repeats 1..``DENSE_REPEATS`` (a dict for any other repeat, which
only a hostile file holds).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

import numpy as np

from hermit_tui.core.records.columns import ERROR, JUDGE_ERROR, OK, STATUSES, AttemptTable
from hermit_tui.core.records.results import SOLVED_THRESHOLD, AttemptRecord
from hermit_tui.core.records.scores import AttemptColumns

DENSE_REPEATS = 64
_INT = np.int32
#: A live attempt not counted yet: row, task index, repeat, score, status code, cost (NaN: unknown).
Pending = tuple[int, int, int, float, int, float]


@dataclass(slots=True)
class Totals:
    """The evaluation's figures over the attempts that count now."""

    done: int = 0
    score_sum: float = 0.0
    errors: int = 0
    judge_errors: int = 0
    unknown_cost: int = 0
    known_cost: float = 0.0
    outside_unit: int = 0
    failures: int = 0

    def add(self, other: Totals) -> None:
        self.done += other.done
        self.score_sum += other.score_sum
        self.errors += other.errors
        self.judge_errors += other.judge_errors
        self.unknown_cost += other.unknown_cost
        self.known_cost += other.known_cost
        self.outside_unit += other.outside_unit
        self.failures += other.failures


class AttemptIndex:
    """See the module's docstring. ``ids``, ``task``, ``repeat``, ``status``, ``score``, ``latest()``, ``record()``
    and ``find()`` make it a ``core.records.taxonomy.LatestView``."""

    def __init__(self, table: AttemptTable | None = None, threshold: float = SOLVED_THRESHOLD) -> None:
        self.table = table if table is not None else AttemptTable()
        self.threshold = float(threshold)
        self._alive = np.zeros(0, dtype=bool)
        self._rows = 0  # rows of the table counted (alive or replaced)
        self._slot = np.full((0, 0), -1, dtype=_INT)
        self._odd: dict[tuple[int, int], int] = {}
        self._cells: dict[str, np.ndarray] = {}
        self._resize_tasks(0)
        self._totals = Totals()
        self._pending: list[Pending] = []  # live attempts added, not counted yet
        self._lock = threading.RLock()

    # -- the evaluation's totals (after the pending live attempts are counted) -------------------------------------
    def totals(self) -> Totals:
        """The evaluation's figures, the pending live attempts counted (the object is the index's own: read it,
        do not change it)."""
        if self._pending:
            self.settle()
        return self._totals

    @property
    def done(self) -> int:
        return self.totals().done

    @property
    def score_sum(self) -> float:
        return self.totals().score_sum

    @property
    def errors(self) -> int:
        return self.totals().errors

    @property
    def judge_errors(self) -> int:
        return self.totals().judge_errors

    @property
    def unknown_cost(self) -> int:
        return self.totals().unknown_cost

    @property
    def known_cost(self) -> float:
        return self.totals().known_cost

    @property
    def outside_unit(self) -> int:
        return self.totals().outside_unit

    @property
    def failures(self) -> int:
        return self.totals().failures

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
        self.settle()
        return self._alive[: self._rows]

    def latest(self) -> np.ndarray:
        """The rows that count now, in arrival order."""
        return np.flatnonzero(self.alive())

    # -- per task -------------------------------------------------------------------------------------------------
    def cell(self, name: str) -> np.ndarray:
        """A per-task figure (``n``, ``total``, ``solved``, ``errors``, ``judge_errors``, ``unknown_cost``,
        ``failed``, ``lo``, ``hi``), by task index, for the tasks of ``ids``."""
        self.settle()
        return self._cells[name][: len(self.ids)]

    def _resize_tasks(self, tasks: int) -> None:
        old = self._cells.get("n")
        have = 0 if old is None else len(old)
        if tasks <= have and old is not None:
            return
        size = max(tasks, 2 * have, 16)
        cells: dict[str, np.ndarray] = {}
        for name, dtype, fill in (
            ("n", _INT, 0),
            ("total", float, 0.0),
            ("solved", _INT, 0),
            ("errors", _INT, 0),
            ("judge_errors", _INT, 0),
            ("unknown_cost", _INT, 0),
            ("failed", _INT, 0),
            ("lo", float, math.inf),
            ("hi", float, -math.inf),
        ):
            array = np.full(size, fill, dtype=dtype)
            if old is not None:
                array[:have] = self._cells[name]
            cells[name] = array
        self._cells = cells
        width = self._slot.shape[1]
        slot = np.full((size, width), -1, dtype=_INT)
        slot[: self._slot.shape[0]] = self._slot
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
        self.settle()
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
        self.settle()
        local = self.table.index.get(task_id)
        return [] if local is None else self._task_rows(local)

    def _task_rows(self, local: int) -> list[int]:
        rows = [int(r) for r in self._slot[local].tolist() if r >= 0] if local < self._slot.shape[0] else []
        rows += [row for (t, _), row in self._odd.items() if t == local]
        rep = self.table._arrays()["repeat"]
        return sorted(rows, key=lambda r: int(rep[r]))

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
        t = self.table._arrays()
        return STATUSES[int(t["status"][row])], float(t["score"][row])

    def failed_row(self, row: int) -> bool:
        t = self.table._arrays()
        return bool(t["status"][row] != OK or not t["score"][row] >= self.threshold)

    # -- building -------------------------------------------------------------------------------------------------
    @classmethod
    def from_table(
        cls, table: AttemptTable, threshold: float = SOLVED_THRESHOLD, pause: Callable[[], None] | None = None
    ) -> AttemptIndex:
        """Everything at once from a table read from disk (the last line of a (task, repeat) counts). ``pause``
        is called between the steps (a worker giving way to an interface)."""
        pause = pause or (lambda: None)
        index = cls(table, threshold)
        rows = table.latest()
        n = index._rows = table.n
        index._alive = np.zeros(n, dtype=bool)
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
        rows = np.flatnonzero(self._alive[: self._rows])
        tasks = len(t.ids)
        self._resize_tasks(tasks)
        task, score, status, cost = (a[rows] for a in t.columns("task", "score", "status", "cost"))
        task = task.astype(np.int64)
        with np.errstate(invalid="ignore"):
            solved = score >= self.threshold
            failed = (status != OK) | ~solved
            outside = ~((score >= 0.0) & (score <= 1.0))
        unknown = np.isnan(cost)

        def count(weights: np.ndarray | None = None) -> np.ndarray:
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
        self._totals = Totals(
            done=len(rows),
            score_sum=float(score.sum()),
            errors=int((status == ERROR).sum()),
            judge_errors=int((status == JUDGE_ERROR).sum()),
            unknown_cost=int(unknown.sum()),
            known_cost=float(cost[~unknown].sum()),
            outside_unit=int(outside.sum()),
            failures=int(failed.sum()),
        )

    def rethreshold(self, threshold: float) -> None:
        """Recount what is solved (and failed) under another success threshold."""
        self.settle()
        with self._lock:
            self.threshold = float(threshold)
            self._recount()

    # -- live attempts ----------------------------------------------------------------------------------------------
    def add(self, record: AttemptRecord, traceback: str | None = None) -> int:
        """Add an attempt (a retried one replaces the earlier attempt at its key); returns its row. The attempt is
        counted at the next read (:meth:`settle`): a batch of a live launch is counted at once, with numpy."""
        values = self.table.append_values(record, traceback)
        with self._lock:
            self._pending.append(values)
        return values[0]

    def settle(self) -> None:
        """Count the attempts added since the last read: new keys with numpy at once; a batch holding a re-run
        (a key seen before, or twice in the batch) attempt by attempt."""
        if not self._pending:
            return
        with self._lock:
            pending, self._pending = self._pending, []
            if not pending:
                return
            rows, local, rep, score, code, cost = (np.array(v) for v in zip(*pending))
            top = int(rows.max()) + 1
            if top > len(self._alive):
                alive = np.zeros(max(2 * len(self._alive), 64, top), dtype=bool)
                alive[: len(self._alive)] = self._alive
                self._alive = alive
            self._resize_tasks(int(local.max()) + 1)
            dense = (rep >= 1) & (rep <= DENSE_REPEATS)
            if dense.all():
                self._widen(int(rep.max()))
                old = self._slot[local, rep - 1]
                key = local.astype(np.int64) * (DENSE_REPEATS + 1) + rep
                if not (old >= 0).any() and len(np.unique(key)) == len(key):
                    self._add_new(rows, local, rep, score, code, cost)
                    self._rows = top
                    return
            for values in pending:  # a re-run, or a repeat outside the dense range: one at a time
                self._add_one(*values)
            self._rows = max(self._rows, top)

    def _add_new(
        self,
        rows: np.ndarray,
        local: np.ndarray,
        rep: np.ndarray,
        score: np.ndarray,
        code: np.ndarray,
        cost: np.ndarray,
    ) -> None:
        """Attempts at keys not seen before, all at once."""
        self._slot[local, rep - 1] = rows
        self._alive[rows] = True
        c = self._cells
        with np.errstate(invalid="ignore"):
            solved = score >= self.threshold
            failed = (code != OK) | ~solved
            outside = ~((score >= 0.0) & (score <= 1.0))
        unknown = np.isnan(cost)
        for name, weights in (
            ("n", None),
            ("total", score),
            ("solved", solved),
            ("errors", code == ERROR),
            ("judge_errors", code == JUDGE_ERROR),
            ("unknown_cost", unknown),
            ("failed", failed),
        ):
            np.add.at(c[name], local, 1 if weights is None else weights)
        finite = np.isfinite(score)
        np.minimum.at(c["lo"], local[finite], score[finite])
        np.maximum.at(c["hi"], local[finite], score[finite])
        self._totals.add(
            Totals(
                done=len(rows),
                score_sum=float(score.sum()),
                errors=int((code == ERROR).sum()),
                judge_errors=int((code == JUDGE_ERROR).sum()),
                unknown_cost=int(unknown.sum()),
                known_cost=float(cost[~unknown].sum()),
                outside_unit=int(outside.sum()),
                failures=int(failed.sum()),
            )
        )

    def _add_one(self, row: int, local: int, rep: int, score: float, code: int, cost: float) -> None:
        old = self._row(local, rep)
        self._set_row(local, rep, row)
        self._alive[row] = True
        if old >= 0:
            self._alive[old] = False
            t = self.table._arrays()
            self._count(float(t["score"][old]), int(t["status"][old]), float(t["cost"][old]), -1)
            self._recount_task(local)
        else:
            self._count_task(local, score, code, cost)
        self._count(score, code, cost, +1)

    def _count(self, score: float, status: int, cost: float, sign: int) -> None:
        """Add (sign 1) or take away (-1) an attempt's part of the evaluation's totals."""
        t = self._totals
        t.done += sign
        t.score_sum += sign * score
        if status == ERROR:
            t.errors += sign
        elif status == JUDGE_ERROR:
            t.judge_errors += sign
        if not 0.0 <= score <= 1.0:
            t.outside_unit += sign
        if status != OK or not score >= self.threshold:
            t.failures += sign
        if cost != cost:  # NaN: unknown
            t.unknown_cost += sign
        else:
            t.known_cost += sign * cost

    def _count_task(self, local: int, score: float, status: int, cost: float) -> None:
        c = self._cells
        c["n"][local] += 1
        c["total"][local] += score
        solved = score >= self.threshold
        if solved:
            c["solved"][local] += 1
        if status == ERROR:
            c["errors"][local] += 1
        elif status == JUDGE_ERROR:
            c["judge_errors"][local] += 1
        if cost != cost:
            c["unknown_cost"][local] += 1
        if status != OK or not solved:
            c["failed"][local] += 1
        if math.isfinite(score):
            lo, hi = c["lo"], c["hi"]
            if score < lo[local]:
                lo[local] = score
            if score > hi[local]:
                hi[local] = score

    def _recount_task(self, local: int) -> None:
        c = self._cells
        for name, fill in (
            ("n", 0),
            ("total", 0.0),
            ("solved", 0),
            ("errors", 0),
            ("judge_errors", 0),
            ("unknown_cost", 0),
            ("failed", 0),
            ("lo", math.inf),
            ("hi", -math.inf),
        ):
            c[name][local] = fill
        t = self.table._arrays()
        for row in self._task_rows(local):
            self._count_task(local, float(t["score"][row]), int(t["status"][row]), float(t["cost"][row]))

    # -- snapshots for the statistics -----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The attempts that count now, in arrival order, copied: a worker computes on it while attempts keep
        arriving (a few milliseconds at 333,000 attempts)."""
        t = self.table
        rows = self.latest()
        task, rep, score, status, cost = t.columns("task", "repeat", "score", "status", "cost")
        return Snapshot(list(t.ids), task[rows], rep[rows], score[rows], status[rows], cost[rows])


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

    def __init__(
        self,
        ids: list[str],
        task: np.ndarray,
        repeat: np.ndarray,
        score: np.ndarray,
        status: np.ndarray,
        cost: np.ndarray,
    ) -> None:
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

    def attempt_columns(self, task_ids: Sequence[str]) -> AttemptColumns:
        pos = dict(zip(task_ids, range(len(task_ids))))
        where = np.fromiter(map(pos.get, self.ids, repeat(-1)), dtype=np.int64, count=len(self.ids))
        return AttemptColumns(
            task=where[self.task] if len(self.task) else np.zeros(0, np.int64), repeat=self.repeat, score=self.score
        )

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


__all__ = ["DENSE_REPEATS", "AttemptIndex", "ScoredAttempt", "Snapshot", "Totals"]
