"""One attempt: run the pipeline on a task with an adapter, judge what it returned, and make the record.

The task's own failures never raise out of here: a failing pipeline is an ``error`` record (score 0, unknown
cost), a failing judge a ``judge_error`` record (output and cost kept), as hermit records them.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermit_tui.core.context import _CURRENT, AttemptContext
from hermit_tui.core.outputs import RunOutput
from hermit_tui.core.records.results import AttemptRecord, Judged
from hermit_tui.core.records.transcripts import jsonable
from hermit_tui.core.run.printed import _CAPTURE, Tail, capturing, save_printed
from hermit_tui.core.workspace.callables import LARGEST_REPORTED, leave_if_forked, normalize_judge, normalize_output

TRACEBACK_CHARS = 4000
#: What a pipeline (or a judge) may raise that still counts as its own failure: sys.exit and a KeyboardInterrupt it
#: raises itself included (a real Ctrl-C never reaches an attempt: the command handles SIGINT, and attempts run in
#: threads or worker processes that ignore it).
PIPELINE_FAILURES = (Exception, SystemExit, KeyboardInterrupt)


class Attempt:
    """One unit of work: a task, a repeat, a selector's adapter."""

    __slots__ = ("label", "task", "repeat", "adapter", "log_dir")

    def __init__(
        self, label: str, task: dict[str, Any], repeat: int, adapter: Path | None, log_dir: Path | None = None
    ):
        self.label, self.task, self.repeat, self.adapter = label, task, repeat, adapter
        self.log_dir = log_dir  # where the attempt's log may go (hermit_tui.core.context.attempt_log_path)

    @property
    def task_id(self) -> str:
        return str(self.task["id"])


_SCALARS = (str, int, bool, type(None))


def fresh_copy(value: Any) -> Any:
    """A deep copy of a task row: rows read from tasks.jsonl hold only dicts, lists and JSON scalars, copied here
    without ``copy.deepcopy``'s memo and dispatch (3-4x faster); any other value inside is deep-copied."""
    try:
        return _copy_plain(value)
    except RecursionError:  # a row that holds itself: only deepcopy's memo copes
        return copy.deepcopy(value)


def _copy_plain(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SCALARS or type(v) is float else _copy_plain(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SCALARS or type(v) is float else _copy_plain(v) for v in value]
    if kind in _SCALARS or kind is float:
        return value  # immutable
    return copy.deepcopy(value)


def failed_record(attempt: Attempt, message: str, wall_s: float, tb: str | None = None) -> AttemptRecord:
    """An ``error`` record: the pipeline did not return (it raised, hung, or its process died)."""
    record = AttemptRecord(
        repeat=attempt.repeat,
        id=attempt.task_id,
        status="error",
        error=message,
        output=None,
        judge=Judged(score=0.0, feedback=f"the pipeline failed: {message}"),
        cost_usd=None,
        wall_s=round(wall_s, 2),
    )
    if tb:
        record.traceback = tb  # a key beside hermit's: hermit's readers ignore it
    return record


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, even when its message cannot be turned into text."""
    try:
        text = str(exc)
    except Exception:
        text = "(its message cannot be shown)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def pipeline_failed(attempt: Attempt, exc: BaseException, started: float) -> tuple[AttemptRecord, str]:
    tb = traceback.format_exc()[-TRACEBACK_CHARS:]
    message = describe(exc)
    return failed_record(attempt, message, time.perf_counter() - started, tb), tb


class Progress:
    """How far an attempt running in a thread got, for the executor that gives up on it at its timeout: a judge
    that hangs is the judge's failure (the pipeline's output is kept), not the pipeline's."""

    __slots__ = ("phase", "output", "printed", "judging_since")

    def __init__(self) -> None:
        self.phase = "pipeline"
        self.output: RunOutput | None = None
        self.judging_since = 0.0  # time.perf_counter() when the judge phase began (0: not yet)
        self.printed: Tail | None = None  # what the attempt printed so far (kept when it is given up on)


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        return f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."


def json_problem(value: Any) -> str | None:
    """Why ``value`` cannot be written as standard JSON (no NaN, no Infinity, no arbitrary object), or None."""
    if _plain(value):
        return None
    try:
        json.dumps(value, allow_nan=False)
    except RecursionError:
        return "it is nested too deeply (or holds itself)"
    except (TypeError, ValueError) as exc:
        return " ".join(str(exc).split())[:200]
    except Exception as exc:  # a mapping or sequence whose own methods fail
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
    return None


def _plain_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    return kind is int and value.bit_length() <= 1000  # a huge int can exceed int-to-text's digit limit


def _plain(value: Any) -> bool:
    """True for what is JSON without asking json.dumps: a str, bool, None, finite float or int of at most 1000
    bits, or a flat dict (str keys) or list of them. Anything else is left to json.dumps (which says why not)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str for k in value) and all(_plain_scalar(v) for v in value.values())
    if kind is list:
        return all(_plain_scalar(v) for v in value)
    return _plain_scalar(value)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def output_problem(out: RunOutput) -> str | None:
    """Why what the pipeline returned cannot be recorded, as the attempt's error; None when it can."""
    problem = json_problem(out.output)
    if problem:
        return f"TypeError: the pipeline's output cannot be written as JSON ({problem})"
    if out.cost_usd is not None and not _finite(out.cost_usd):
        return f"TypeError: the pipeline's cost_usd is {_shown(out.cost_usd)}, not a finite number of dollars or None"
    if out.wall_s and not _finite(out.wall_s):
        return f"TypeError: the pipeline's wall_s is {_shown(out.wall_s)}, not a finite number of seconds"
    for name, unit in (("cost_usd", "dollars"), ("wall_s", "seconds")):
        value = getattr(out, name)
        if value is not None and abs(value) > LARGEST_REPORTED:
            return (
                f"ValueError: the pipeline's {name} is {value:g}, beyond ±{LARGEST_REPORTED:g} {unit} "
                "(a sum of such numbers overflows)"
            )
    for name in ("tokens", "api_speed"):
        problem = json_problem(getattr(out, name))
        if problem:
            return f"TypeError: the pipeline's {name} cannot be written as JSON ({problem})"
    if out.log is not None and not isinstance(out.log, (str, os.PathLike)):
        return f"TypeError: the pipeline's log is {_shown(out.log)}, not a path"
    return None


def _record(
    attempt: Attempt, out: RunOutput, status: str, error: str | None, judged: Judged, started: float
) -> AttemptRecord:
    return AttemptRecord(
        repeat=attempt.repeat,
        id=attempt.task_id,
        status=status,
        error=error,
        output=out.output,
        judge=judged,
        cost_usd=out.cost_usd,
        wall_s=round(out.wall_s or (time.perf_counter() - started), 2),
        api_speed=out.api_speed,
        tokens=out.tokens,
        log=os.fspath(out.log) if out.log else None,
    )


def judge_failed(attempt: Attempt, out: RunOutput, message: str, started: float) -> AttemptRecord:
    """A ``judge_error`` record that keeps the pipeline's output and cost (a judge that failed or hung)."""
    return _record(
        attempt, out, "judge_error", message, Judged(score=0.0, feedback=f"the judge failed: {message}"), started
    )


def writable(record: AttemptRecord, attempt: Attempt, started: float) -> AttemptRecord:
    """The record itself, or an ``error`` record saying why it cannot be written (the run goes on). The line it was
    checked with is kept on the record (``AttemptRecord.encode_line``): the journal writes it, not a new one."""
    try:
        record.encode_line()
    except Exception as exc:
        return failed_record(
            attempt,
            f"TypeError: the attempt cannot be written as JSON ({' '.join(str(exc).split())[:200]})",
            time.perf_counter() - started,
        )
    return record


def judge_output(
    judge: Callable[..., Any], attempt: Attempt, value: Any, started: float, progress: Progress | None = None
) -> tuple[AttemptRecord, str | None]:
    """Judge what the pipeline returned. A wrong return type, or a value that cannot be written (an arbitrary
    object, a NaN cost...), is the pipeline's error; a failing judge (a score that is not a finite number, an extra
    that cannot be written) is a judge_error that keeps the output and cost."""
    try:
        out = normalize_output(value)
    except Exception as exc:
        return pipeline_failed(attempt, exc, started)
    problem = output_problem(out)
    if problem:
        return failed_record(attempt, problem, time.perf_counter() - started), None
    if progress is not None:
        progress.output, progress.phase, progress.judging_since = out, "judge", time.perf_counter()
    status, error, tb = "ok", None, None
    pid = os.getpid()
    try:
        try:
            verdict = judge(fresh_copy(attempt.task), out)
        finally:
            leave_if_forked(pid)  # a judge that forked: its child ends here
        score, feedback, extra = normalize_judge(verdict)
        problem = json_problem(extra)
        if problem:
            raise TypeError(f"the judge's extra cannot be written as JSON ({problem})")
        judged = Judged(score=score, feedback=feedback, extra=extra)
    except PIPELINE_FAILURES as exc:
        error = describe(exc)
        status, tb = "judge_error", traceback.format_exc()[-TRACEBACK_CHARS:]
        judged = Judged(score=0.0, feedback=f"the judge failed: {error}")
    record = _record(attempt, out, status, error, judged, started)
    if tb:
        record.traceback = tb
    record = writable(record, attempt, started)
    if record.status != "error":
        record._messages = jsonable(out.messages)
    return record, (tb if record.status != "error" else None)


def _context(attempt: Attempt) -> AttemptContext:
    return AttemptContext(attempt.label, attempt.task_id, attempt.repeat, getattr(attempt, "log_dir", None))


def call_pipeline(pipeline: Callable[..., Any], attempt: Attempt) -> Any:
    """Call the pipeline with a fresh copy of the task row, telling it which attempt this is."""
    token = _CURRENT.set(_context(attempt))
    pid = os.getpid()
    try:
        return pipeline(fresh_copy(attempt.task), attempt.adapter)
    finally:
        leave_if_forked(pid)  # a pipeline that forked: its child ends here, never runs the rest of the command
        _CURRENT.reset(token)


def keep_printed(record: AttemptRecord, attempt: Attempt, *texts: str) -> AttemptRecord:
    """Save what the attempt printed (if anything) beside its logs and name the file on its record."""
    path = save_printed(attempt.log_dir, attempt.task_id, attempt.repeat, *texts)
    if path is not None:
        record.printed = path
    return record


def run_attempt(
    pipeline: Callable[..., Any], judge: Callable[..., Any], attempt: Attempt, progress: Progress | None = None
) -> tuple[AttemptRecord, str | None]:
    """Run and judge one attempt in the calling thread; what the pipeline and the judge print (Python-level, while
    ``core.run.printed.routed``) is kept for the attempt."""
    started = time.perf_counter()
    tail = Tail()
    if progress is not None:
        progress.printed = tail
    tb: str | None
    token = _CAPTURE.set(tail)  # core.run.printed.capturing, without a generator's cost (once per attempt)
    try:
        try:
            value = call_pipeline(pipeline, attempt)
        except PIPELINE_FAILURES as exc:
            record, tb = pipeline_failed(attempt, exc, started)
        else:
            record, tb = judge_output(judge, attempt, value, started, progress)
    finally:
        _CAPTURE.reset(token)
    if tail:
        keep_printed(record, attempt, tail.text())
    return record, tb


def judge_printing(
    judge: Callable[..., Any],
    attempt: Attempt,
    value: Any,
    started: float,
    progress: Progress | None,
    printed_before: str,
) -> tuple[AttemptRecord, str | None]:
    """``judge_output`` for a pipeline that ran elsewhere (a worker process) and printed ``printed_before`` there:
    what the judge prints here is kept after it."""
    tail = Tail()
    if progress is not None:
        progress.printed = tail
    with capturing(tail):
        record, tb = judge_output(judge, attempt, value, started, progress)
    if printed_before or tail:
        keep_printed(record, attempt, printed_before, tail.text() if tail else "")
    return record, tb


async def call_pipeline_async(pipeline: Callable[..., Any], attempt: Attempt) -> Any:
    """``call_pipeline`` for a pipeline written as ``async def``."""
    token = _CURRENT.set(_context(attempt))
    pid = os.getpid()
    try:
        return await pipeline(fresh_copy(attempt.task), attempt.adapter)
    finally:
        leave_if_forked(pid)
        _CURRENT.reset(token)


async def run_attempt_async(
    pipeline: Callable[..., Any], judge: Callable[..., Any], attempt: Attempt
) -> tuple[AttemptRecord, str | None]:
    """The same for a pipeline written as ``async def``."""
    started = time.perf_counter()
    try:
        value = await call_pipeline_async(pipeline, attempt)
    except PIPELINE_FAILURES as exc:
        return pipeline_failed(attempt, exc, started)
    return judge_output(judge, attempt, value, started)
