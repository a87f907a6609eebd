"""Where attempts run: threads of this process (the default), isolated worker processes, or a Ray cluster
(ray_executor.py, an optional extra).

Both implement one interface, so the runner does not care which it has: ``await start()``, ``await run(attempt)``
returns ``(record, traceback)`` and applies the attempt timeout itself, ``abandon()`` gives up on the attempts in
flight (a forced cancel), ``await close()``.

Threads cannot be killed: an attempt past its timeout is recorded as an error and its thread is left to finish.
Worker processes can: a hung attempt's process is killed and replaced, and a pipeline that crashes the process
(a segfault, ``os._exit``) is recorded as an error instead of taking the run down.
"""
from __future__ import annotations

import asyncio
import contextvars
import inspect
import multiprocessing
import signal
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hermit_tui.core.attempts import (PIPELINE_FAILURES, TRACEBACK_CHARS, Attempt, call_pipeline, failed_record,
                                      judge_output, run_attempt, run_attempt_async)
from hermit_tui.core.records import AttemptRecord

Outcome = tuple[AttemptRecord, "str | None"]


def timeout_message(seconds: float) -> str:
    return f"TimeoutError: the attempt ran longer than agent.timeout_min ({seconds / 60:g} min)"


class Executor:
    """The interface (and what both implementations share)."""

    name = "base"

    def __init__(self, pipeline, judge, *, concurrency: int, timeout_s: float | None):
        self.pipeline, self.judge = pipeline, judge
        self.concurrency, self.timeout_s = concurrency, timeout_s

    async def start(self) -> None:
        pass

    async def run(self, attempt: Attempt) -> Outcome:
        raise NotImplementedError

    def abandon(self) -> None:
        pass

    async def close(self) -> None:
        pass


class ThreadExecutor(Executor):
    """Synchronous pipelines in worker threads, ``async def`` pipelines on the loop."""

    name = "threads"

    async def start(self) -> None:
        # A few spare threads, so that an attempt abandoned after its timeout does not shrink the concurrency.
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency + 4, thread_name_prefix="hermit-tui-attempt")
        self._is_async = inspect.iscoroutinefunction(self.pipeline)

    async def run(self, attempt: Attempt) -> Outcome:
        started = time.perf_counter()
        if self._is_async:
            work = run_attempt_async(self.pipeline, self.judge, attempt)
        else:
            loop = asyncio.get_running_loop()
            work = loop.run_in_executor(self._pool, contextvars.copy_context().run, run_attempt, self.pipeline,
                                        self.judge, attempt)
        try:
            return await asyncio.wait_for(work, self.timeout_s) if self.timeout_s else await work
        except asyncio.TimeoutError:
            return failed_record(attempt, timeout_message(self.timeout_s), time.perf_counter() - started), None

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


# -- worker processes ------------------------------------------------------------------------------------------------

def _worker_main(conn, config_path: str, overrides: list[str]) -> None:
    """A worker process: load the pipeline once, then run attempts until told to stop (None)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    from hermit_tui.core.callables import load_pipeline, normalize_output
    from hermit_tui.core.config import load_config
    from hermit_tui.core.transcripts import output_payload
    try:
        pipeline = load_pipeline(load_config(config_path, overrides))
    except BaseException as exc:  # reported on the first job
        pipeline, load_error = None, f"{type(exc).__name__}: {exc}"
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        label, task, repeat, adapter = job
        attempt = Attempt(label, task, repeat, Path(adapter) if adapter else None)
        if pipeline is None:
            conn.send(("error", load_error, None))
            continue
        try:
            out = normalize_output(call_pipeline(pipeline, attempt))
            conn.send(("ok", output_payload(out), None))  # the trajectory as JSON values: always picklable
        except PIPELINE_FAILURES as exc:
            import traceback
            conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()[-TRACEBACK_CHARS:]))
        except Exception as exc:  # the output could not be sent (not picklable)
            conn.send(("error", f"TypeError: the pipeline's output cannot be sent back from its process: {exc}",
                       None))


class _Worker:
    def __init__(self, ctx, config_path: str, overrides: list[str]):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, config_path, overrides), daemon=True,
                                   name="hermit-tui-worker")
        self.process.start()
        child.close()

    def exchange(self, job, timeout: float | None) -> Any:
        """Send a job and wait for its answer; TimeoutError when late, EOFError when the process died."""
        self.conn.send(job)
        if not self.conn.poll(timeout):
            raise TimeoutError
        return self.conn.recv()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, EOFError):
            pass
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)


def _death_message(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"WorkerDied: the pipeline's process was killed by {name}"
    return f"WorkerDied: the pipeline's process exited with code {code}"


def _worker_context():
    """Never fork this (threaded) process: a forkserver whose parent has already imported the engine starts
    workers in a fraction of a fresh interpreter's time; spawn where there is no forkserver (Windows)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["hermit_tui.core.executors", "hermit_tui.core.callables",
                                    "hermit_tui.core.config", "hermit_tui.core.outputs", "hermit_tui.core.context"])
        return ctx
    return multiprocessing.get_context("spawn")


class ProcessExecutor(Executor):
    """Each of ``concurrency`` worker processes runs one attempt at a time; the judge runs in the driver."""

    name = "processes"

    def __init__(self, pipeline, judge, *, concurrency: int, timeout_s: float | None, config_path: Path,
                 overrides: list[str]):
        super().__init__(pipeline, judge, concurrency=concurrency, timeout_s=timeout_s)
        self.config_path, self.overrides = str(config_path), list(overrides)
        self._ctx = _worker_context()

    def _new_worker(self) -> _Worker:
        return _Worker(self._ctx, self.config_path, self.overrides)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._threads = ThreadPoolExecutor(max_workers=self.concurrency + 2, thread_name_prefix="hermit-tui-io")
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._busy: set[_Worker] = set()
        workers = await asyncio.gather(*(loop.run_in_executor(self._threads, self._new_worker)
                                         for _ in range(self.concurrency)))
        for w in workers:
            self._idle.put_nowait(w)

    async def run(self, attempt: Attempt) -> Outcome:
        loop = asyncio.get_running_loop()
        worker = await self._idle.get()
        self._busy.add(worker)
        started = time.perf_counter()
        job = (attempt.label, attempt.task, attempt.repeat, str(attempt.adapter) if attempt.adapter else None)
        replace = False
        try:
            kind, payload, tb = await loop.run_in_executor(self._threads, worker.exchange, job, self.timeout_s)
        except TimeoutError:
            replace = True
            return failed_record(attempt, timeout_message(self.timeout_s) + "; its process was killed",
                                 time.perf_counter() - started), None
        except (EOFError, OSError):
            replace = True
            worker.process.join(2)
            return failed_record(attempt, _death_message(worker.process.exitcode),
                                 time.perf_counter() - started), None
        finally:
            self._busy.discard(worker)
            if replace:
                worker.kill()
                worker = await loop.run_in_executor(self._threads, self._new_worker)
            self._idle.put_nowait(worker)
        if kind == "error":
            return failed_record(attempt, payload, time.perf_counter() - started, tb), tb
        from hermit_tui.core.outputs import RunOutput
        return await loop.run_in_executor(self._threads, judge_output, self.judge, attempt, RunOutput(**payload),
                                          started)

    def abandon(self) -> None:
        for worker in list(self._busy):
            worker.kill()

    async def close(self) -> None:
        workers = []
        while not self._idle.empty():
            workers.append(self._idle.get_nowait())
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._threads, w.stop) for w in workers))
        for w in list(self._busy):
            w.kill()
        self._threads.shutdown(wait=False, cancel_futures=True)


# -- the registry (Ray: hermit_tui/core/ray_executor.py) -------------------------------------------------------------

class _Registry(Mapping):
    """Executor name -> class. "ray" is imported only when asked for: without Ray installed, asking for it raises
    InputError saying how to install it."""

    def __init__(self, **eager: type[Executor]):
        self._eager = eager

    def __getitem__(self, name: str) -> type[Executor]:
        if name in self._eager:
            return self._eager[name]
        if name == "ray":
            from hermit_tui.core.ray_executor import RayExecutor, require_ray
            require_ray()
            return RayExecutor
        raise KeyError(name)

    def __iter__(self):
        return iter([*self._eager, "ray"])

    def __len__(self) -> int:
        return len(self._eager) + 1


EXECUTORS = _Registry(threads=ThreadExecutor, processes=ProcessExecutor)

