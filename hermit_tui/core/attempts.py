"""One attempt: run the pipeline on a task with an adapter, judge what it returned, and make the record.

The task's own failures never raise out of here: a failing pipeline is an ``error`` record (score 0, unknown
cost), a failing judge a ``judge_error`` record (output and cost kept), as hermit records them.
"""
from __future__ import annotations

import copy
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermit_tui.core.callables import normalize_judge, normalize_output
from hermit_tui.core.context import _CURRENT, AttemptContext
from hermit_tui.core.records import AttemptRecord, Judged
from hermit_tui.core.transcripts import jsonable

TRACEBACK_CHARS = 4000
#: What a pipeline may raise that still counts as the pipeline's failure (a pipeline calling sys.exit included).
PIPELINE_FAILURES = (Exception, SystemExit)


class Attempt:
    """One unit of work: a task, a repeat, a selector's adapter."""

    __slots__ = ("label", "task", "repeat", "adapter")

    def __init__(self, label: str, task: dict, repeat: int, adapter: Path | None):
        self.label, self.task, self.repeat, self.adapter = label, task, repeat, adapter

    @property
    def task_id(self) -> str:
        return str(self.task["id"])


def failed_record(attempt: Attempt, message: str, wall_s: float, tb: str | None = None) -> AttemptRecord:
    """An ``error`` record: the pipeline did not return (it raised, hung, or its process died)."""
    record = AttemptRecord(repeat=attempt.repeat, id=attempt.task_id, status="error", error=message, output=None,
                           judge=Judged(score=0.0, feedback=f"the pipeline failed: {message}"), cost_usd=None,
                           wall_s=round(wall_s, 2))
    if tb:
        record.traceback = tb  # an extra key beside hermit's: hermit's readers ignore it
    return record


def pipeline_failed(attempt: Attempt, exc: BaseException, started: float) -> tuple[AttemptRecord, str]:
    tb = traceback.format_exc()[-TRACEBACK_CHARS:]
    message = f"{type(exc).__name__}: {exc}"
    return failed_record(attempt, message, time.perf_counter() - started, tb), tb


def judge_output(judge: Callable, attempt: Attempt, value: Any, started: float) -> tuple[AttemptRecord, str | None]:
    """Judge what the pipeline returned. A wrong return type is the pipeline's error; a failing judge (or a score
    that is not a finite number) is a judge_error that keeps the output and cost."""
    try:
        out = normalize_output(value)
    except TypeError as exc:
        return pipeline_failed(attempt, exc, started)
    status, error, tb = "ok", None, None
    try:
        score, feedback, extra = normalize_judge(judge(copy.deepcopy(attempt.task), out))
        judged = Judged(score=score, feedback=feedback, extra=extra)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        status, tb = "judge_error", traceback.format_exc()[-TRACEBACK_CHARS:]
        judged = Judged(score=0.0, feedback=f"the judge failed: {error}")
    record = AttemptRecord(
        repeat=attempt.repeat, id=attempt.task_id, status=status, error=error, output=out.output, judge=judged,
        cost_usd=out.cost_usd, wall_s=round(out.wall_s or (time.perf_counter() - started), 2),
        api_speed=out.api_speed, tokens=out.tokens, log=str(out.log) if out.log else None)
    if tb:
        record.traceback = tb
    record._messages = jsonable(out.messages)
    return record, tb


def call_pipeline(pipeline: Callable, attempt: Attempt) -> Any:
    """Call the pipeline with a fresh copy of the task row, telling it which attempt this is."""
    token = _CURRENT.set(AttemptContext(attempt.label, attempt.task_id, attempt.repeat))
    try:
        return pipeline(copy.deepcopy(attempt.task), attempt.adapter)
    finally:
        _CURRENT.reset(token)


def run_attempt(pipeline: Callable, judge: Callable, attempt: Attempt) -> tuple[AttemptRecord, str | None]:
    """Run and judge one attempt in the calling thread."""
    started = time.perf_counter()
    try:
        value = call_pipeline(pipeline, attempt)
    except PIPELINE_FAILURES as exc:
        return pipeline_failed(attempt, exc, started)
    return judge_output(judge, attempt, value, started)


async def run_attempt_async(pipeline: Callable, judge: Callable, attempt: Attempt) -> tuple[AttemptRecord,
                                                                                               str | None]:
    """The same for a pipeline written as ``async def``."""
    token = _CURRENT.set(AttemptContext(attempt.label, attempt.task_id, attempt.repeat))
    started = time.perf_counter()
    try:
        try:
            value = await pipeline(copy.deepcopy(attempt.task), attempt.adapter)
        except PIPELINE_FAILURES as exc:
            return pipeline_failed(attempt, exc, started)
    finally:
        _CURRENT.reset(token)
    return judge_output(judge, attempt, value, started)
