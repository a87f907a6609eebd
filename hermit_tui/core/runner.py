"""The evaluation runner: several selectors side by side on the test split, under one protocol.

Attempts of all selectors share one concurrency limit and are scheduled repeat by repeat, task by task, selector by
selector, so that partial results stay paired. Each finished attempt is appended to its selector's results.jsonl
(one writer: the event loop) and reported as an ``AttemptFinished`` event.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import inspect
import os
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hermit_tui.core import events as ev
from hermit_tui.core.callables import load_judge, load_pipeline, normalize_judge, normalize_output
from hermit_tui.core.context import _CURRENT, AttemptContext
from hermit_tui.core.errors import InputError
from hermit_tui.core.evalstore import RESULTS, SUMMARY, archive_existing, eval_root
from hermit_tui.core.records import AttemptRecord, Judged, Summary, read_results, summarize, write_atomic
from hermit_tui.core.selectors import Selector, materialize, resolve_selectors
from hermit_tui.core.tasks import TaskSet, load_tasks

EventSink = Callable[[ev.Event], None]
TRACEBACK_CHARS = 4000


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _version() -> str:
    from hermit_tui import __version__
    return __version__


def _positive_int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{key} must be a positive whole number, got {value!r}")
    return value


class Attempt:
    """One unit of work: a task, a repeat, a selector."""

    __slots__ = ("label", "task", "repeat", "adapter")

    def __init__(self, label: str, task: dict, repeat: int, adapter: Path | None):
        self.label, self.task, self.repeat, self.adapter = label, task, repeat, adapter


def _pipeline_failed(task: dict, repeat: int, exc: BaseException, started: float) -> tuple[AttemptRecord, str]:
    message = f"{type(exc).__name__}: {exc}"
    tb = traceback.format_exc()[-TRACEBACK_CHARS:]
    record = AttemptRecord(repeat=repeat, id=str(task["id"]), status="error", error=message, output=None,
                           judge=Judged(score=0.0, feedback=f"the pipeline failed: {message}"), cost_usd=None,
                           wall_s=round(time.perf_counter() - started, 2), traceback=tb)
    return record, tb


def _judged(judge: Callable, task: dict, repeat: int, value: Any, started: float) -> tuple[AttemptRecord, str | None]:
    """Judge what the pipeline returned. A wrong return type is the pipeline's error; a failing judge (or a score
    that is not a finite number) is a judge_error that keeps the output and cost."""
    try:
        out = normalize_output(value)
    except TypeError as exc:
        return _pipeline_failed(task, repeat, exc, started)
    status, error, tb = "ok", None, None
    try:
        score, feedback, extra = normalize_judge(judge(copy.deepcopy(task), out))
        judged = Judged(score=score, feedback=feedback, extra=extra)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        status, tb = "judge_error", traceback.format_exc()[-TRACEBACK_CHARS:]
        judged = Judged(score=0.0, feedback=f"the judge failed: {error}")
    record = AttemptRecord(
        repeat=repeat, id=str(task["id"]), status=status, error=error, output=out.output, judge=judged,
        cost_usd=out.cost_usd, wall_s=round(out.wall_s or (time.perf_counter() - started), 2),
        api_speed=out.api_speed, tokens=out.tokens, log=str(out.log) if out.log else None)
    if tb:
        record.traceback = tb  # an extra key beside hermit's: hermit's readers ignore it
    return record, tb


def run_attempt(pipeline: Callable, judge: Callable, task: dict, adapter: Path | None, repeat: int,
                label: str) -> tuple[AttemptRecord, str | None]:
    """Run and judge one attempt in the calling thread; the task's own failures become records, never raise."""
    token = _CURRENT.set(AttemptContext(label, str(task["id"]), repeat))
    started = time.perf_counter()
    try:
        try:
            value = pipeline(copy.deepcopy(task), adapter)
        except Exception as exc:
            return _pipeline_failed(task, repeat, exc, started)
        return _judged(judge, task, repeat, value, started)
    finally:
        _CURRENT.reset(token)


async def run_attempt_async(pipeline: Callable, judge: Callable, task: dict, adapter: Path | None, repeat: int,
                            label: str) -> tuple[AttemptRecord, str | None]:
    """The same for a pipeline written as ``async def``."""
    token = _CURRENT.set(AttemptContext(label, str(task["id"]), repeat))
    started = time.perf_counter()
    try:
        try:
            value = await pipeline(copy.deepcopy(task), adapter)
        except Exception as exc:
            return _pipeline_failed(task, repeat, exc, started)
        return _judged(judge, task, repeat, value, started)
    finally:
        _CURRENT.reset(token)


def _failed(attempt: Attempt, message: str, wall_s: float) -> AttemptRecord:
    return AttemptRecord(repeat=attempt.repeat, id=str(attempt.task["id"]), status="error", error=message,
                         output=None, judge=Judged(score=0.0, feedback=f"the pipeline failed: {message}"),
                         cost_usd=None, wall_s=round(wall_s, 2))


class _SelectorRun:
    """Bookkeeping of one selector during a launch."""

    def __init__(self, selector: Selector, folder: Path, total: int, earlier: dict | None = None,
                 retries: int = 0):
        self.selector = selector
        self.folder = folder
        self.total = total
        # (task id, repeat) -> record; a retry starts from the earlier records and replaces the retried ones
        self.records: dict[tuple[str, int], AttemptRecord] = dict(earlier or {})
        self.retry = earlier is not None
        self.retries = retries
        self.pending = 0  # attempts scheduled and not yet recorded
        self.started = time.perf_counter()
        self.started_at = _now()
        self.fh = None
        self.last_sync = time.monotonic()

    def open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.folder / RESULTS, "a" if self.retry else "w", encoding="utf-8")

    def append(self, record: AttemptRecord) -> None:
        self.fh.write(record.to_json_line())
        self.fh.flush()  # each line reaches the OS as the attempt finishes; fsync in batches below
        now = time.monotonic()
        if now - self.last_sync > 0.5:
            os.fsync(self.fh.fileno())
            self.last_sync = now
        self.records[record.key] = record

    def close(self) -> None:
        if self.fh is not None:
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.fh.close()
            self.fh = None

    def compact(self, task_order: list[str]) -> None:
        """After a retry: one line per attempt again (the retried line replaces the earlier one), atomically."""
        rank = {tid: i for i, tid in enumerate(task_order)}
        ordered = sorted(self.records.values(), key=lambda r: (r.repeat, rank.get(r.id, len(rank)), r.id))
        write_atomic(self.folder / RESULTS, "".join(r.to_json_line() for r in ordered))


class EvalRun:
    """One launch: ``selectors`` evaluated side by side on the config's test split.

    Build it (bad input raises InputError before anything is written), then ``await run()`` or ``run_sync()``;
    ``cancel()`` may be called from any thread.

    ``retry`` = {label: [(task id, repeat), ...]} re-runs only those attempts of earlier evaluations (typically the
    failed ones) under the same protocol: the earlier pair is archived first, the retried records replace the
    earlier ones, and the summary counts the retries (re-running only failures can bias a mean).
    """

    def __init__(self, config, selectors: Sequence[str], *, repeats: int | None = None,
                 concurrency: int | None = None, limit: int | None = None, update_card: bool = True,
                 on_event: EventSink | None = None, tasks: TaskSet | None = None,
                 retry: dict[str, list[tuple[str, int]]] | None = None):
        config.require_for_eval()
        self.config = config
        self.concurrency = _positive_int(concurrency if concurrency is not None else config.concurrency,
                                         "agent.concurrency")
        self.update_card = update_card
        self.on_event = on_event or (lambda event: None)
        self.tasks = tasks or load_tasks(config)
        self.retry = {label: [(str(t), int(r)) for t, r in keys] for label, keys in (retry or {}).items()}
        self.earlier: dict[str, Summary] = {}
        if self.retry:
            selectors, repeats, limit = self._prepare_retry()
        self.repeats = _positive_int(repeats if repeats is not None else config.repeats, "eval.repeats")
        if limit is not None:
            _positive_int(limit, "--limit")
        self.limit = limit
        rows = self.tasks.rows("test")
        self.test_rows = rows[:limit] if limit else rows
        self.task_ids = [str(r["id"]) for r in self.test_rows]
        if not selectors:
            raise InputError("no adapter selector given (e.g. --adapter none --adapter root --adapter final)")
        self.selectors = resolve_selectors(list(selectors), config)
        for sel in self.selectors:
            old = self.earlier.get(sel.label)
            if old is not None and old.commit != sel.commit:
                raise InputError(f"{sel.label}: '{sel.text}' now resolves to {str(sel.commit)[:12]}, not the "
                                 f"{str(old.commit)[:12]} that was measured: re-run the whole evaluation instead")
        self.pipeline = load_pipeline(config)
        self.judge = load_judge(config)
        self.timeout_s = float(config.timeout_min) * 60 if config.timeout_min else None
        self.warnings = list(self.tasks.overlaps())
        if limit:
            self.warnings.append(f"smoke subset: the first {len(self.task_ids)} of {len(rows)} test tasks "
                                 "(a wiring check, not an evaluation)")
        self._cancel = threading.Event()
        self._force = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._forced: asyncio.Event | None = None
        self.summaries: dict[str, Summary] = {}
        self.cancelled = False

    def _prepare_retry(self) -> tuple[list[str], int, int | None]:
        """The selectors, repeats and limit of the evaluations whose attempts are retried, read from their
        summaries: a retry runs under the protocol they were measured with."""
        from hermit_tui.core.records import read_summary
        texts, repeats, limits = [], set(), set()
        for label in self.retry:
            path = eval_root(self.config.run_dir) / label / SUMMARY
            if not path.is_file():
                raise InputError(f"{path}: no summary to retry from (run the whole evaluation)")
            summary = read_summary(path)
            self.earlier[label] = summary
            texts.append(summary.adapter)
            repeats.add(summary.repeats)
            limits.add(summary.smoke_limit)
        if len(repeats) > 1 or len(limits) > 1:
            raise InputError("retry: the evaluations were measured with different repeats or limits; retry them "
                             "one at a time")
        return texts, repeats.pop(), limits.pop()

    # -- control -------------------------------------------------------------------------------------------------
    def cancel(self, *, force: bool = False) -> None:
        """Stop scheduling; attempts in flight finish and are kept. ``force`` also abandons the attempts in flight
        (they are not recorded). Safe to call from any thread."""
        self._cancel.set()
        if force:
            self._force.set()
            loop, forced = self._loop, self._forced
            if loop is not None and forced is not None and not loop.is_closed():
                loop.call_soon_threadsafe(forced.set)

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self.selectors]

    @property
    def total(self) -> int:
        if self.retry:
            return sum(len(v) for v in self.retry.values())
        return len(self.selectors) * len(self.task_ids) * self.repeats

    def run_sync(self) -> dict[str, Summary]:
        return asyncio.run(self.run())

    # -- the run -------------------------------------------------------------------------------------------------
    def _emit(self, event: ev.Event) -> None:
        self.on_event(event)

    def _open_selector(self, sel: Selector, root: Path) -> _SelectorRun:
        folder = root / sel.label
        total = len(self.task_ids) * self.repeats
        if sel.label in self.retry:
            kept = archive_existing(folder, copy=True)
            earlier = {r.key: r for r in read_results(folder / RESULTS).records}
            run = _SelectorRun(sel, folder, total, earlier, (self.earlier[sel.label].retries or 0)
                               + len(self.retry[sel.label]))
        else:
            kept = archive_existing(folder)
            run = _SelectorRun(sel, folder, total)
        if kept is not None:
            self._emit(ev.RunLog(message=f"{sel.label}: the earlier evaluation was archived in {kept}"))
        run.open()
        return run

    def _order(self, adapters: dict[str, Path | None], runs: dict[str, _SelectorRun]) -> list[Attempt]:
        """Repeat by repeat, task by task, selector by selector: partial results stay paired."""
        if self.retry:
            rows = {str(r["id"]): r for r in self.test_rows}
            wanted = {label: set(keys) for label, keys in self.retry.items()}
            order = [Attempt(sel.label, rows[tid], r, adapters[sel.label])
                     for r in range(1, self.repeats + 1) for tid in self.task_ids for sel in self.selectors
                     if (tid, r) in wanted.get(sel.label, ())]
        else:
            order = [Attempt(sel.label, task, r, adapters[sel.label])
                     for r in range(1, self.repeats + 1) for task in self.test_rows for sel in self.selectors]
        for attempt in order:
            runs[attempt.label].pending += 1
        return order

    async def run(self) -> dict[str, Summary]:
        t0 = time.perf_counter()
        root = eval_root(self.config.run_dir)
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = root / f".write-test-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise InputError(f"cannot write evaluations under {root}: {exc.strerror or exc}") from None
        for warning in self.warnings:
            self._emit(ev.RunLog(level="warning", message=warning))
        self._emit(ev.RunStarted(labels=self.labels, task_ids=self.task_ids, repeats=self.repeats,
                                 concurrency=self.concurrency, total=self.total))
        runs: dict[str, _SelectorRun] = {}
        with contextlib.ExitStack() as stack:
            adapters: dict[str, Path | None] = {}
            for sel in self.selectors:
                adapters[sel.label] = stack.enter_context(materialize(sel, self.config))
            for sel in self.selectors:
                run = runs[sel.label] = self._open_selector(sel, root)
                stack.callback(run.close)
                self._emit(ev.SelectorStarted(label=sel.label, selector=sel.text, commit=sel.commit,
                                              total=run.total))
                for rec in run.records.values():  # a retry shows the earlier records first
                    self._emit(ev.AttemptFinished(label=sel.label, record=rec))
            order = self._order(adapters, runs)
            await self._execute(order, runs)
            self.cancelled = self._cancel.is_set() and any(r.pending for r in runs.values())
            for run in runs.values():
                if run.selector.label not in self.summaries or run.pending:
                    run.close()
                    self.summaries[run.selector.label] = self._finish(run)
        self.summaries = {label: self.summaries[label] for label in self.labels if label in self.summaries}
        if self.cancelled:
            done = self.total - sum(r.pending for r in runs.values())
            self._emit(ev.RunCancelled(finished=done, total=self.total))
        self._emit(ev.RunFinished(summaries=self.summaries, cancelled=self.cancelled,
                                  wall_s=round(time.perf_counter() - t0, 2)))
        return self.summaries

    async def _execute(self, order: list[Attempt], runs: dict[str, _SelectorRun]) -> None:
        loop = self._loop = asyncio.get_running_loop()
        queue = iter(order)
        # A few spare threads, so that an attempt abandoned after its timeout does not shrink the concurrency.
        pool = ThreadPoolExecutor(max_workers=self.concurrency + 4, thread_name_prefix="hermit-tui-attempt")
        is_async = inspect.iscoroutinefunction(self.pipeline)

        self._forced = forced = asyncio.Event()
        if self._force.is_set():
            forced.set()

        async def one(attempt: Attempt) -> tuple[AttemptRecord, str | None] | None:
            started = time.perf_counter()
            if is_async:
                coro = run_attempt_async(self.pipeline, self.judge, attempt.task, attempt.adapter, attempt.repeat,
                                         attempt.label)
            else:
                ctx = contextvars.copy_context()
                coro = loop.run_in_executor(pool, ctx.run, run_attempt, self.pipeline, self.judge, attempt.task,
                                            attempt.adapter, attempt.repeat, attempt.label)
            work = asyncio.ensure_future(asyncio.wait_for(coro, self.timeout_s) if self.timeout_s else coro)
            force = asyncio.ensure_future(forced.wait())
            try:
                await asyncio.wait({work, force}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                force.cancel()
            if not work.done():  # a forced cancel: the attempt is abandoned, not recorded
                work.cancel()
                return None
            try:
                return work.result()
            except asyncio.TimeoutError:
                minutes = self.timeout_s / 60
                message = f"TimeoutError: the attempt ran longer than agent.timeout_min ({minutes:g} min)"
                return _failed(attempt, message, time.perf_counter() - started), None

        async def worker() -> None:
            for attempt in queue:  # one shared iterator: each attempt is taken once, in order
                if self._cancel.is_set():
                    return
                self._emit(ev.AttemptStarted(label=attempt.label, task_id=str(attempt.task["id"]),
                                             repeat=attempt.repeat))
                outcome = await one(attempt)
                if outcome is None:
                    return
                record, tb = outcome
                run = runs[attempt.label]
                run.append(record)
                run.pending -= 1
                self._emit(ev.AttemptFinished(label=attempt.label, record=record, traceback=tb))
                if run.pending == 0:
                    run.close()
                    self.summaries[attempt.label] = self._finish(run)

        try:
            await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _finish(self, run: _SelectorRun) -> Summary:
        """Write the selector's summary.json from its records (all of them, after a retry)."""
        sel = run.selector
        if run.retry:
            run.compact(self.task_ids)
        complete = len(run.records) == run.total
        earlier = self.earlier.get(sel.label)
        extra: dict[str, Any] = dict(
            label=sel.label, expected_attempts=run.total, complete=complete,
            cancelled=True if (self._cancel.is_set() and run.pending) else None,
            smoke_limit=self.limit, content_hash=sel.content_hash,
            started_at=earlier.started_at if earlier else run.started_at, finished_at=_now(),
            hermit_tui_version=_version(), concurrency=self.concurrency, retries=run.retries or None,
        )
        if self.warnings:
            extra["protocol_warnings"] = self.warnings
        wall = time.perf_counter() - run.started + (earlier.wall_s if earlier else 0.0)
        summary = summarize(run.records.values(), adapter=sel.text, commit=sel.commit, task_ids=self.task_ids,
                            repeats=self.repeats, wall_s=wall, **extra)
        write_atomic(run.folder / SUMMARY, summary.to_json())
        self._emit(ev.SelectorFinished(label=sel.label, summary=summary))
        if sel.kind == "final" and sel.text == "final" and complete and not self.limit and self.update_card:
            self._update_card(summary)
        return summary

    def _update_card(self, summary: Summary) -> None:
        from hermit_tui.core.card import update_final_card
        try:
            result = update_final_card(self.config, summary)
        except InputError as exc:
            self._emit(ev.RunLog(level="error", message=f"card not updated: {exc}"))
            return
        self._emit(ev.CardUpdated(commit=result.commit, moved_tag=result.moved_tag, message=result.message))


__all__ = ["EvalRun", "run_attempt", "run_attempt_async"]
