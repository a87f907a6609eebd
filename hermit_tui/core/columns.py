"""Attempts as columns: one evaluation's results.jsonl held as numpy arrays, read at the speed of the file.

An :class:`~hermit_tui.core.records.AttemptRecord` (pydantic) costs about 2.5 KB and 20 µs per attempt: at a million
attempts that is gigabytes and minutes. An :class:`AttemptTable` keeps, per attempt, only what the views aggregate,
as arrays in arrival (file) order:

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

Reading (:func:`read_table`): every line is decoded by msgspec into a typed struct that declares exactly the keys
``AttemptRecord`` validates, with types no looser than pydantic's (output, api_speed and extra keys are skipped,
as pydantic accepts anything there). A line msgspec refuses, or one holding enough brackets to nest as deep as
pydantic's JSON parser refuses, goes to ``AttemptRecord.model_validate_json`` itself, which decides: the line is
kept with pydantic's values (lax forms such as ``"repeat": "2"`` or ``"score": NaN``), or it is the error
``read_results`` raises (a cut last line ignored with a warning; any other bad line an InputError naming the file and
line, word for word). So the table holds the attempts ``read_results`` would give, and fails the same way. msgspec
decodes the benchmark's 333,336-line file in 0.4 s where ``json.loads`` takes 5.8 s and orjson 2.5 s
(benchmarks/bench_decode.py).
"""
from __future__ import annotations

import math
import operator
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

from hermit_tui.core.errors import InputError
from hermit_tui.core.files import open_regular
from hermit_tui.core.records import AttemptRecord
from hermit_tui.core.scores import AttemptColumns

STATUSES = ("ok", "error", "judge_error")
OK, ERROR, JUDGE_ERROR = 0, 1, 2
STATUS_CODE = {name: code for code, name in enumerate(STATUSES)}
#: A line this long or longer is checked for brackets: pydantic's JSON parser refuses nesting deeper than about 200
#: levels, msgspec's only past 1,000, so a line that could nest that deep is left to pydantic (it needs at least one
#: opening and one closing bracket per level).
NESTING_CHECK_BYTES = 380
MAX_BRACKETS = 190
#: Repeats beyond +-REPEAT_LIMIT (only a hostile file holds one) are clamped in the ``repeat`` column; the record
#: read back keeps the value written.
REPEAT_LIMIT = 1 << 62
#: Read and decoded at a time (bounds what a read holds beyond the arrays). A block is decoded in one C call that
#: holds the interpreter lock: a 1 MiB block held it 20-40 ms on a shared 2-CPU machine, and an interface thread
#: waiting for it stalled that long; a quarter of that reads as fast and holds it ~5-15 ms.
BLOCK_BYTES = 1 << 18
#: Lines decoded per C call: a thread waiting for the interpreter lock (the event loop) gets it between two calls.
DECODE_SLICE = 256
RECORD_CACHE = 4096  # records read back by offset and kept (a drill-down, the visible rows of the outputs mode)


class _AnyObject(msgspec.Struct, gc=False):
    """Any JSON object, its keys skipped (judge.extra must be an object or null; its content is not kept, and no
    dict is built: a dict per line would wake the cyclic garbage collector)."""


class _Judge(msgspec.Struct, gc=False):
    score: float
    feedback: str = ""
    extra: _AnyObject | None = None


class _Line(msgspec.Struct, gc=False):
    """The keys of a results.jsonl line that AttemptRecord validates (the others are skipped)."""

    repeat: int
    id: str
    status: Literal["ok", "error", "judge_error"]
    judge: _Judge
    error: str | None = None
    cost_usd: float | None = None
    wall_s: float = 0.0
    tokens: Any = None
    log: str | None = None


_DECODER = msgspec.json.Decoder(_Line)
#: A live row waiting to be written into the arrays, in the order of _ARRAYS.
_PendingRow = tuple[int, int, float, int, float, float, float, int, int]
_ARRAYS = (("task", np.int32), ("repeat", np.int64), ("score", np.float64), ("status", np.int8),
           ("cost", np.float64), ("tokens", np.float64), ("wall", np.float64), ("offset", np.int64),
           ("length", np.int64))


def not_a_record(path: Path | str, number: int, exc: Exception) -> InputError:
    """The error ``read_results`` raises for a line AttemptRecord refuses (its first reason, on one line)."""
    first = str(exc).splitlines()
    reason = first[1].strip() if len(first) > 1 else first[0] if first else "invalid"
    return InputError(f"{path}:{number}: not a results record ({reason})")


def truncated_note(path: Path | str, number: int) -> str:
    return f"{path}:{number}: truncated last line ignored (the run was interrupted mid-write)"


def _number(value: Any) -> float:
    """A token count or cost as a float: NaN when it is not a finite number (None, text, a mapping, a bool)."""
    if type(value) is float:
        return value if math.isfinite(value) else math.nan
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return math.nan
    return math.nan


def _odd_tokens(value: Any) -> bool:
    """Tokens the ``tokens`` column cannot give back as written: anything but None or an int a float holds exactly
    (a float, a mapping, text...): kept as written in ``odd_tokens``."""
    return value is not None and (type(value) is not int or abs(value) > 1 << 53)


def _repeat(value: int) -> int:
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
                    self._extend({name: np.array(values, dtype=dtype) for name, values, (_, dtype) in
                                  zip(names, zip(*pending), _ARRAYS)})
        return self._store

    def _col(self, name: str) -> np.ndarray:
        return self._arrays()[name][:self._n]

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
            array[:self._n] = self._store[name][:self._n]
            grown[name] = array
        self._store = grown  # one assignment: a reader sees the old storage or the new one
        self._capacity = capacity

    def _extend(self, columns: dict[str, np.ndarray]) -> None:
        k = len(columns["task"])
        self._reserve(k)
        for name, _ in _ARRAYS:
            self._store[name][self._n:self._n + k] = columns[name]
        self._n += k

    def trim(self) -> None:
        """Give back the spare capacity (a table read from disk no longer grows)."""
        store = self._arrays()
        if self._capacity > self._n:
            self._store = {name: store[name][:self._n].copy() for name, _ in _ARRAYS}
            self._capacity = self._n

    def append(self, record: AttemptRecord, traceback: str | None = None) -> int:
        """Add one attempt held in memory (a live one); returns its row."""
        return self.append_values(record, traceback)[0]

    def append_values(self, record: AttemptRecord, traceback: str | None = None
                      ) -> tuple[int, int, int, float, int, float]:
        """:meth:`append`, returning what was stored: (row, task index, repeat, score, status code, cost or NaN).
        The figures wait in a list until the next read of an array writes them all in (a live launch appends
        thousands a second: one element at a time into each array cost more than everything else)."""
        tid = record.id
        rep = record.repeat
        if not -REPEAT_LIMIT <= rep <= REPEAT_LIMIT:
            rep = _repeat(rep)
        score = float(record.judge.score)
        code = STATUS_CODE[record.status]
        cost = record.cost_usd
        cost = math.nan if cost is None or not math.isfinite(cost) else float(cost)
        tokens = record.tokens
        tok = float(tokens) if type(tokens) is int and abs(tokens) <= 1 << 53 else _number(tokens)
        with self._lock:
            local = self.index.get(tid)
            if local is None:
                local = self.index[tid] = len(self.ids)
                self.ids.append(tid)
            row = self._n + len(self._pending)
            self._pending.append((local, rep, score, code, cost, tok, _number(record.wall_s), -1, 0))
            if record.error is not None:
                self.errors[row] = record.error
            if tokens is not None and _odd_tokens(tokens):
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
                raise InputError(f"{self.path}: attempt {self.key(row)} is no longer readable (the evaluation was "
                                 "closed)")
            try:
                line = os.pread(self._fd, length, offset)
                rec = AttemptRecord.model_validate_json(line)
            except (OSError, ValueError) as exc:
                raise InputError(f"{self.path}: cannot read attempt {self.key(row)} again at byte {offset} "
                                 f"({getattr(exc, 'strerror', None) or type(exc).__name__})") from None
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
        """Every row as the statistics take them (``core.scores``): task positions in ``task_ids``, repeat, score."""
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
        """Failures (core.annotations.is_failure): status error/judge_error, or a score below the threshold (NaN
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


class AttemptRow:
    """One attempt's figures read from the table's arrays, shaped like an AttemptRecord's (``id``, ``repeat``,
    ``status``, ``error``, ``judge.score``, ``cost_usd``, ``tokens``, ``wall_s``, ``key``) without building one."""

    __slots__ = ("table", "row")

    def __init__(self, table: AttemptTable, row: int) -> None:
        self.table, self.row = table, row

    @property
    def id(self) -> str:
        return self.table.task_id(self.row)

    @property
    def repeat(self) -> int:
        return int(self.table._arrays()["repeat"][self.row])

    @property
    def key(self) -> tuple[str, int]:
        return self.id, self.repeat

    @property
    def status(self) -> str:
        return self.table.status_name(self.row)

    @property
    def error(self) -> str | None:
        return self.table.errors.get(self.row)

    @property
    def score(self) -> float:
        return float(self.table._arrays()["score"][self.row])

    @property
    def judge(self) -> AttemptRow:  # rec.judge.score
        return self

    @property
    def cost_usd(self) -> float | None:
        v = float(self.table._arrays()["cost"][self.row])
        return None if math.isnan(v) else v

    @property
    def tokens(self) -> Any:
        return self.table.token_value(self.row)

    @property
    def wall_s(self) -> float:
        return float(self.table._arrays()["wall"][self.row])

    def record(self) -> AttemptRecord:
        return self.table.record(self.row)


class KeyedRecords(Mapping[tuple[str, int], Any]):
    """(task id, repeat) -> the latest AttemptRecord of a table, built on first use and read on demand."""

    def __init__(self, table: AttemptTable, light: bool = False) -> None:
        self.table, self.light = table, light
        self._rows: dict[tuple[str, int], int] | None = None

    @property
    def rows(self) -> dict[tuple[str, int], int]:
        if self._rows is None:
            t = self.table
            ids, task, rep = t.ids, t.task, t.repeat
            self._rows = {(ids[task[r]], int(rep[r])): int(r) for r in t.latest().tolist()}
        return self._rows

    def __getitem__(self, key: tuple[str, int]) -> Any:
        row = self.rows[key]
        return AttemptRow(self.table, row) if self.light else self.table.record(row)

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


# ---------------------------------------------------------------------------------------------------- reading


def read_table(path: Path | str, pause: Callable[[], None] | None = None) -> AttemptTable:
    """Read a results.jsonl into an :class:`AttemptTable` (see the module's docstring for what is kept and how it
    fails). ``table.skipped`` holds the warnings (a cut last line). The file is read a block at a time: the memory
    it takes beyond the arrays is a block's lines, not the file. ``pause`` is called between blocks (a reader in a
    worker thread gives way to an interface there: each block holds the interpreter for a few ms)."""
    path = Path(path)
    try:
        fd = open_regular(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    table = AttemptTable(path, fd=fd)
    try:
        _Reader(table, path, pause).run(fd)
        table.trim()
    except OSError as exc:
        table.close()
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except BaseException:
        table.close()
        raise
    return table


def parse_into(table: AttemptTable, raw: bytes, path: Path | str) -> None:
    """Decode the lines of ``raw`` (a results.jsonl's bytes) into ``table`` (without keeping the file open)."""
    reader = _Reader(table, path)
    cut = raw.rfind(b"\n")
    if cut >= 0:
        reader.lines(raw[:cut].split(b"\n"), 0)
    reader.finish(raw[cut + 1:], cut + 1)


class _Reader:
    """The lines of a results.jsonl, block by block, into a table; a bad line waits until the next line with content
    (or the end of the file) says whether it is a cut last line."""

    def __init__(self, table: AttemptTable, path: Path | str, pause: Callable[[], None] | None = None) -> None:
        self.table, self.path, self.pause = table, path, pause
        self.number = 0  # lines seen
        self.pending: tuple[int, Exception] | None = None  # a bad line, not known yet to be the last

    def run(self, fd: int) -> None:
        carry, at, read = b"", 0, 0  # the unfinished line, the file offset where it starts, bytes read
        while True:
            if self.pause is not None:
                self.pause()
            data = os.pread(fd, BLOCK_BYTES, read)
            if not data:
                break
            read += len(data)
            parts = data.split(b"\n")
            if carry:
                parts[0] = carry + parts[0]
            carry = parts.pop()
            if parts:
                self.lines(parts, at)
                at += sum(map(len, parts)) + len(parts)
        self.finish(carry, at)

    def finish(self, tail: bytes, at: int) -> None:
        """The bytes after the last newline (a last line with no newline, or nothing)."""
        if tail:
            self.lines([tail], at)
        if self.pending is not None:
            number, exc = self.pending
            if not tail:  # the file ends with a newline: the bad line was written whole
                raise not_a_record(self.path, number, exc) from None
            self.table.skipped.append(truncated_note(self.path, number))

    def lines(self, lines: list[bytes], at: int) -> None:
        """Decode ``lines`` (the first starts at file offset ``at``) and add them to the table: all at once when
        each is a record msgspec reads and the block needs no check pydantic would make differently, else line by
        line."""
        items = self._fast(lines)
        if self.pause is not None:
            self.pause()  # decoding and adding a block are each one stretch holding the interpreter lock
        kept: list[int] | None = None
        if items is None:
            kept = []
            items = self._slow(lines, kept)
        elif self.pending is not None:  # a bad line with more after it: not a cut last line
            raise not_a_record(self.path, *self.pending) from None
        self.number += len(lines)
        if items:
            lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
            starts = np.empty(len(lines), dtype=np.int64)
            starts[0] = at
            np.cumsum(lengths[:-1] + 1, out=starts[1:])
            starts[1:] += at
            if kept is not None:
                where = np.asarray(kept, dtype=np.int64)
                starts, lengths = starts[where], lengths[where]
            _add_chunk(self.table, items, starts, lengths)

    def _fast(self, lines: list[bytes]) -> list[_Line] | None:
        items: list[_Line] = []
        decode = _DECODER.decode
        pause = self.pause
        try:
            for start in range(0, len(lines), DECODE_SLICE):  # one C call per slice: the lock changes hands between
                items.extend(map(decode, lines[start:start + DECODE_SLICE]))
                if pause is not None:
                    pause()
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None
        if max(map(len, lines)) >= NESTING_CHECK_BYTES:
            opening = map(operator.add, map(bytes.count, lines, repeat(b"[")), map(bytes.count, lines, repeat(b"{")))
            if max(opening) >= MAX_BRACKETS:
                return None
        joined = b"".join(lines)
        if not joined.isascii():
            try:
                joined.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return items

    def _slow(self, lines: list[bytes], kept: list[int]) -> list[_Line]:
        decode = _DECODER.decode
        errors = (msgspec.ValidationError, msgspec.DecodeError)
        items: list[_Line] = []
        base = self.number
        for i, line in enumerate(lines):
            item: _Line | None
            try:
                item = decode(line)
                if len(line) >= NESTING_CHECK_BYTES and line.count(b"[") + line.count(b"{") >= MAX_BRACKETS:
                    item = None  # could nest deeper than pydantic reads: let it decide
                elif not line.isascii():
                    line.decode("utf-8")  # pydantic refuses invalid UTF-8 anywhere in the line; msgspec skips keys
            except errors:
                item = None
            except UnicodeDecodeError:
                item = None
            if item is None:
                if not line.strip():
                    continue
                try:
                    rec = AttemptRecord.model_validate_json(line)
                except ValueError as exc:
                    if self.pending is not None:
                        raise not_a_record(self.path, *self.pending) from None
                    self.pending = (base + i + 1, exc)
                    continue
                item = _Line(repeat=rec.repeat, id=rec.id, status=rec.status, judge=_Judge(score=rec.judge.score),
                             error=rec.error, cost_usd=rec.cost_usd, wall_s=rec.wall_s, tokens=rec.tokens)
            if self.pending is not None:  # a bad line with more after it: not a cut last line
                raise not_a_record(self.path, *self.pending) from None
            items.append(item)
            kept.append(i)
        return items


def _add_chunk(table: AttemptTable, items: list[_Line], starts: np.ndarray, lengths: np.ndarray) -> None:
    k = len(items)
    first = table.n
    index = table.index
    ids = list(map(attrgetter("id"), items))
    met = dict.fromkeys(ids)  # in order of first appearance
    missing = set(met).difference(index)  # looks up the block's ids in the index, never the other way round
    new = list(met) if len(missing) == len(met) else [t for t in met if t in missing] if missing else []
    for t in new:
        index[t] = len(table.ids)
        table.ids.append(t)
    task = np.fromiter(map(index.__getitem__, ids), dtype=np.int32, count=k)
    try:
        repeat_ = np.fromiter(map(attrgetter("repeat"), items), dtype=np.int64, count=k)
    except OverflowError:
        repeat_ = np.fromiter((_repeat(s.repeat) for s in items), dtype=np.int64, count=k)
    score = np.fromiter(map(attrgetter("judge.score"), items), dtype=np.float64, count=k)
    status = np.fromiter(map(STATUS_CODE.__getitem__, map(attrgetter("status"), items)), dtype=np.int8, count=k)
    nan = math.nan
    costs = list(map(attrgetter("cost_usd"), items))
    cost = np.array(costs, dtype=np.float64) if None not in costs else np.array(
        [nan if c is None else c for c in costs], dtype=np.float64)
    cost[~np.isfinite(cost)] = nan  # a cost that is not a finite number is unknown: never $0, never NaN dollars
    wall = np.fromiter(map(attrgetter("wall_s"), items), dtype=np.float64, count=k)
    wall[~np.isfinite(wall)] = nan
    raw_tokens = list(map(attrgetter("tokens"), items))
    try:
        tokens = np.array([t if type(t) is int or type(t) is float else nan for t in raw_tokens], dtype=np.float64)
    except OverflowError:
        tokens = np.array([_number(t) for t in raw_tokens], dtype=np.float64)
    tokens[~np.isfinite(tokens)] = nan
    table._extend(dict(task=task, repeat=repeat_, score=score, status=status, cost=cost, tokens=tokens, wall=wall,
                       offset=starts, length=lengths))
    errs = list(map(attrgetter("error"), items))
    if errs.count(None) != k:
        for j in np.flatnonzero(np.fromiter(map(operator.is_not, errs, repeat(None)), bool, k)).tolist():
            table.errors[first + j] = errs[j]
    kinds = set(map(type, raw_tokens))
    if kinds <= {int, type(None)}:  # whole numbers (or none): odd only past what a float holds exactly
        big = (np.abs(tokens) > 1 << 53) | (np.isnan(tokens) & np.fromiter(
            map(operator.is_not, raw_tokens, repeat(None)), bool, k)) if int in kinds else np.zeros(0, bool)
        odd = np.flatnonzero(big).tolist()
    else:
        odd = np.flatnonzero(np.fromiter(map(_odd_tokens, raw_tokens), bool, k)).tolist()
    for j in odd:
        table.odd_tokens[first + j] = raw_tokens[j]


def task_records(path: Path | str, task_id: str, skipped: list[str] | None = None) -> list[AttemptRecord]:
    """Every record of ``task_id`` in a results.jsonl, in file order, read back from the columns (the other lines
    are decoded, never built into records); the reading's warnings go to ``skipped``."""
    table = read_table(path)
    try:
        local = table.index.get(task_id)
        rows = np.flatnonzero(table.task == local).tolist() if local is not None else []
        if skipped is not None:
            skipped += table.skipped
        return [table.record(r) for r in rows]
    finally:
        table.close()


__all__ = ["ERROR", "JUDGE_ERROR", "OK", "STATUSES", "STATUS_CODE", "AttemptRow", "AttemptTable", "KeyedRecords",
           "not_a_record", "parse_into", "read_table", "task_records", "truncated_note"]
