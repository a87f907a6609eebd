"""Where attempts run: threads of this process (the default, here), isolated worker processes
(process_executor.py), or a Ray cluster (ray_executor.py, an optional extra).

All implement one interface, so the runner does not care which it has: ``Executor.for_launch(config, options, ...)``
builds one from a launch's options (each class knows what it needs), ``await start()``, ``await run(attempt)``
returns ``(record, traceback)`` and applies the attempt timeout itself, ``abandon()`` gives up on the attempts in
flight (a forced cancel), ``await close()``, and ``summary_keys(label)`` adds what the executor alone knows to a
selector's summary.

Threads cannot be killed: an attempt past its timeout is recorded as an error and its thread is left to finish.
Attempts run in a pool of daemon threads (core.run.threads) that always has a free thread when an attempt starts
(its timeout counts from then) and replaces a thread abandoned at a timeout, so abandoned threads never hold up a
healthy attempt; they are daemon threads, so the command exits after its last attempt even while one hangs. When
HUNG_THREAD_LIMIT abandoned threads are still alive the run stops and says so (CapacityExhausted) rather than pile up
more. A segfault or ``os._exit`` in a thread ends the whole process.
Worker processes (process_executor.py) can be killed instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.run.attempts import (
    PIPELINE_FAILURES,
    Attempt,
    Progress,
    call_pipeline_async,
    describe,
    failed_record,
    judge_failed,
    judge_printing,
    keep_printed,
    pipeline_failed,
    run_attempt,
)
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.run.printed import Tail, capturing
from hermit_tui.core.run.threads import AttemptThreads, Job
from hermit_tui.core.workspace.callables import Judge, Pipeline, load_judge, load_pipeline
from hermit_tui.core.workspace.config import Config

Outcome = tuple[AttemptRecord, "str | None"]
#: Called in an attempt's thread with the attempt it just finished and its record: the attempt to start next in
#: that thread, or None (the event loop schedules what comes next).
Take = Callable[[Attempt, AttemptRecord], "Attempt | None"]
Running = Job  # an attempt a pool thread started by itself (``Executor.run_chained``)
T = TypeVar("T")
#: Abandoned (timed-out) threads still alive at which a run stops instead of starting more attempts.
HUNG_THREAD_LIMIT = 64


class CapacityExhausted(Exception):
    """Too many abandoned threads are still running: the run stops (honestly incomplete)."""


def _minutes(seconds: float | None) -> str:
    return "no limit" if seconds is None else f"{seconds / 60:g} min"


def timeout_message(seconds: float | None) -> str:
    return f"TimeoutError: the attempt ran longer than agent.timeout_min ({_minutes(seconds)})"


def judge_timeout_message(seconds: float | None) -> str:
    return f"TimeoutError: the judge ran longer than agent.timeout_min ({_minutes(seconds)})"


def in_daemon_thread(fn: Callable[..., T], *args: Any, name: str) -> tuple[asyncio.Future[T], threading.Thread]:
    """Run ``fn(*args)`` in a new daemon thread (in a copy of the current context); the future gets its result.
    A daemon thread that never returns does not keep the process alive at exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    ctx = contextvars.copy_context()

    def deliver(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def body() -> None:
        value: Any
        try:
            ok, value = True, ctx.run(fn, *args)
        except Exception as exc:
            ok, value = False, exc
        except BaseException as exc:  # never hand SystemExit or KeyboardInterrupt to the event loop
            ok, value = False, RuntimeError(describe(exc))
        try:
            loop.call_soon_threadsafe(deliver, ok, value)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for this any more

    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.start()
    return future, thread


class Executor:
    """The interface (and what both implementations share)."""

    name = "base"
    #: True when ``run_chained`` is offered: the thread that finishes an attempt starts the next one itself
    chains = False

    def __init__(self, pipeline: Pipeline | None, judge: Judge | None, *, concurrency: int, timeout_s: float | None):
        self.pipeline, self.judge = pipeline, judge  # None: loaded elsewhere (on the Ray workers)
        self.concurrency, self.timeout_s = concurrency, timeout_s

    @classmethod
    def for_launch(
        cls, config: Config, options: LaunchOptions, *, concurrency: int, timeout_s: float | None
    ) -> Executor:
        """The executor of a launch, built from its options: the driver loads the pipeline and the judge (a bad
        one is InputError before anything is written)."""
        return cls(
            load_pipeline(config, timeout_s),
            load_judge(config, timeout_s),
            concurrency=concurrency,
            timeout_s=timeout_s,
        )

    def summary_keys(self, label: str) -> dict[str, Any]:
        """What this executor adds to selector ``label``'s summary.json (none by default)."""
        return {}

    async def start(self) -> None:
        pass

    async def run(self, attempt: Attempt) -> Outcome:
        raise NotImplementedError

    async def run_chained(
        self, attempt: Attempt, take: Take, running: Running | None = None
    ) -> tuple[Outcome, Running | None]:
        """``run``, where the attempt's thread, once it has its record, calls ``take(attempt, record)`` (in that
        thread) and starts the attempt it returns at once: returned as ``Running``, to be passed back here as
        ``running`` (with its own attempt) to wait for it. Only where ``chains`` is True."""
        raise NotImplementedError

    def attempt_of(self, running: Running) -> Attempt:
        """The attempt a ``Running`` runs."""
        attempt: Attempt = running.args[2]  # run_attempt(pipeline, judge, attempt, progress)
        return attempt

    def abandon(self) -> None:
        pass

    async def close(self) -> None:
        pass

    # -- threads left running past their timeout (shared by the thread and process executors) --
    def _abandon_thread(self, thread: threading.Thread) -> None:
        if thread.is_alive():
            self.__dict__.setdefault("_hung", set()).add(thread)

    def _give_up(self, pool: AttemptThreads, job: Job, attempt: Attempt, what: str) -> None:
        """``job`` ran past its timeout: its thread (if it had started it) leaves the pool and counts as hung."""
        thread = pool.abandon(job)
        if thread is not None:
            thread.name = f"hermit-tui-hung-{what}-{attempt.label}-{attempt.task_id}-r{attempt.repeat}"
            self._abandon_thread(thread)

    def _driver_pipeline(self) -> Pipeline:
        if self.pipeline is None:
            raise RuntimeError(f"the {self.name} executor runs the pipeline in the driver, which has none")
        return self.pipeline

    def _driver_judge(self) -> Judge:
        if self.judge is None:
            raise RuntimeError(f"the {self.name} executor judges in the driver, which has no judge")
        return self.judge

    def hung_threads(self) -> int:
        hung = self.__dict__.setdefault("_hung", set())
        hung.difference_update([t for t in hung if not t.is_alive()])
        return len(hung)

    def _check_capacity(self) -> None:
        if self.hung_threads() >= HUNG_THREAD_LIMIT:
            raise CapacityExhausted(
                f"{self.hung_threads()} attempts hung past agent.timeout_min and their threads cannot be killed, so "
                "no further attempt was started; re-run with --executor processes (hung attempts are killed there) "
                "and --resume"
            )


def _kept_so_far(record: AttemptRecord, attempt: Attempt, progress: Progress) -> AttemptRecord:
    """An attempt given up at its timeout keeps what it had printed by then."""
    tail = progress.printed
    return keep_printed(record, attempt, tail.text()) if tail else record


class ThreadExecutor(Executor):
    """Synchronous pipelines in the pool's daemon threads (core.run.threads), ``async def`` pipelines on the
    loop."""

    name = "threads"

    async def start(self) -> None:
        self._is_async = inspect.iscoroutinefunction(self.pipeline)
        self.chains = not self._is_async  # an async pipeline runs on the loop: nothing to chain in a thread
        self._pool = AttemptThreads()
        if not self._is_async:  # one thread per slot, started before the first attempt (an async pipeline's
            self._pool.reserve(self.concurrency)  # judges need threads only as they come: up to 1,024 slots)

    async def run_chained(
        self, attempt: Attempt, take: Take, running: Running | None = None
    ) -> tuple[Outcome, Running | None]:
        """A synchronous attempt whose pool thread, when it has the record, takes the next attempt (``take``) and
        runs it at once: the slot does not wait for the event loop between two attempts. The timeout counts from
        the attempt's start in its thread; an attempt given up on chains nothing (its thread leaves the pool)."""
        if running is None:
            self._check_capacity()
            pipeline, judge = self._driver_pipeline(), self._driver_judge()

            def then(done: Job, outcome: Outcome) -> Job | None:  # in the pool thread
                nxt = take(done.args[2], outcome[0])
                if nxt is None:
                    return None
                return Job(
                    run_attempt, (pipeline, judge, nxt, Progress()), None, then=then, context=done.context.copy()
                )

            work, job = self._pool.submit(run_attempt, pipeline, judge, attempt, Progress(), then=then)
        else:
            job = running
            assert job.future is not None
            work = job.future
        progress: Progress = job.args[3]
        try:
            if self.timeout_s is None:
                outcome: Outcome = await work
            else:
                left = self.timeout_s - (time.perf_counter() - job.started) if job.started else self.timeout_s
                done, _ = await asyncio.wait({work}, timeout=max(left, 0.0))
                if done:
                    outcome = work.result()
                else:
                    thread = self._pool.abandon(job)
                    if thread is None and job.state == "finished":
                        outcome = await work  # it returned as its time ran out: its record, and what it chained
                    else:
                        work.cancel()
                        if thread is not None:
                            thread.name = f"hermit-tui-hung-attempt-{attempt.label}-{attempt.task_id}-r{attempt.repeat}"
                            self._abandon_thread(thread)
                        started = job.started or time.perf_counter()
                        if progress.phase == "judge" and progress.output is not None:
                            message = judge_timeout_message(self.timeout_s)
                            record = judge_failed(attempt, progress.output, message, started)
                        else:
                            record = failed_record(
                                attempt, timeout_message(self.timeout_s), time.perf_counter() - started
                            )
                        return (_kept_so_far(record, attempt, progress), None), None
        except asyncio.CancelledError:
            work.cancel()  # a forced cancel: nobody waits for it (nor for what it may have chained)
            raise
        except Exception as exc:  # escaped the attempt's own handling: still only this attempt's error
            started = job.started or time.perf_counter()
            record = failed_record(attempt, describe(exc), time.perf_counter() - started)
            return (_kept_so_far(record, attempt, progress), None), job.chained
        return outcome, job.chained

    async def run(self, attempt: Attempt) -> Outcome:
        self._check_capacity()
        progress = Progress()
        started = time.perf_counter()
        job = None
        work: asyncio.Future[Outcome]
        if self._is_async:
            work = asyncio.ensure_future(self._run_async(attempt, progress, started))
        else:  # a free pool thread takes it now: the timeout counts from the start of the attempt
            work, job = self._pool.submit(run_attempt, self._driver_pipeline(), self._driver_judge(), attempt, progress)
        try:
            return await asyncio.wait_for(work, self.timeout_s) if self.timeout_s else await work
        except TimeoutError:
            if job is not None:
                self._give_up(self._pool, job, attempt, "attempt")
            if progress.phase == "judge" and progress.output is not None:
                record = judge_failed(attempt, progress.output, judge_timeout_message(self.timeout_s), started)
            else:
                record = failed_record(attempt, timeout_message(self.timeout_s), time.perf_counter() - started)
            return _kept_so_far(record, attempt, progress), None
        except Exception as exc:  # escaped the attempt's own handling: still only this attempt's error
            record = failed_record(attempt, describe(exc), time.perf_counter() - started)
            return _kept_so_far(record, attempt, progress), None

    async def _run_async(self, attempt: Attempt, progress: Progress, started: float) -> Outcome:
        """An ``async def`` pipeline on the loop; its (synchronous) judge in a pool thread."""
        tail = progress.printed = Tail()
        with capturing(tail):  # this task's own context: what other tasks on the loop print is not caught
            try:
                value = await call_pipeline_async(self._driver_pipeline(), attempt)
            except PIPELINE_FAILURES as exc:
                record, tb = pipeline_failed(attempt, exc, started)
                return keep_printed(record, attempt, tail.text()) if tail else record, tb
        work, job = self._pool.submit(
            judge_printing, self._driver_judge(), attempt, value, started, progress, tail.text() if tail else ""
        )
        try:
            return await work
        except asyncio.CancelledError:  # the attempt's timeout (or a forced cancel) while the judge runs
            self._give_up(self._pool, job, attempt, "judge")
            raise

    async def close(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
