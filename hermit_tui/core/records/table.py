"""Attempts as columns: the :class:`AttemptTable` that holds one evaluation's attempts as numpy arrays.

An :class:`~hermit_tui.core.records.results.AttemptRecord` (pydantic) costs about 2.5 KB and 20 µs per attempt: at a
million attempts that is gigabytes and minutes. An :class:`AttemptTable` keeps, per attempt, only what the views
aggregate, as arrays in arrival (file) order:

- ``task`` (an index into the table's ``ids``, in order of first appearance), ``repeat``, ``score`` (as recorded:
  NaN and infinity included), ``status`` (0 ok, 1 error, 2 judge_error), ``cost`` (USD; NaN when unknown: null in the
  file, or not a finite number; ``cost_known`` is the mask, so an unknown cost is never a $0 one), ``tokens`` (NaN
  when not a number), ``wall`` (seconds);
- ``offset`` and ``length``: where the attempt's line is in the file;
- sparse: the error message of each attempt that has one (``errors``: the errors screen groups by it), and the
  tokens that are not a whole number (``odd_tokens``, as written).

Everything else (output, feedback, judge extra, log, traceback, extra keys) stays in the file: :meth:`record` reads
the one line back by its offset (from the descriptor opened when the table was read, so a file replaced since, by a
retry's compaction or an archive move, still gives the line that was read) and validates it as the AttemptRecord
``read_results`` gives. A table can also grow in memory (:meth:`append`: the live attempts of a launch, whose records
are kept as they came).

This module holds the table, its arrays and the figures derived from them; ``core.records.columns`` reads a
results.jsonl into one, and ``core.records.rows`` holds the record-shaped views of its rows.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.records.rows import AttemptRow, KeyedRecords
from hermit_tui.core.records.scores import AttemptColumns

STATUSES = ("ok", "error", "judge_error")
OK, ERROR, JUDGE_ERROR = 0, 1, 2
STATUS_CODE = {name: code for code, name in enumerate(STATUSES)}
#: Repeats beyond +-REPEAT_LIMIT (only a hostile file holds one) are clamped in the ``repeat`` column; the record
#: read back keeps the value written.
REPEAT_LIMIT = 1 << 62
RECORD_CACHE = 4096  # records read back by offset and kept (a drill-down, the visible rows of the outputs mode)

#: A live row waiting to be written into the arrays, in the order of _ARRAYS.
_PendingRow = tuple[int, int, float, int, float, float, float, int, int]
_ARRAYS = (
    ("task", np.int32),
    ("repeat", np.int64),
    ("score", np.float64),
    ("status", np.int8),
    ("cost", np.float64),
    ("tokens", np.float64),
    ("wall", np.float64),
    ("offset", np.int64),
    ("length", np.int64),
)


def as_number(value: Any) -> float:
    """A token count or cost as a float: NaN when it is not a finite number (None, text, a mapping, a bool)."""
    if type(value) is float:
        return value if math.isfinite(value) else math.nan
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return math.nan
    return math.nan


def is_odd_tokens(value: Any) -> bool:
    """Tokens the ``tokens`` column cannot give back as written: anything but None or an int a float holds exactly
    (a float, a mapping, text...): kept as written in ``odd_tokens``."""
    return value is not None and (type(value) is not int or abs(value) > 1 << 53)


def clamp_repeat(value: int) -> int:
    return max(-REPEAT_LIMIT, min(REPEAT_LIMIT, value))


class AttemptTable:
    """One evaluation's attempts as columns, in arrival order (see the module's docstring).

    The arrays are views of the first ``n`` rows (read them again after an :meth:`append`: the storage grows by
    reallocation, so a view taken earlier keeps the rows it had). A table read from disk holds its file open for
    :meth:`record` until :meth:`close`."""

    def __init__(self, path: Path | None = None, *, fd: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.errors: dict[int, str] = {}  # row -> error message (rows that have one)
        self.odd_tokens: dict[int, Any] = {}  # row -> tokens that are not a number (a mapping, text...)
        self.objects: dict[int, AttemptRecord] = {}  # rows whose record is held in memory (live attempts)
        self.tracebacks: dict[int, str] = {}  # live rows' tracebacks (a disk row's is in its record)
        self.skipped: list[str] = []  # lines ignored while reading, one warning each
        self._n = 0  # rows in the arrays
        self._pending: list[_PendingRow] = []  # live rows appended since, not in the arrays yet (see append_values)
        self._capacity = 0
        self._store: dict[str, np.ndarray] = {name: np.empty(0, dtype) for name, dtype in _ARRAYS}
        self._fd = fd
        self._cache: OrderedDict[int, AttemptRecord] = OrderedDict()
        self._lock = threading.RLock()  # guards the descriptor, the cache and the pending rows (workers read too)
        self._latest: tuple[int, np.ndarray] | None = None
        self._sorted: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- columns --------------------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Rows (attempts), the pending live ones included."""
        return self._n + len(self._pending)

    def _arrays(self) -> dict[str, np.ndarray]:
        """The storage, with the live rows appended since the last read written in (at once)."""
        if self._pending:
            with self._lock:
                pending, self._pending = self._pending, []
                if pending:
                    names = [name for name, _ in _ARRAYS]
                    self._extend(
                        {
                            name: np.array(values, dtype=dtype)
                            for name, values, (_, dtype) in zip(names, zip(*pending), _ARRAYS)
                        }
                    )
        return self._store

    def _col(self, name: str) -> np.ndarray:
        return self._arrays()[name][: self._n]

    def columns(self, *names: str) -> list[np.ndarray]:
        """Several columns of the same rows (a live table grows between two reads of single columns)."""
        with self._lock:
            store, n = self._arrays(), self._n
        return [store[name][:n] for name in names]

    @property
    def task(self) -> np.ndarray:
        return self._col("task")

    @property
    def repeat(self) -> np.ndarray:
        return self._col("repeat")

    @property
    def score(self) -> np.ndarray:
        return self._col("score")

    @property
    def status(self) -> np.ndarray:
        return self._col("status")

    @property
    def cost(self) -> np.ndarray:
        return self._col("cost")

    @property
    def tokens(self) -> np.ndarray:
        return self._col("tokens")

    @property
    def wall(self) -> np.ndarray:
        return self._col("wall")

    @property
    def offset(self) -> np.ndarray:
        return self._col("offset")

    @property
    def length(self) -> np.ndarray:
        return self._col("length")

    @property
    def cost_known(self) -> np.ndarray:
        known: np.ndarray = ~np.isnan(self.cost)
        return known

    def __len__(self) -> int:
        return self.n

    def task_id(self, row: int) -> str:
        return self.ids[int(self._arrays()["task"][row])]

    def key(self, row: int) -> tuple[str, int]:
        return self.task_id(row), int(self._arrays()["repeat"][row])

    def status_name(self, row: int) -> str:
        return STATUSES[int(self._arrays()["status"][row])]

    def intern(self, task_id: str) -> int:
        """The index of ``task_id`` in ``ids`` (added at the end when new)."""
        i = self.index.get(task_id)
        if i is None:
            i = self.index[task_id] = len(self.ids)
            self.ids.append(task_id)
        return i

    # -- growing --------------------------------------------------------------------------------------------------
    def _reserve(self, more: int) -> None:
        need = self._n + more
        if need <= self._capacity:
            return
        capacity = max(need, 2 * self._capacity, 64)
        grown = {}
        for name, dtype in _ARRAYS:
            array = np.empty(capacity, dtype)
            array[: self._n] = self._store[name][: self._n]
            grown[name] = array
        self._store = grown  # one assignment: a reader sees the old storage or the new one
        self._capacity = capacity

    def _extend(self, columns: dict[str, np.ndarray]) -> None:
        k = len(columns["task"])
        self._reserve(k)
        for name, _ in _ARRAYS:
            self._store[name][self._n : self._n + k] = columns[name]
        self._n += k

    def trim(self) -> None:
        """Give back the spare capacity (a table read from disk no longer grows)."""
        store = self._arrays()
        if self._capacity > self._n:
            self._store = {name: store[name][: self._n].copy() for name, _ in _ARRAYS}
            self._capacity = self._n

    def append(self, record: AttemptRecord, traceback: str | None = None) -> int:
        """Add one attempt held in memory (a live one); returns its row."""
        return self.append_values(record, traceback)[0]

    def append_values(
        self, record: AttemptRecord, traceback: str | None = None
    ) -> tuple[int, int, int, float, int, float]:
        """:meth:`append`, returning what was stored: (row, task index, repeat, score, status code, cost or NaN).
        The figures wait in a list until the next read of an array writes them all in (a live launch appends
        thousands a second: one element at a time into each array cost more than everything else)."""
        tid = record.id
        rep = record.repeat
        if not -REPEAT_LIMIT <= rep <= REPEAT_LIMIT:
            rep = clamp_repeat(rep)
        score = float(record.judge.score)
        code = STATUS_CODE[record.status]
        cost = record.cost_usd
        cost = math.nan if cost is None or not math.isfinite(cost) else float(cost)
        tokens = record.tokens
        tok = float(tokens) if type(tokens) is int and abs(tokens) <= 1 << 53 else as_number(tokens)
        with self._lock:
            local = self.index.get(tid)
            if local is None:
                local = self.index[tid] = len(self.ids)
                self.ids.append(tid)
            row = self._n + len(self._pending)
            self._pending.append((local, rep, score, code, cost, tok, as_number(record.wall_s), -1, 0))
            if record.error is not None:
                self.errors[row] = record.error
            if tokens is not None and is_odd_tokens(tokens):
                self.odd_tokens[row] = tokens
            self.objects[row] = record
            if traceback:
                self.tracebacks[row] = traceback
        return row, local, rep, score, code, cost

    # -- reading rows back ----------------------------------------------------------------------------------------
    def record(self, row: int) -> AttemptRecord:
        """The attempt of ``row`` as an AttemptRecord: the one held in memory, else its line read back from the file
        (cached). An InputError when the file cannot be read any more."""
        rec = self.objects.get(row)
        if rec is not None:
            return rec
        with self._lock:
            rec = self._cache.get(row)
            if rec is not None:
                self._cache.move_to_end(row)
                return rec
            store = self._store  # a row read back has an offset: it came from the file, never pending
            offset, length = int(store["offset"][row]), int(store["length"][row])
            if self._fd is None or offset < 0:
                raise InputError(
                    f"{self.path}: attempt {self.key(row)} is no longer readable (the evaluation was closed)"
                )
            try:
                line = os.pread(self._fd, length, offset)
                rec = AttemptRecord.model_validate_json(line)
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"{self.path}: cannot read attempt {self.key(row)} again at byte {offset} "
                    f"({getattr(exc, 'strerror', None) or type(exc).__name__})"
                ) from None
            self._cache[row] = rec
            if len(self._cache) > RECORD_CACHE:
                self._cache.popitem(last=False)
            return rec

    def traceback(self, row: int) -> str | None:
        """The traceback recorded with the attempt, if any (hermit-tui writes it beside a pipeline error)."""
        if row in self.tracebacks:
            return self.tracebacks[row]
        if row in self.objects:
            return None
        return self.record(row).traceback

    def token_value(self, row: int) -> Any:
        """The tokens as recorded (a number, None, or whatever else the file held)."""
        if row in self.odd_tokens:
            return self.odd_tokens[row]
        v = float(self._arrays()["tokens"][row])
        return None if math.isnan(v) else int(v)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                try:
                    os.close(self._fd)
                except OSError:
                    pass
                self._fd = None
            self._cache.clear()

    def __del__(self) -> None:  # pragma: no cover - a safety net; owners close their tables
        try:
            if self._fd is not None:
                os.close(self._fd)
        except Exception:
            pass

    # -- derived figures ------------------------------------------------------------------------------------------
    def latest(self) -> np.ndarray:
        """The rows that count: the last of each (task, repeat), in row order (a later line replaces an earlier
        one, as everywhere)."""
        task, rep = self.columns("task", "repeat")
        n = len(task)
        cached = self._latest
        if cached is not None and cached[0] == n:
            return cached[1]
        task = task.astype(np.int64)
        order = np.lexsort((np.arange(n), rep, task))
        t, r = task[order], rep[order]
        last = np.ones(n, dtype=bool)
        if n > 1:
            last[:-1] = (t[1:] != t[:-1]) | (r[1:] != r[:-1])
        rows = np.sort(order[last])
        self._latest = (n, rows)
        return rows

    def positions(self, task_ids: Sequence[str]) -> np.ndarray:
        """For each of the table's ids, its position in ``task_ids`` (-1: not among them)."""
        pos = dict(zip(task_ids, range(len(task_ids))))
        return np.fromiter(map(pos.get, self.ids, repeat(-1)), dtype=np.int64, count=len(self.ids))

    def attempt_columns(self, task_ids: Sequence[str]) -> AttemptColumns:
        """Every row as the statistics take them (``core.records.scores``): task positions in ``task_ids``, repeat,
        score."""
        where = self.positions(task_ids)
        task, rep, score = self.columns("task", "repeat", "score")
        return AttemptColumns(task=where[task] if len(task) else np.empty(0, np.int64), repeat=rep, score=score)

    def known_cost(self, rows: np.ndarray | None = None) -> float:
        cost = self.cost if rows is None else self.cost[rows]
        return float(cost[~np.isnan(cost)].sum())

    def unknown_costs(self, rows: np.ndarray | None = None) -> int:
        cost = self.cost if rows is None else self.cost[rows]
        return int(np.isnan(cost).sum())

    def count_status(self, code: int, rows: np.ndarray | None = None) -> int:
        status = self.status if rows is None else self.status[rows]
        return int((status == code).sum())

    def failed(self, threshold: float, rows: np.ndarray | None = None) -> np.ndarray:
        """Failures (core.records.annotations.is_failure): status error/judge_error, or a score below the threshold (NaN
        included)."""
        status = self.status if rows is None else self.status[rows]
        score = self.score if rows is None else self.score[rows]
        with np.errstate(invalid="ignore"):
            failed: np.ndarray = (status != OK) | ~(score >= threshold)
        return failed

    def find(self, task_id: str, repeat: int) -> int:
        """The row of the latest attempt at (``task_id``, ``repeat``), or -1."""
        local = self.index.get(task_id)
        if local is None:
            return -1
        cached = self._sorted
        if cached is None or cached[0] != self.n:
            rows = self.latest()
            task, rep = self.columns("task", "repeat")
            order = np.lexsort((rep[rows], task[rows]))
            rows = rows[order]
            cached = self._sorted = (len(task), rows, task[rows], rep[rows])
        _, rows, task, rep = cached
        lo, hi = np.searchsorted(task, local, "left"), np.searchsorted(task, local, "right")
        i = lo + int(np.searchsorted(rep[lo:hi], repeat))
        return int(rows[i]) if i < hi and rep[i] == repeat else -1

    def keyed(self, light: bool = False) -> KeyedRecords:
        """The latest attempt of each (task id, repeat), as a read-only mapping of records read on demand
        (``light``: :class:`AttemptRow` values, from the arrays)."""
        return KeyedRecords(self, light)

    def rows_of(self, rows: Iterable[int]) -> list[AttemptRow]:
        """Light rows (no pydantic) with the figures of ``rows``: what the exports read."""
        return [AttemptRow(self, int(r)) for r in rows]


__all__ = [
    "ERROR",
    "JUDGE_ERROR",
    "OK",
    "RECORD_CACHE",
    "REPEAT_LIMIT",
    "STATUSES",
    "STATUS_CODE",
    "AttemptTable",
    "as_number",
    "clamp_repeat",
    "is_odd_tokens",
]
