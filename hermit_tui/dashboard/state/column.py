"""One evaluation shown side by side in the dashboard (a :class:`Column` of the store), live or read from disk.

Its attempts are columns (``core.records.index.AttemptIndex`` over a ``core.records.columns.AttemptTable``): per task
and per evaluation the figures are arrays and running counts, and a whole record is built only when a view asks for one
attempt (``records[(task, repeat)]``: read back from results.jsonl by offset, or the live record as it came). The
mappings ``records``, ``cells`` and ``tracebacks`` keep the shape the views always read (a key, a Cell, a text).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from hermit_tui.core.present import partial_cost
from hermit_tui.core.records.annotations import Annotation, applying
from hermit_tui.core.records.columns import AttemptTable
from hermit_tui.core.records.index import AttemptIndex
from hermit_tui.core.records.results import SOLVED_THRESHOLD, AttemptRecord, Summary

Key = tuple[str, int]


@dataclass(slots=True)
class Cell:
    """One task under one selector: its attempts aggregated (built from the column's arrays when a view asks)."""

    total: float = 0.0
    n: int = 0
    solved: int = 0
    errors: int = 0
    judge_errors: int = 0
    unknown_cost: int = 0
    failed: int = 0  # attempts that did not solve the task (core.records.annotations.is_failure)
    lo: float = math.inf
    hi: float = -math.inf

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def solved_once(self) -> bool:
        return self.solved > 0

    @property
    def flaky(self) -> bool:
        """Some repeats solved the task and some did not, or the scores differ across repeats."""
        return self.n > 1 and (0 < self.solved < self.n or self.hi - self.lo > 1e-9)


CELL_FIELDS = ("total", "n", "solved", "errors", "judge_errors", "unknown_cost", "failed", "lo", "hi")


def cell_at(index: AttemptIndex, local: int) -> Cell:
    c = index._cells
    return Cell(
        float(c["total"][local]),
        int(c["n"][local]),
        int(c["solved"][local]),
        int(c["errors"][local]),
        int(c["judge_errors"][local]),
        int(c["unknown_cost"][local]),
        int(c["failed"][local]),
        float(c["lo"][local]),
        float(c["hi"][local]),
    )


class Records(Mapping):
    """(task id, repeat) -> the AttemptRecord recorded now (read on demand; iteration in arrival order)."""

    def __init__(self, index: AttemptIndex):
        self._index = index

    def __getitem__(self, key: Key) -> AttemptRecord:
        row = self._index.row_of(*key)
        if row < 0:
            raise KeyError(key)
        return self._index.record(row)

    def get(self, key: Key, default=None):
        row = self._index.row_of(*key)
        return default if row < 0 else self._index.record(row)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self._index.row_of(*key) >= 0

    def __iter__(self) -> Iterator[Key]:
        return self._index.keys()

    def __len__(self) -> int:
        return self._index.done


class Tracebacks(Mapping):
    """(task id, repeat) -> the traceback recorded with the attempt (only attempts that have one)."""

    def __init__(self, index: AttemptIndex):
        self._index = index

    def __getitem__(self, key: Key) -> str:
        row = self._index.row_of(*key)
        tb = self._index.table.traceback(row) if row >= 0 else None
        if tb is None:
            raise KeyError(key)
        return tb

    def __iter__(self) -> Iterator[Key]:
        return (k for k in self._index.keys() if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Cells(Mapping):
    """task id -> :class:`Cell`, for the tasks with an attempt."""

    def __init__(self, index: AttemptIndex):
        self._index = index

    def __getitem__(self, task_id: str) -> Cell:
        local = self._index.table.index.get(task_id)
        if local is None or local >= len(self._index.ids) or not self._index.cell("n")[local]:
            raise KeyError(task_id)
        return cell_at(self._index, local)

    def __iter__(self) -> Iterator[str]:
        ids = self._index.ids
        return (ids[i] for i in np.flatnonzero(self._index.cell("n")).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self._index.cell("n")))


@dataclass(eq=False)
class Column:
    """One evaluation shown side by side: a live one, or one read from disk."""

    key: str
    label: str
    selector: str
    source: Literal["live", "disk"]
    commit: str | None = None
    expected: int = 0
    summary: Summary | None = None
    running: bool = False
    threshold: float = SOLVED_THRESHOLD  # what counts as solved in the views (the files keep hermit's 1.0)
    folder: Path | None = None  # where a disk column was read from (a live one: where it is written)
    archived: bool = False  # an archived (earlier) evaluation: shown, never retried or published
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    note: str = ""
    # the evaluation's triage annotations (annotations.jsonl), latest per (task, repeat); some may describe an
    # earlier attempt that was re-run since: ``live_annotations`` leaves those out
    annotations: dict[Key, Annotation] = field(default_factory=dict)
    changes: int = 0  # bumped when a record or an annotation changes (caches key on it)
    # the attempts (not given: a fresh, empty one, made in __post_init__; never None after it)
    index: AttemptIndex = None  # type: ignore[assignment]
    _live: tuple[int, dict] | None = None

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = AttemptIndex(AttemptTable(), self.threshold)
        self.threshold = self.index.threshold
        self.records = Records(self.index)
        self.tracebacks = Tracebacks(self.index)
        self.cells = Cells(self.index)

    # -- figures --------------------------------------------------------------------------------------------------
    @property
    def table(self) -> AttemptTable:
        return self.index.table

    @property
    def done(self) -> int:
        return self.index.done

    @property
    def score_sum(self) -> float:
        return self.index.score_sum

    @property
    def errors(self) -> int:
        return self.index.errors

    @property
    def judge_errors(self) -> int:
        return self.index.judge_errors

    @property
    def unknown_cost(self) -> int:
        return self.index.unknown_cost

    @property
    def known_cost(self) -> float:
        return self.index.known_cost

    @property
    def outside_unit(self) -> int:
        return self.index.outside_unit

    @property
    def failures(self) -> int:
        return self.index.failures

    @property
    def mean(self) -> float | None:
        return self.score_sum / self.done if self.done else None

    @property
    def title(self) -> str:
        return self.key

    def eta_s(self) -> float | None:
        if not self.running or not self.done or self.expected <= self.done:
            return None
        elapsed = time.monotonic() - self.started
        return elapsed / self.done * (self.expected - self.done)

    def cost_text(self) -> str:
        """Known cost so far, with the unknown ones counted, never shown as $0: when no attempt reported a cost
        the sum itself is unknown, not "$0.0000 + N unknown"."""
        return partial_cost(self.known_cost, self.unknown_cost, attempts=self.done)

    # -- changing -------------------------------------------------------------------------------------------------
    def add(self, rec: AttemptRecord, tb: str | None = None) -> None:
        """One attempt (a retried attempt replaces the earlier one at its key)."""
        self.index.add(rec, tb)
        self.changes += 1

    def rethreshold(self, threshold: float) -> None:
        """Recount what is solved under another success threshold."""
        self.threshold = float(threshold)
        self.index.rethreshold(threshold)
        self.changes += 1

    def close(self) -> None:
        """Let go of the file the attempts are read back from (the column is no longer shown)."""
        self.index.table.close()

    # -- reading --------------------------------------------------------------------------------------------------
    def attempts_of(self, task_id: str) -> list[AttemptRecord]:
        return [self.index.record(r) for r in self.index.task_rows(task_id)]

    def mark(self, task_id: str, repeat: int) -> tuple[str | None, float | None]:
        """(status, score) of an attempt, (None, None) without one: what the grid draws, from the arrays."""
        return self.index.mark(task_id, repeat)

    def error_keys(self) -> list[Key]:
        """(task, repeat) of every attempt whose status is error or judge_error now, in arrival order."""
        ix = self.index
        rows = ix.latest()
        rows = rows[ix.status[rows] != 0]
        ids, task, rep = ix.ids, ix.task, ix.repeat
        return [(ids[task[r]], int(rep[r])) for r in rows.tolist()]

    def live_annotations(self) -> dict[Key, Annotation]:
        """The annotations that describe the attempts recorded now."""
        if self._live is None or self._live[0] != self.changes:
            self._live = (self.changes, applying(self.annotations, self.records))
        return self._live[1]

    def annotation(self, task_id: str, repeat: int) -> Annotation | None:
        return self.live_annotations().get((task_id, repeat))

    def stale_annotation(self, task_id: str, repeat: int) -> Annotation | None:
        """An annotation made on an earlier attempt at this task and repeat (re-run since), if any."""
        ann = self.annotations.get((task_id, repeat))
        return ann if ann is not None and (task_id, repeat) not in self.live_annotations() else None


def disk_column(
    stored,
    table: AttemptTable,
    threshold: float,
    annotations: Mapping[Key, Annotation],
    notes: list[str],
    key: str,
    pause=None,
) -> Column:
    """A column of an evaluation read from disk, built at once (in a worker: nothing here touches the store)."""
    s = stored.summary
    return Column(
        key=key,
        label=stored.label,
        selector=s.adapter if s else stored.label,
        source="disk",
        commit=s.commit if s else None,
        summary=s,
        folder=stored.folder,
        archived=stored.archived,
        threshold=threshold,
        index=AttemptIndex.from_table(table, threshold, pause),
        expected=(s.expected_attempts or s.tasks * s.repeats) if s else table.n,
        annotations=dict(annotations),
        note="; ".join(notes),
    )


__all__ = ["CELL_FIELDS", "Cell", "Cells", "Column", "Records", "Tracebacks", "cell_at", "disk_column"]
