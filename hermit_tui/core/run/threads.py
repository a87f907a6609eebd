"""The threads that run synchronous attempts for one launch: long-lived daemon threads, replaced when abandoned.

An attempt's thread used to be started for it and end with it; starting a thread makes the event loop wait until the
new thread has run, so with 16 attempts in flight every attempt cost the loop a hand-over of the GIL and back, and
a run of instant attempts went at a third of its single-threaded speed. Here a thread takes the next attempt from a
queue, and finished attempts are handed back in batches: the first one to finish wakes the event loop once
(``call_soon_threadsafe``), and the loop collects every attempt that has finished by the time it runs.

What the thread-per-attempt design guaranteed still holds:

- a free thread is always waiting when an attempt is submitted (a thread is added when every thread is busy), so an
  attempt's timeout counts from its start, never from a wait for a thread;
- an attempt given up at its timeout (``abandon``) takes its thread out of the pool for good: the thread may hang
  forever, a new one takes its place, so hung attempts never hold up a healthy one; when it does return, its result
  is dropped and the thread ends;
- every thread is a daemon, so the command exits after its last attempt even while one hangs;
- an attempt runs in a copy of the submitting context (``contextvars``), and a ``BaseException`` (``SystemExit``)
  raised in it reaches the waiting coroutine as a ``RuntimeError``, never the event loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from hermit_tui.core.run.attempts import describe


class Job:
    """One call submitted to the pool; ``thread`` is the thread running it (None while it waits in the queue).

    ``then`` (optional) is called in the pool thread with the job and its value when it returns: the next job it gives
    (its ``chained``) starts at once in the same thread, without waiting for the event loop; its future is made
    when the loop collects this job's result."""

    __slots__ = (
        "fn",
        "args",
        "context",
        "future",
        "thread",
        "state",
        "then",
        "chained",
        "started",
        "prev",
        "collected",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        future: asyncio.Future[Any] | None,
        *,
        then: Callable[[Job, Any], Job | None] | None = None,
        context: contextvars.Context | None = None,
    ):
        self.fn, self.args, self.future, self.then = fn, args, future, then
        self.context = context if context is not None else contextvars.copy_context()
        self.thread: threading.Thread | None = None
        self.state = "queued"  # -> running -> finished, or dropped (given up before it started) / abandoned
        self.chained: Job | None = None  # started by this job's thread when this job returned
        self.started = 0.0  # time.perf_counter() when its thread began it
        self.prev: Job | None = None  # the job that chained this one, until this one returns
        self.collected = False  # its result was collected on the loop


_STOP = None
T = TypeVar("T")


class AttemptThreads:
    """A pool of daemon threads bound to the running event loop. ``submit`` and ``abandon`` are called from the
    loop only; the threads touch nothing of the loop's except through ``call_soon_threadsafe``."""

    def __init__(self, name: str = "hermit-tui-attempt"):
        self.loop = asyncio.get_running_loop()
        self.name = name
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._finished: collections.deque[tuple[Job, bool, Any]] = collections.deque()
        self._wake_pending = False  # a drain is scheduled on the loop and has not started yet
        self._lock = threading.Lock()  # a job's state changes (thread side) vs. giving it up (loop side)
        self._threads: set[threading.Thread] = set()  # in the pool (not abandoned)
        self._busy = 0  # jobs submitted and not yet finished, dropped or abandoned
        self._numbers = itertools.count(1)
        self.closed = False

    @property
    def size(self) -> int:
        return len(self._threads)

    def submit(
        self, fn: Callable[..., T], *args: Any, then: Callable[[Job, T], Job | None] | None = None
    ) -> tuple[asyncio.Future[T], Job]:
        """Run ``fn(*args)`` in a pool thread; the future gets its result (or its exception). ``then``: see
        ``Job``."""
        if self.closed:
            raise RuntimeError("the attempt threads are closed")
        future: asyncio.Future[T] = self.loop.create_future()
        job = Job(fn, args, future, then=then)
        self._busy += 1
        if self._busy > len(self._threads):  # no thread is free: the attempt starts now, not when one frees up
            self._start_thread()
        self._jobs.put(job)
        return future, job

    def reserve(self, count: int) -> None:
        """Start threads until the pool has ``count``: a launch that will run ``count`` attempts at once starts them
        while it prepares (its adapters' exports run meanwhile), not one by one as its first attempts are submitted
        (each start waits for the new thread to run; on two busy cores 1-3 ms)."""
        if self.closed:
            return
        while len(self._threads) < count:
            self._start_thread()

    def abandon(self, job: Job) -> threading.Thread | None:
        """Give up on ``job`` (its timeout passed). Its thread, if it is running it, leaves the pool (it is
        returned, to be counted among the hung ones) and finishes on its own; a job still in the queue never runs."""
        with self._lock:
            state = job.state
            if state == "queued":
                job.state = "dropped"
            elif state == "running":
                job.state = "abandoned"
        if state == "queued":
            self._busy -= 1
            return None
        if state != "running":
            return None  # it finished meanwhile: its result is on its way and is dropped
        self._busy -= 1
        thread = job.thread
        assert thread is not None
        self._threads.discard(thread)
        return thread

    def close(self) -> None:
        """Let the threads end once idle (they are daemons either way: a hung one never delays the exit)."""
        if self.closed:
            return
        self.closed = True
        for _ in range(len(self._threads)):
            self._jobs.put(_STOP)

    # -- the threads ---------------------------------------------------------------------------------------------
    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._serve, name=f"{self.name}-{next(self._numbers)}", daemon=True)
        self._threads.add(thread)
        thread.start()

    def _serve(self) -> None:
        me = threading.current_thread()
        jobs, lock = self._jobs, self._lock
        while True:
            job: Job | None = jobs.get()
            if job is _STOP:
                return
            with lock:
                if job.state != "queued":
                    continue  # given up before it started
                job.state, job.thread = "running", me
            while job is not None:  # a job, then the ones it chains in this thread
                job.started = time.perf_counter()
                value: Any
                try:
                    ok, value = True, job.context.run(job.fn, *job.args)
                except Exception as exc:
                    ok, value = False, exc
                except BaseException as exc:  # never hand SystemExit or KeyboardInterrupt to the event loop
                    ok, value = False, RuntimeError(describe(exc))
                with lock:
                    abandoned = job.state == "abandoned"
                    job.state = "finished"
                if abandoned:
                    return  # out of the pool: another thread took this one's place
                nxt = self._chain(job, value) if ok and job.then is not None else None
                self._hand_back(job, ok, value)
                job = nxt

    def _chain(self, job: Job, value: Any) -> Job | None:
        """The job ``job.then`` gives to run next in this thread (None: this thread goes back to the queue). A
        thread runs at most one job ahead of the loop: while the job that chained this one has not been collected,
        the loop takes what comes next (so a cancel the loop hears of stops the chain after the job in flight)."""
        assert job.then is not None
        prev, job.prev = job.prev, None
        if prev is not None and not prev.collected:
            return None
        try:
            nxt = job.then(job, value)
        except Exception:
            return None  # never the thread's end: the event loop schedules what comes next
        if nxt is not None:
            nxt.state, nxt.thread = "running", threading.current_thread()  # nobody else knows it yet
            nxt.prev, job.chained = job, nxt
        return nxt

    def _hand_back(self, job: Job, ok: bool, value: Any) -> None:
        self._finished.append((job, ok, value))
        if self._wake_pending:
            return  # the drain already scheduled collects this one too
        self._wake_pending = True
        try:
            self.loop.call_soon_threadsafe(self._drain)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for this any more

    # -- the loop ------------------------------------------------------------------------------------------------
    def _drain(self) -> None:
        self._wake_pending = False  # before collecting: a result appended from now on schedules another drain
        finished = self._finished
        while finished:
            job, ok, value = finished.popleft()
            job.collected = True
            future = job.future
            assert future is not None  # made when the job that chained it was collected (below)
            nxt = job.chained
            if nxt is None:
                self._busy -= 1
            else:  # its thread went on with the chained job: still busy
                nxt.future = self.loop.create_future()
                if future.done():
                    nxt.future.cancel()  # nobody waits for this job, so nobody waits for the one it chained
            if future.done():
                continue  # given up on (a forced cancel): nobody waits for it
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)


__all__ = ["AttemptThreads", "Job"]
