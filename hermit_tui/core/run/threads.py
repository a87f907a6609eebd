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
from collections.abc import Callable
from typing import Any, TypeVar

from hermit_tui.core.run.attempts import describe


class Job:
    """One call submitted to the pool; ``thread`` is the thread running it (None while it waits in the queue)."""

    __slots__ = ("fn", "args", "context", "future", "thread", "state")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], future: asyncio.Future[Any]):
        self.fn, self.args, self.future = fn, args, future
        self.context = contextvars.copy_context()
        self.thread: threading.Thread | None = None
        self.state = "queued"  # -> running -> finished, or dropped (given up before it started) / abandoned


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

    def submit(self, fn: Callable[..., T], *args: Any) -> tuple[asyncio.Future[T], Job]:
        """Run ``fn(*args)`` in a pool thread; the future gets its result (or its exception)."""
        if self.closed:
            raise RuntimeError("the attempt threads are closed")
        future: asyncio.Future[T] = self.loop.create_future()
        job = Job(fn, args, future)
        self._busy += 1
        if self._busy > len(self._threads):  # no thread is free: the attempt starts now, not when one frees up
            self._start_thread()
        self._jobs.put(job)
        return future, job

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
            job = jobs.get()
            if job is _STOP:
                return
            with lock:
                if job.state != "queued":
                    continue  # given up before it started
                job.state, job.thread = "running", me
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
            self._hand_back(job, ok, value)

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
            self._busy -= 1
            future = job.future
            if future.done():
                continue  # given up on (a forced cancel): nobody waits for it
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)


__all__ = ["AttemptThreads", "Job"]
