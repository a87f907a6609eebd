"""The lines of a results.jsonl decoded by msgspec, without numpy: the typed struct every reader decodes a line into,
the checks that send a line to pydantic instead, and one task's records read with neither numpy nor the columns.

``core.records.columns`` reads whole files into arrays with these pieces (its docstring says how a line msgspec
refuses is decided by ``AttemptRecord`` itself). :func:`task_records` is the reading of ``show`` and ``annotate``:
one task's attempts out of a file whose every line msgspec reads cleanly, found by decoding each line's keys and
validated by pydantic for that task's lines only; any other file is left to the columns (their table, their
errors, word for word), so the two give the same records and fail the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.workspace.files import open_regular

#: A line this long or longer is checked for brackets: pydantic's JSON parser refuses nesting deeper than about 200
#: levels, msgspec's only past 1,000, so a line that could nest that deep is left to pydantic (it needs at least one
#: opening and one closing bracket per level).
NESTING_CHECK_BYTES = 380
MAX_BRACKETS = 190


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


DECODER = msgspec.json.Decoder(_Line)
DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError)


def may_nest_too_deep(line: bytes) -> bool:
    """Whether ``line`` could nest deeper than pydantic reads (then pydantic decides, not msgspec)."""
    return len(line) >= NESTING_CHECK_BYTES and line.count(b"[") + line.count(b"{") >= MAX_BRACKETS


def pydantic_reads_alike(line: bytes) -> bool:
    """Whether a line msgspec decoded is one pydantic reads alike: valid UTF-8, and not possibly nested deeper than
    pydantic reads (:func:`may_nest_too_deep`)."""
    if may_nest_too_deep(line):
        return False
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _clean(lines: list[bytes]) -> list[_Line] | None:
    """Every line decoded, when each is a record msgspec reads, valid UTF-8 and shallow enough that pydantic would
    read it alike; else None (the columns' reader decides, line by line)."""
    try:
        items = list(map(DECODER.decode, lines))
    except DECODE_ERRORS:
        return None
    return items if all(map(pydantic_reads_alike, lines)) else None


def task_records(path: Path | str, task_id: str, skipped: list[str] | None = None) -> list[AttemptRecord]:
    """Every record of ``task_id`` in a results.jsonl, in file order (the other lines are decoded, never built into
    records); the reading's warnings go to ``skipped``. A file with an empty, cut or refused line, or a record
    pydantic reads differently, is read by the columns instead (``core.records.columns.task_records``: numpy's
    import and the table), which keep such a line or fail on it."""
    path = Path(path)
    try:
        fd = open_regular(path)
        try:
            raw = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    lines = raw.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    items = _clean(lines) if lines else []
    if items is not None:
        try:
            return [AttemptRecord.model_validate_json(lines[i]) for i, it in enumerate(items) if it.id == task_id]
        except ValueError:
            pass  # pydantic refuses what msgspec read: the columns say how (their error, word for word)
    from hermit_tui.core.records.columns import task_records as from_columns

    return from_columns(path, task_id, skipped)
