"""Attempts as columns, read: one evaluation's results.jsonl held as numpy arrays, read at the speed of the file.

The table itself (which columns, the record read back by offset, the live rows) is
:class:`~hermit_tui.core.records.table.AttemptTable`; its names are re-exported here, where the readers have always
found them.

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
from collections.abc import Callable
from itertools import repeat
from operator import attrgetter
from pathlib import Path

import msgspec
import numpy as np

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.lines import DECODER, MAX_BRACKETS, NESTING_CHECK_BYTES, _Judge, _Line
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.records.rows import AttemptRow, KeyedRecords
from hermit_tui.core.records.table import (
    ERROR,
    JUDGE_ERROR,
    OK,
    REPEAT_LIMIT,
    STATUS_CODE,
    STATUSES,
    AttemptTable,
    as_number,
    clamp_repeat,
    is_odd_tokens,
)
from hermit_tui.core.workspace.files import open_regular

#: Read and decoded at a time (bounds what a read holds beyond the arrays). A block is decoded in one C call that
#: holds the interpreter lock: a 1 MiB block held it 20-40 ms on a shared 2-CPU machine, and an interface thread
#: waiting for it stalled that long; a quarter of that reads as fast and holds it ~5-15 ms.
BLOCK_BYTES = 1 << 18
#: Lines decoded per C call: a thread waiting for the interpreter lock (the event loop) gets it between two calls.
DECODE_SLICE = 256


_DECODER = DECODER  # the name the decoding benchmark imports


def not_a_record(path: Path | str, number: int, exc: Exception) -> InputError:
    """The error ``read_results`` raises for a line AttemptRecord refuses (its first reason, on one line)."""
    first = str(exc).splitlines()
    reason = first[1].strip() if len(first) > 1 else first[0] if first else "invalid"
    return InputError(f"{path}:{number}: not a results record ({reason})")


def truncated_note(path: Path | str, number: int) -> str:
    return f"{path}:{number}: truncated last line ignored (the run was interrupted mid-write)"


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
    reader.finish(raw[cut + 1 :], cut + 1)


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
                items.extend(map(decode, lines[start : start + DECODE_SLICE]))
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
                item = _Line(
                    repeat=rec.repeat,
                    id=rec.id,
                    status=rec.status,
                    judge=_Judge(score=rec.judge.score),
                    error=rec.error,
                    cost_usd=rec.cost_usd,
                    wall_s=rec.wall_s,
                    tokens=rec.tokens,
                )
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
        repeat_ = np.fromiter((clamp_repeat(s.repeat) for s in items), dtype=np.int64, count=k)
    score = np.fromiter(map(attrgetter("judge.score"), items), dtype=np.float64, count=k)
    status = np.fromiter(map(STATUS_CODE.__getitem__, map(attrgetter("status"), items)), dtype=np.int8, count=k)
    nan = math.nan
    costs = list(map(attrgetter("cost_usd"), items))
    cost = (
        np.array(costs, dtype=np.float64)
        if None not in costs
        else np.array([nan if c is None else c for c in costs], dtype=np.float64)
    )
    cost[~np.isfinite(cost)] = nan  # a cost that is not a finite number is unknown: never $0, never NaN dollars
    wall = np.fromiter(map(attrgetter("wall_s"), items), dtype=np.float64, count=k)
    wall[~np.isfinite(wall)] = nan
    raw_tokens = list(map(attrgetter("tokens"), items))
    try:
        tokens = np.array([t if type(t) is int or type(t) is float else nan for t in raw_tokens], dtype=np.float64)
    except OverflowError:
        tokens = np.array([as_number(t) for t in raw_tokens], dtype=np.float64)
    tokens[~np.isfinite(tokens)] = nan
    table._extend(
        dict(
            task=task,
            repeat=repeat_,
            score=score,
            status=status,
            cost=cost,
            tokens=tokens,
            wall=wall,
            offset=starts,
            length=lengths,
        )
    )
    errs = list(map(attrgetter("error"), items))
    if errs.count(None) != k:
        for j in np.flatnonzero(np.fromiter(map(operator.is_not, errs, repeat(None)), bool, k)).tolist():
            table.errors[first + j] = errs[j]
    kinds = set(map(type, raw_tokens))
    if kinds <= {int, type(None)}:  # whole numbers (or none): odd only past what a float holds exactly
        big = (
            (np.abs(tokens) > 1 << 53)
            | (np.isnan(tokens) & np.fromiter(map(operator.is_not, raw_tokens, repeat(None)), bool, k))
            if int in kinds
            else np.zeros(0, bool)
        )
        odd = np.flatnonzero(big).tolist()
    else:
        odd = np.flatnonzero(np.fromiter(map(is_odd_tokens, raw_tokens), bool, k)).tolist()
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


__all__ = [
    "ERROR",
    "JUDGE_ERROR",
    "OK",
    "REPEAT_LIMIT",
    "STATUSES",
    "STATUS_CODE",
    "AttemptRow",
    "AttemptTable",
    "KeyedRecords",
    "not_a_record",
    "parse_into",
    "read_table",
    "task_records",
    "truncated_note",
]
