"""Where attempts run, isolated: the process executor (``--executor processes``), one of core.run.executors'
implementations, and its worker processes, the pipe between them and what travels on it.

Worker processes can be killed: a hung attempt's process is killed and replaced, and a pipeline that crashes the
process (a segfault, ``os._exit``) is recorded as an error instead of taking the run down. Their judge runs in the
driver, in a pool of daemon threads like the thread executor's, bounded by the same timeout.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext
from pathlib import Path
from typing import Any, NamedTuple

from hermit_tui.core.outputs import RunOutput
from hermit_tui.core.run.attempts import (
    PIPELINE_FAILURES,
    TRACEBACK_CHARS,
    Attempt,
    Progress,
    call_pipeline,
    describe,
    failed_record,
    judge_failed,
    judge_printing,
    keep_printed,
)
from hermit_tui.core.run.executors import (
    Executor,
    Outcome,
    Running,
    Take,
    _minutes,
    judge_timeout_message,
    timeout_message,
)
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.run.threads import AttemptThreads, Job
from hermit_tui.core.workspace.callables import Judge, Pipeline, load_judge, load_pipeline
from hermit_tui.core.workspace.config import Config


class _Forked(NamedTuple):
    """What a worker forked from the driver as the launch is built inherits: the driver's config (run.yaml is not
    read and validated again; the pipeline's module is still imported afresh in the worker), and the read end of a
    pipe that holds it until the driver has forked every worker (``go``; ``hold`` is the write end, closed at once)."""

    config: Config
    go: int
    hold: int


def _worker_main(conn: Connection, config_path: str, overrides: list[str], forked: _Forked | None = None) -> None:
    """A worker process: load the pipeline once, then run attempts until told to stop (None)."""
    if forked is not None:
        # the driver forks the other workers undisturbed by this one's loading (on two cores, workers loading
        # while it forks made each fork ~3x slower); a driver that died closes the pipe, which ends the wait too
        os.close(forked.hold)
        try:
            os.read(forked.go, 1)
        finally:
            os.close(forked.go)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    from hermit_tui.core.records.transcripts import output_payload
    from hermit_tui.core.run.printed import WorkerCapture, _on_fd
    from hermit_tui.core.workspace.callables import load_pipeline, normalize_output
    from hermit_tui.core.workspace.config import load_config

    # a worker forked from the command has the command's streams (routed, guarded: on a copy of the terminal's
    # descriptors): its own are on descriptors 1 and 2, as a fresh interpreter's are
    if not (_on_fd(sys.stdout, 1) and _on_fd(sys.stderr, 2)):
        enc = getattr(sys.stdout, "encoding", None) or "utf-8"
        sys.stdout = open(1, "w", encoding=enc, closefd=False, buffering=1)
        sys.stderr = open(2, "w", encoding=enc, errors="backslashreplace", closefd=False, buffering=1)
        sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr  # type: ignore[misc]
    # everything this process prints (Python, fd-level, its subprocesses) goes to a private file, never to the
    # terminal or the command's stdout; each answer carries what its attempt printed
    printed = WorkerCapture()
    try:
        pipeline = load_pipeline(forked.config if forked is not None else load_config(config_path, overrides))
    except BaseException as exc:  # reported on every job
        pipeline, load_error = None, f"{type(exc).__name__}: {exc}"
    # warm: the driver hands this worker its first attempt only now, so that the pipeline's import is never counted
    # against an attempt's timeout (what the import printed is not an attempt's: dropped)
    printed.take()
    conn.send(("ready", None) if pipeline is not None else ("load_error", load_error))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        label, task, repeat, adapter, log_dir = job
        attempt = Attempt(label, task, repeat, Path(adapter) if adapter else None, Path(log_dir) if log_dir else None)
        if pipeline is None:
            conn.send(("error", load_error, None, printed.take()))
            continue
        try:
            out = normalize_output(call_pipeline(pipeline, attempt))
            payload = output_payload(out)  # field by field (no deep copy); the trajectory as JSON values
        except PIPELINE_FAILURES as exc:
            import traceback

            tb = traceback.format_exc()[-TRACEBACK_CHARS:]
            conn.send(("error", describe(exc), tb, printed.take()))
            continue
        text = printed.take()
        try:
            conn.send(("ok", payload, None, text))
        except Exception as exc:  # the output could not be sent (not picklable)
            conn.send(
                (
                    "error",
                    f"TypeError: the pipeline's output cannot be sent back from its process: "
                    f"{' '.join(describe(exc).split())[:200]}",
                    None,
                    text,
                )
            )


class _Worker:
    def __init__(
        self,
        ctx: ForkContext | ForkServerContext | SpawnContext,
        config_path: str,
        overrides: list[str],
        forked: _Forked | None = None,
    ):
        """``forked``: only with the fork context (a fork inherits it; the other contexts would pickle it)."""
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_worker_main, args=(child, config_path, overrides, forked), daemon=True, name="hermit-tui-worker"
        )
        self.process.start()
        child.close()
        self.unusable: str | None = None  # why this worker cannot run attempts (its pipeline did not load)

    def wait_ready(self, timeout: float | None) -> None:
        """Wait until the worker has loaded the pipeline (its own bound: ``timeout``, the attempt timeout); a
        worker that did not is kept, unusable, and its attempts are errors saying why."""
        try:
            if not self.conn.poll(timeout):
                self.unusable = (
                    f"TimeoutError: the pipeline's process did not load the pipeline within agent.timeout_min "
                    f"({_minutes(timeout)})"
                )
                self.kill()
                return
            kind, message = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(2)
            self.unusable = _death_message(self.process.exitcode) + " while loading the pipeline"
            return
        if kind != "ready":
            self.unusable = message

    def exchange(self, job: tuple[Any, ...], timeout: float | None) -> Any:
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

    def ask_to_stop(self) -> None:
        """Tell the worker to end (it has nothing left to write: every answer was received)."""
        try:
            self.conn.send(None)
        except (OSError, EOFError):
            pass

    def reap(self) -> None:
        """Wait for the worker asked to stop to end; killed when it has not after 2 s (a thread its pipeline left
        running holds its exit)."""
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)


class _Unstarted(_Worker):
    """A worker whose process could not be started: every attempt it is given is an error saying why."""

    def __init__(self, why: str):  # no process, no pipe
        self.unusable = why

    def kill(self) -> None:
        pass

    def ask_to_stop(self) -> None:
        pass

    def reap(self) -> None:
        pass


def _stop_all(workers: list[_Worker]) -> None:
    """Tell every worker to stop, then wait for each (started before the first is told: a thread started once 16
    processes are exiting on two cores waited ~8 ms to run)."""
    for worker in workers:
        worker.ask_to_stop()
    for worker in workers:
        worker.reap()


def _job(attempt: Attempt) -> tuple[str, dict[str, Any], int, str | None, str | None]:
    """What a worker process is sent for ``attempt``: (label, task, repeat, adapter folder, log folder)."""
    return (
        attempt.label,
        attempt.task,
        attempt.repeat,
        str(attempt.adapter) if attempt.adapter else None,
        str(attempt.log_dir) if attempt.log_dir else None,
    )


def _unreceivable(exc: BaseException) -> str:
    """The error of an answer that arrived but cannot be rebuilt here (unpickling failed)."""
    return (
        "TypeError: the pipeline's output cannot be received from its process "
        f"({' '.join(describe(exc).split())[:200]})"
    )


def _death_message(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"WorkerDied: the pipeline's process was killed by {name}"
    return f"WorkerDied: the pipeline's process exited with code {code}"


def _worker_context() -> ForkServerContext | SpawnContext:
    """Never fork this (threaded) process: a forkserver whose parent has already imported the engine starts
    workers in a fraction of a fresh interpreter's time; spawn where there is no forkserver (Windows)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(
            [
                "hermit_tui.core.run.process_executor",
                "hermit_tui.core.workspace.callables",
                "hermit_tui.core.workspace.config",
                "hermit_tui.core.outputs",
                "hermit_tui.core.context",
            ]
        )
        return ctx
    return multiprocessing.get_context("spawn")


#: Threads a worker may be forked beside: the command's pump of fd-level output (core.run.printed._StraySink),
#: which only reads a pipe and writes raw descriptors under a lock of its own that no worker ever takes.
#: The thread that stops the workers of a launch that ended (``_stop_all``: a send, waitpid, a kill past its bound)
#: holds no lock a fork could copy held either.
REAPER = "hermit-tui-reap"
FORK_SAFE_THREADS = frozenset({"hermit-tui-printed", REAPER})


def _forkable() -> bool:
    """True where a worker may be forked from this process itself: Linux (macOS frameworks are not fork-safe), and
    no thread besides this one but the pump of FORK_SAFE_THREADS (a fork copies only the calling thread: a lock
    another thread held would stay held in the child forever). The command builds its launch before it starts any
    other thread; the dashboard, whose threads run, gets its workers from the forkserver."""
    if not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods():
        return False
    me = threading.current_thread()
    return all(t is me or t.name in FORK_SAFE_THREADS for t in threading.enumerate())


class ProcessExecutor(Executor):
    """Each of ``concurrency`` worker processes runs one attempt at a time; the judge runs in the driver."""

    name = "processes"

    def __init__(
        self,
        pipeline: Pipeline | None,
        judge: Judge | None,
        *,
        concurrency: int,
        timeout_s: float | None,
        config_path: Path,
        overrides: list[str],
        config: Config | None = None,
    ):
        """``config``: the loaded config (of ``config_path`` with ``overrides``), handed to the workers forked from
        this process."""
        super().__init__(pipeline, judge, concurrency=concurrency, timeout_s=timeout_s)
        self.config_path, self.overrides = str(config_path), list(overrides)
        self._ctx = _worker_context()
        self._early: list[_Worker] = []  # forked from this process as the launch is built (see _forkable)
        if config is not None and _forkable():
            # this process has one thread and has imported the engine: a fork of it is a worker at once, without
            # a fresh interpreter's start and imports (the forkserver's first worker came 0.4-0.6 s after this);
            # each worker still imports the pipeline itself (from the config it inherits), and replacements come
            # from the forkserver. The collector is frozen while forking: a worker's first collections then skip
            # this process's objects instead of touching (and so copying) every page that holds them.
            fork = multiprocessing.get_context("fork")
            go, hold = os.pipe()
            forked = _Forked(config, go, hold)
            gc.freeze()
            try:
                for _ in range(concurrency):
                    self._early.append(_Worker(fork, self.config_path, self.overrides, forked))
            except Exception:  # out of processes or memory: the rest start as usual, in start()
                pass
            finally:
                gc.unfreeze()
                try:
                    os.write(hold, b"\0" * len(self._early))  # (a pipe holds far more than one byte per worker)
                finally:
                    os.close(hold)
                    os.close(go)
        elif isinstance(self._ctx, ForkServerContext):
            # the forkserver imports the engine (~0.5 s of CPU) while the launch is built and its folders and
            # adapters are prepared, instead of when the first worker is asked for
            multiprocessing.forkserver.ensure_running()

    @classmethod
    def for_launch(
        cls, config: Config, options: LaunchOptions, *, concurrency: int, timeout_s: float | None
    ) -> Executor:
        """The workers load the pipeline from the config and its overrides; the driver loads it too, so that a bad
        one is refused before any process starts."""
        return cls(
            load_pipeline(config, timeout_s),
            load_judge(config, timeout_s),
            concurrency=concurrency,
            timeout_s=timeout_s,
            config_path=config.path,
            overrides=config.overrides,
            config=config,
        )

    def _new_worker(self, early: _Worker | None = None) -> _Worker:
        if early is not None:
            worker = early
        else:
            try:
                worker = _Worker(self._ctx, self.config_path, self.overrides)
            except Exception as exc:  # no process could be started (out of processes or memory): its attempts say so
                return _Unstarted(f"WorkerDied: the pipeline's process could not be started ({describe(exc)})")
        with self._starting_lock:
            self._starting.add(worker)
        try:
            worker.wait_ready(self.timeout_s)
        finally:
            with self._starting_lock:
                self._starting.discard(worker)
        return worker

    def _boot(self, early: _Worker | None = None) -> None:
        """Start a worker (or wait for one forked as the launch was built) in the background; it joins the idle
        ones once its pipeline is loaded (warm)."""
        loop = asyncio.get_running_loop()
        booting = loop.run_in_executor(self._threads, self._new_worker, early)
        self._booting.add(booting)

        def arrived(done: asyncio.Future[_Worker]) -> None:
            self._booting.discard(done)
            if done.cancelled() or done.exception() is not None:
                return
            worker = done.result()
            if self._closing:  # arrived after the launch ended: never used
                worker.kill()
            else:
                self._idle.put_nowait(worker)

        booting.add_done_callback(arrived)

    async def start(self) -> None:
        """Start the workers; the first attempts start as soon as the first workers are warm (not after all)."""
        self._threads = ThreadPoolExecutor(max_workers=self.concurrency + 2, thread_name_prefix="hermit-tui-io")
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._busy: set[_Worker] = set()
        self._booting: set[asyncio.Future[_Worker]] = set()
        self._starting: set[_Worker] = set()  # started, loading the pipeline (guarded by the lock: io threads)
        self._starting_lock = threading.Lock()
        self._closing = False
        self._judges = AttemptThreads("hermit-tui-judge")  # the judge runs here, in the driver
        self.chains = True  # core.run.runner: the exchange, the judge and the next exchange in one thread
        early, self._early = self._early, []
        for worker in early:
            self._boot(worker)
        for _ in range(self.concurrency - len(early)):
            self._boot()
        self._judges.reserve(self.concurrency)  # one per slot (it sends, judges, sends the next), started meanwhile

    async def run(self, attempt: Attempt) -> Outcome:
        self._check_capacity()  # hung judges
        loop = asyncio.get_running_loop()
        worker = await self._idle.get()
        started = time.perf_counter()
        if worker.unusable is not None:  # its pipeline did not load: every attempt it is given says why
            self._idle.put_nowait(worker)
            return failed_record(attempt, worker.unusable, 0.0), None
        self._busy.add(worker)
        job = _job(attempt)
        replace = False
        try:
            kind, payload, tb, printed = await loop.run_in_executor(self._threads, worker.exchange, job, self.timeout_s)
        except TimeoutError:
            replace = True
            return failed_record(
                attempt, timeout_message(self.timeout_s) + "; its process was killed", time.perf_counter() - started
            ), None
        except (EOFError, OSError):
            replace = True
            worker.process.join(2)
            return failed_record(attempt, _death_message(worker.process.exitcode), time.perf_counter() - started), None
        except Exception as exc:  # the answer arrived but cannot be rebuilt here (unpickling failed)
            replace = True
            return failed_record(attempt, _unreceivable(exc), time.perf_counter() - started), None
        finally:
            self._busy.discard(worker)
            if replace:
                worker.kill()
                self._boot()  # its replacement joins the idle ones once warm; this attempt does not wait for it
            else:
                self._idle.put_nowait(worker)
        if kind == "error":
            return keep_printed(
                failed_record(attempt, payload, time.perf_counter() - started, tb), attempt, printed
            ), tb
        progress = Progress()
        judged = time.perf_counter()  # the judge's own bound counts from its start
        work, judging = self._judges.submit(
            judge_printing, self._driver_judge(), attempt, RunOutput(**payload), started, progress, printed
        )
        try:
            return await asyncio.wait_for(work, self.timeout_s) if self.timeout_s else await work
        except TimeoutError:
            self._give_up(self._judges, judging, attempt, "judge")
            if progress.output is None:  # still checking the output: cannot be the judge's fault
                record = failed_record(attempt, timeout_message(self.timeout_s), time.perf_counter() - judged)
            else:
                record = judge_failed(attempt, progress.output, judge_timeout_message(self.timeout_s), started)
            return keep_printed(record, attempt, printed, progress.printed.text() if progress.printed else ""), None
        except Exception as exc:  # escaped the judge's own handling: still only this attempt's error
            record = failed_record(attempt, describe(exc), time.perf_counter() - started)
            return keep_printed(record, attempt, printed, progress.printed.text() if progress.printed else ""), None

    # -- chained (core.run.runner): one pool thread per slot sends an attempt, judges its answer and sends the next
    def _answer(self, worker: _Worker, attempt: Attempt, progress: Progress) -> tuple[Outcome, bool]:
        """In a pool thread: run ``attempt`` in ``worker`` and judge its answer here, in the same thread (no hop
        through the loop between the two); (outcome, whether the worker may go on)."""
        started = time.perf_counter()
        if worker.unusable is not None:  # its pipeline did not load: every attempt it is given says why
            return (failed_record(attempt, worker.unusable, 0.0), None), True
        job = _job(attempt)
        try:
            kind, payload, tb, printed = worker.exchange(job, self.timeout_s)
        except TimeoutError:
            worker.kill()
            message = timeout_message(self.timeout_s) + "; its process was killed"
            return (failed_record(attempt, message, time.perf_counter() - started), None), False
        except (EOFError, OSError):
            worker.process.join(2)
            message = _death_message(worker.process.exitcode)
            worker.kill()
            return (failed_record(attempt, message, time.perf_counter() - started), None), False
        except Exception as exc:  # the answer arrived but cannot be rebuilt here (unpickling failed)
            worker.kill()
            return (failed_record(attempt, _unreceivable(exc), time.perf_counter() - started), None), False
        if kind == "error":
            record = failed_record(attempt, payload, time.perf_counter() - started, tb)
            return (keep_printed(record, attempt, printed), tb), True
        progress.judging_since = time.perf_counter()  # the judge's own bound counts from here
        return judge_printing(self._driver_judge(), attempt, RunOutput(**payload), started, progress, printed), True

    async def run_chained(
        self, attempt: Attempt, take: Take, running: Running | None = None
    ) -> tuple[Outcome, Running | None]:
        """An attempt in a worker process, sent, answered and judged by one pool thread, which then takes the next
        attempt (``take``) and sends it to the same worker at once. The pipeline's timeout is the exchange's own
        (the worker is killed and replaced); the judge's counts from its start, as in ``run``."""
        if running is None:
            self._check_capacity()  # hung judges
            worker = await self._idle.get()
            self._busy.add(worker)

            def then(done: Job, value: tuple[Outcome, bool]) -> Job | None:  # in the pool thread
                outcome, keep = value
                if not keep:
                    return None  # its worker was killed: the loop starts a replacement
                nxt = take(done.args[1], outcome[0])
                if nxt is None:
                    return None
                return Job(self._answer, (done.args[0], nxt, Progress()), None, then=then, context=done.context.copy())

            work, job = self._judges.submit(self._answer, worker, attempt, Progress(), then=then)
        else:
            job = running
            assert job.future is not None
            work = job.future
        worker, _, progress = job.args
        try:
            while True:
                judging = progress.judging_since
                if self.timeout_s is None:
                    wait = None
                elif not judging:  # the exchange bounds itself (its poll, then the kill): look again after a while
                    wait = self.timeout_s
                else:
                    wait = max(self.timeout_s - (time.perf_counter() - judging), 0.0)
                done, _ = await asyncio.wait({work}, timeout=wait)
                if done:
                    value: tuple[Outcome, bool] = work.result()
                    break
                if not judging:
                    continue
                # the judge ran past its bound
                thread = self._judges.abandon(job)
                if thread is None and job.state == "finished":
                    value = await work  # it returned as its time ran out
                    break
                work.cancel()
                if thread is not None:
                    thread.name = f"hermit-tui-hung-judge-{attempt.label}-{attempt.task_id}-r{attempt.repeat}"
                    self._abandon_thread(thread)
                self._release(worker, keep=True)  # it answered: only the judge hangs
                if progress.output is None:  # still checking the output: cannot be the judge's fault
                    record = failed_record(attempt, timeout_message(self.timeout_s), time.perf_counter() - judging)
                else:
                    message = judge_timeout_message(self.timeout_s)
                    record = judge_failed(attempt, progress.output, message, job.started or judging)
                tail = progress.printed.text() if progress.printed else ""
                return (keep_printed(record, attempt, tail) if tail else record, None), None
        except asyncio.CancelledError:
            work.cancel()
            raise
        outcome, keep = value
        if job.chained is None:  # the slot's worker comes back to the loop
            self._release(worker, keep=keep)
        return outcome, job.chained

    def attempt_of(self, running: Running) -> Attempt:
        attempt: Attempt = running.args[1]  # _answer(worker, attempt, progress)
        return attempt

    def _release(self, worker: _Worker, *, keep: bool) -> None:
        self._busy.discard(worker)
        if keep:
            self._idle.put_nowait(worker)
        else:
            self._boot()  # killed in its thread; its replacement joins the idle ones once warm

    def abandon(self) -> None:
        for worker in list(self._busy):
            worker.kill()

    async def close(self) -> None:
        self._closing = True  # a worker still booting stops as it arrives
        with self._starting_lock:
            loading = list(self._starting)
        for w in loading:  # still loading the pipeline (an import that may never end): not waited for
            if w.process.is_alive():
                w.process.kill()
        booting = list(self._booting)
        workers = []
        while not self._idle.empty():
            workers.append(self._idle.get_nowait())
        if workers:  # told to stop and waited for in a thread: the launch does not wait for 16 exits (~20-35 ms)
            threading.Thread(target=_stop_all, args=(workers,), name=REAPER, daemon=True).start()
        if booting:
            await asyncio.wait(booting)
        for w in list(self._busy):
            w.kill()
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._judges.close()
