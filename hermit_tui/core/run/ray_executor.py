"""Attempts on a Ray cluster: the third implementation of the executor interface (see executors.py).

How the pieces travel (no shared filesystem is assumed):

- the task's code: the config's folder is the Ray job's ``working_dir`` (Ray zips it once and every worker unpacks
  it; ``runs/``, ``logs/``, ``.git``, caches and, when the driver judges, the judge's file are left out, as are the
  patterns of a ``.gitignore`` or ``.rayignore`` there). A worker loads the pipeline from that copy, with the
  driver's config overrides; the driver never imports the pipeline.
- each adapter version: a tar.gz of the exported folder, put once in Ray's object store; a worker process unpacks
  it once into a temporary folder, cached by content hash.
- the results: an attempt is a Ray task (a generator: it reports that it started, then returns the pipeline's
  normalized output, or the whole record when the workers judge). The driver judges by default, so the judge's
  private data never leaves it, and only the driver writes files.

Timeouts count from the moment a worker starts the attempt (time queued in Ray does not count); a late attempt's
task is cancelled with force, which kills its worker process. A worker or node lost mid-attempt gives an ``error``
record saying so, or one more try with ``retry_lost`` (counted per selector in ``ray_retries``).

Workers need hermit-tui (and what the pipeline imports) installed: true of a local cluster started from the same
environment; on a real cluster install it on the nodes or list it in the runtime environment's ``pip``.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import inspect
import io
import logging
import os
import shutil
import tarfile
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from hermit_tui.core.errors import InputError
from hermit_tui.core.outputs import RunOutput
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.records.transcripts import output_payload
from hermit_tui.core.run.attempts import (
    PIPELINE_FAILURES,
    TRACEBACK_CHARS,
    Attempt,
    Progress,
    call_pipeline,
    failed_record,
    judge_failed,
    judge_printing,
    run_attempt,
)
from hermit_tui.core.run.executors import Executor, Outcome, in_daemon_thread, judge_timeout_message, timeout_message
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.workspace.callables import Judge, Pipeline, load_judge, load_pipeline, normalize_output
from hermit_tui.core.workspace.config import Config, load_config

INSTALL_HINT = "the Ray executor needs Ray: pip install 'hermit-tui[ray]'"
#: Left out of the working_dir besides Ray's own defaults (.git, venvs, __pycache__) and .gitignore/.rayignore; the
#: run outputs (trainer.output_dir, the adapter tree) are added when they lie inside the folder.
EXCLUDES = ["/logs/", ".git", "__pycache__/", ".hermit-tui*", "*.pyc"]
LOST_PREFIX = "WorkerLost: the Ray worker running this attempt died"


def require_ray() -> ModuleType:
    """The ``ray`` module, or InputError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return ray


# -- what is shipped ----------------------------------------------------------------------------------------------


def _source_file(spec: str, base: Path) -> Path | None:
    """The file of a ``file.py:name`` spec, else None (a module, or a hermit built-in agent)."""
    module = str(spec).partition(":")[0]
    return (base / module).expanduser().resolve() if module.endswith(".py") else None


def check_shippable(config: Config, *, judge_on_workers: bool = False) -> None:
    """The pipeline (and the judge, when the workers judge) must sit inside the config's folder, the folder the
    workers receive. Checked without importing anything."""
    base = Path(config.base).resolve()
    wanted = [("agent.name", _source_file(config.agent_name or "", base))]
    if judge_on_workers and config.judge_path:
        wanted.append(("judge.path", Path(config.judge_path).resolve()))
    for key, path in wanted:
        if path is None:
            continue
        if not path.is_file():
            raise InputError(f"{config.path.name}: {key}: file {path} does not exist")
        if not path.is_relative_to(base):
            raise InputError(
                f"{config.path.name}: {key}: {path} lies outside {base}, the folder the Ray executor "
                "ships to its workers"
            )


def ray_runtime_env(
    config: Config, *, judge_on_workers: bool = False, excludes: list[str] | None = None
) -> dict[str, Any]:
    """The runtime environment hermit-tui gives a Ray job: the config's folder as working_dir, minus run outputs
    (and minus the judge's file when the driver judges). Pass it to ``ray.init`` when you initialise Ray yourself."""
    base = Path(config.base).resolve()
    drop = list(EXCLUDES)
    for path in (config.output_dir, config.tree_dir):
        try:
            drop.append("/" + Path(path).resolve().relative_to(base).as_posix() + "/")
        except (ValueError, InputError):
            pass  # outside the folder: not shipped anyway
    judge = config.judge_path
    pipeline = _source_file(config.agent_name or "", base)
    if not judge_on_workers and judge is not None and Path(judge).resolve() != pipeline:
        try:
            drop.append("/" + Path(judge).resolve().relative_to(base).as_posix())
        except ValueError:
            pass
    drop += list(excludes or [])
    return {"working_dir": str(base), "excludes": sorted(set(drop), key=drop.index)}


def pack_adapter(folder: Path) -> tuple[str, bytes]:
    """A reproducible tar.gz of an exported adapter folder and its sha256 (times and owners zeroed)."""

    def normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for child in sorted(Path(folder).iterdir()):
            tar.add(child, arcname=child.name, filter=normalize)
    import gzip

    data = gzip.compress(raw.getvalue(), mtime=0)
    return hashlib.sha256(data).hexdigest(), data


# -- on the worker --------------------------------------------------------------------------------------------------

_worker_lock = threading.Lock()
#: (config, overrides, judge?) -> (pipeline, judge), or the error message of loading them
_loaded: dict[tuple[str, tuple[str, ...], bool], tuple[Pipeline, Judge | None] | str] = {}
_unpacked: dict[str, Path] = {}  # adapter digest -> its folder in this worker process
_workdir: list[str] = []  # the job's working_dir: the worker's cwd when it first ran an attempt


def _cleanup_unpacked() -> None:
    for path in _unpacked.values():
        shutil.rmtree(path, ignore_errors=True)


def _load_task(config_name: str, overrides: tuple[str, ...], with_judge: bool) -> tuple[Pipeline, Judge | None] | str:
    key = (config_name, overrides, with_judge)
    if key not in _loaded:
        if not _workdir:
            _workdir.append(os.getcwd())
        try:
            config = load_config(Path(_workdir[0]) / config_name, list(overrides))
            _loaded[key] = (load_pipeline(config), load_judge(config) if with_judge else None)
        except BaseException as exc:
            _loaded[key] = f"{type(exc).__name__}: {exc} (loading the task on the Ray worker)"
    return _loaded[key]


def _adapter_dir(digest: str, box: list[Any]) -> Path:
    with _worker_lock:
        path = _unpacked.get(digest)
        if path is None or not path.is_dir():
            import ray

            data = ray.get(box[0])
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError("the adapter archive does not match its digest")
            path = Path(tempfile.mkdtemp(prefix=f"hermit-tui-adapter-{digest[:12]}-"))
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                tar.extractall(path, filter="data")
            if not _unpacked:
                atexit.register(_cleanup_unpacked)
            _unpacked[digest] = path
    return path


def _error(message: str, tb: str | None, started: float) -> dict[str, Any]:
    return {"kind": "error", "message": message, "traceback": tb, "wall_s": time.perf_counter() - started}


def _run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One attempt on the worker: the pipeline's normalized output (or the whole record when judging here)."""
    started = time.perf_counter()
    loaded = _load_task(job["config"], job["overrides"], job["judge"])
    if isinstance(loaded, str):
        return _error(loaded, None, started)
    pipeline, judge = loaded
    adapter = None
    if job["adapter"] is not None:
        try:
            adapter = _adapter_dir(*job["adapter"])
        except Exception as exc:
            return _error(f"{type(exc).__name__}: cannot unpack the adapter on the Ray worker: {exc}", None, started)
    attempt = Attempt(job["label"], job["task"], job["repeat"], adapter)
    if inspect.iscoroutinefunction(pipeline):
        async_pipeline = pipeline
        pipeline = lambda task, adapter: asyncio.run(async_pipeline(task, adapter))  # noqa: E731
    if judge is not None:
        record, tb = run_attempt(pipeline, judge, attempt)
        return {
            "kind": "record",
            "record": record.model_dump(mode="json"),
            "traceback": tb,
            "messages": record._messages,
        }
    try:
        out = normalize_output(call_pipeline(pipeline, attempt))
    except PIPELINE_FAILURES as exc:
        return _error(f"{type(exc).__name__}: {exc}", traceback.format_exc()[-TRACEBACK_CHARS:], started)
    return {"kind": "ok", "output": output_payload(out)}


def _attempt_task(job: dict[str, Any]) -> Iterator[dict[str, Any] | None]:
    """The Ray task: first says it started (the timeout clock starts then), then gives the attempt's result."""
    yield None
    yield _run_job(job)


# -- on the driver --------------------------------------------------------------------------------------------------


def _lost_errors(ray: ModuleType) -> tuple[type[BaseException], ...]:
    ex = ray.exceptions
    names = ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError", "ObjectLostError", "OutOfMemoryError")
    return tuple(getattr(ex, n) for n in names if hasattr(ex, n))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class RayExecutor(Executor):
    """Each attempt a Ray task; the runner's concurrency limit bounds how many are in flight.

    ``address`` is a Ray cluster address (None: ``RAY_ADDRESS``, else a running local instance, else a new local
    cluster). When Ray is already initialised by the caller, its connection is used as it is (it must carry a
    working_dir: see ``ray_runtime_env``). ``task_cpus`` is the CPU share Ray books per attempt: small, so that
    attempts (mostly waiting on model APIs) are limited by the concurrency setting rather than by CPU count.
    """

    name = "ray"
    task_cpus = 0.05

    def __init__(
        self,
        pipeline: Pipeline | None,
        judge: Judge | None,
        *,
        concurrency: int,
        timeout_s: float | None,
        config: Config,
        address: str | None = None,
        judge_on_workers: bool = False,
        retry_lost: bool = False,
        task_cpus: float | None = None,
        excludes: list[str] | None = None,
    ):
        super().__init__(pipeline, judge, concurrency=concurrency, timeout_s=timeout_s)
        self.config, self.address = config, address
        self.judge_on_workers, self.retry_lost = judge_on_workers, retry_lost
        if task_cpus is not None:
            self.task_cpus = task_cpus
        self.excludes = list(excludes or [])
        self.ray_retries: Counter[str] = Counter()  # selector label -> attempts retried after a lost worker
        self.startup_s: float | None = None
        self._owns_ray = False
        self._inflight: set[Any] = set()
        self._shipped: dict[str, asyncio.Future[tuple[str, list[Any]]]] = {}

    @classmethod
    def for_launch(
        cls, config: Config, options: LaunchOptions, *, concurrency: int, timeout_s: float | None
    ) -> Executor:
        """The driver never imports the pipeline (the workers load it from the shipped folder) and judges unless
        ``judge_on_workers``; what the workers need must lie inside the config's folder. Without Ray installed:
        InputError saying how to install it."""
        require_ray()
        check_shippable(config, judge_on_workers=options.judge_on_workers)
        judge = None if options.judge_on_workers else load_judge(config, timeout_s)
        return cls(
            None,
            judge,
            concurrency=concurrency,
            timeout_s=timeout_s,
            config=config,
            address=options.ray_address,
            judge_on_workers=options.judge_on_workers,
            retry_lost=options.retry_lost,
        )

    def summary_keys(self, label: str) -> dict[str, Any]:
        """With --retry-lost-once: that it was on, and the attempts run once more after a lost worker."""
        return {"retry_lost": True, "ray_retries": self.ray_retries.get(label, 0)} if self.retry_lost else {}

    def _job(self, attempt: Attempt, adapter: tuple[str, list[Any]] | None) -> dict[str, Any]:
        return {
            "config": Path(self.config.path).name,
            "overrides": tuple(self.config.overrides),
            "judge": self.judge_on_workers,
            "label": attempt.label,
            "task": attempt.task,
            "repeat": attempt.repeat,
            "adapter": adapter,
        }

    async def start(self) -> None:
        ray = self._ray = require_ray()
        t0 = time.perf_counter()
        if ray.is_initialized():
            if not (ray.get_runtime_context().runtime_env or {}).get("working_dir"):
                raise InputError(
                    "Ray is already initialised without a working_dir: initialise it with "
                    "runtime_env=ray_runtime_env(config), or let hermit-tui connect (--ray-address)"
                )
        else:
            env = ray_runtime_env(self.config, judge_on_workers=self.judge_on_workers, excludes=self.excludes)
            try:
                ray.init(address=self.address, runtime_env=env, log_to_driver=False, logging_level=logging.WARNING)
            except (ConnectionError, ValueError, RuntimeError, ray.exceptions.RayError) as exc:
                where = self.address or os.environ.get("RAY_ADDRESS") or "a local Ray instance"
                raise InputError(f"--executor ray: cannot start Ray on {where}: {_first_line(exc)}") from None
            self._owns_ray = True
        self._remote = ray.remote(_attempt_task).options(
            num_cpus=self.task_cpus,
            max_retries=0,
            retry_exceptions=False,
            scheduling_strategy="SPREAD",
            name="hermit-tui-attempt",
        )
        self._loop = asyncio.get_running_loop()
        self._threads = ThreadPoolExecutor(max_workers=self.concurrency + 2, thread_name_prefix="hermit-tui-ray")
        self.startup_s = time.perf_counter() - t0

    async def _ship(self, adapter: Path | None) -> tuple[str, list[Any]] | None:
        """(digest, [object ref]) of an adapter folder, packed and put in the object store once per run."""
        if adapter is None:
            return None
        key = str(adapter)
        if key not in self._shipped:

            def put() -> tuple[str, list[Any]]:
                digest, data = pack_adapter(adapter)
                return digest, [self._ray.put(data)]  # boxed: a worker fetches it only when not yet unpacked

            self._shipped[key] = self._loop.run_in_executor(self._threads, put)
        return await self._shipped[key]

    async def _once(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run one task on the cluster; raises TimeoutError (after cancelling it) or Ray's error."""
        gen = self._remote.remote(job)
        self._inflight.add(gen)
        try:
            await gen.__anext__()  # the worker has started the attempt: the timeout counts from here
            try:
                ref = await (asyncio.wait_for(gen.__anext__(), self.timeout_s) if self.timeout_s else gen.__anext__())
            except TimeoutError:
                self._cancel(gen)
                raise TimeoutError from None
            result: dict[str, Any] = await ref
            return result
        except asyncio.CancelledError:  # a forced cancel of the run
            self._cancel(gen)
            raise
        finally:
            self._inflight.discard(gen)

    def _cancel(self, gen: Any) -> None:
        try:
            self._ray.cancel(gen, force=True)
        except Exception:
            pass  # already finished, or the cluster is gone

    async def run(self, attempt: Attempt) -> Outcome:
        started = time.perf_counter()
        try:
            job = self._job(attempt, await self._ship(attempt.adapter))
        except Exception as exc:
            return failed_record(
                attempt, f"{type(exc).__name__}: cannot ship the adapter to Ray: {exc}", time.perf_counter() - started
            ), None
        lost = _lost_errors(self._ray)
        while True:
            try:
                result = await self._once(job)
                break
            except TimeoutError:
                return failed_record(
                    attempt,
                    timeout_message(self.timeout_s) + "; its Ray task was cancelled",
                    time.perf_counter() - started,
                ), None
            except lost as exc:
                if self.retry_lost and not job.get("retried"):
                    job = {**job, "retried": True}
                    self.ray_retries[attempt.label] += 1
                    continue
                return failed_record(
                    attempt, f"{LOST_PREFIX}: {type(exc).__name__}: {_first_line(exc)}", time.perf_counter() - started
                ), None
            except self._ray.exceptions.TaskCancelledError:
                return failed_record(
                    attempt, "Cancelled: the attempt's Ray task was cancelled", time.perf_counter() - started
                ), None
            except (self._ray.exceptions.RayError, StopAsyncIteration) as exc:
                cause = getattr(exc, "cause", None) or exc
                return failed_record(
                    attempt, f"{type(cause).__name__}: {_first_line(cause)} (on Ray)", time.perf_counter() - started
                ), None
        if result["kind"] == "record":
            record = AttemptRecord.model_validate(result["record"])
            record._messages = result.get("messages")
            return record, result["traceback"]
        if result["kind"] == "error":
            tb = result["traceback"]
            return failed_record(attempt, result["message"], result["wall_s"], tb), tb
        progress = Progress()  # the driver's judge: a daemon thread bounded by the attempt timeout
        work, thread = in_daemon_thread(
            judge_printing,
            self.judge,
            attempt,
            RunOutput(**result["output"]),
            started,
            progress,
            "",
            name="hermit-tui-judge",
        )
        try:
            return await asyncio.wait_for(work, self.timeout_s) if self.timeout_s else await work
        except TimeoutError:
            if progress.output is None:
                return failed_record(attempt, timeout_message(self.timeout_s), time.perf_counter() - started), None
            return judge_failed(attempt, progress.output, judge_timeout_message(self.timeout_s), started), None

    def abandon(self) -> None:
        for gen in list(self._inflight):
            self._cancel(gen)

    async def close(self) -> None:
        if hasattr(self, "_threads"):
            self._threads.shutdown(wait=False, cancel_futures=True)
        if self._owns_ray:
            self._owns_ray = False
            self._ray.shutdown()
