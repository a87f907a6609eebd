"""Loading the task's pipeline and judge, and reading what they return, as hermit-harness does.

``agent.name`` is ``file.py:function``, ``file.py:Class`` (built with ``(params, base)``, then ``.run(task,
adapter)``), ``package.module:function`` / ``:Class``, or one of hermit-harness's built-in agents (loaded through
hermit when it is installed). A function gets ``params=`` / ``base=`` keywords when its signature names them.

The user's modules are imported (and an agent class built) in a helper daemon thread, bounded by the attempt
timeout: a module that hangs at import, calls ``sys.exit``, raises ``KeyboardInterrupt`` or forks is one line of
bad input (InputError), never the command's exit code, a traceback or a hang.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import inspect
import math
import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from hermit_tui.core.errors import InputError
from hermit_tui.core.outputs import RunOutput
from hermit_tui.core.workspace.config import Config

BUILTIN_AGENTS = ("react", "codex", "claude-code", "cli")
RUN_OUTPUT_FIELDS = tuple(f.name for f in dataclasses.fields(RunOutput))
#: What the user's code may raise at import (or when its agent class is built) that is its failure, not ours.
IMPORT_FAILURES = (Exception, SystemExit, KeyboardInterrupt, GeneratorExit)
T = TypeVar("T")
#: The largest magnitude of a number a pipeline or a judge may report (a cost, a wall time, a score): far beyond any
#: real one, and small enough that sums (and sums of squares) over the most attempts a launch runs stay finite. A
#: larger one is that attempt's error, as a NaN is: hermit-tui never writes a sum that overflowed to infinity.
LARGEST_REPORTED = 1e12


def leave_if_forked(pid: int) -> None:
    """The user's code forked and its child returned into hermit-tui: the child ends here, at once (no clean-up, no
    flushing of buffers it shares with its parent), so that it never runs (or waits in) the rest of the command."""
    if os.getpid() != pid:
        os._exit(0)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min"


def bounded(load: Callable[[], T], key: str, what: str, timeout_s: float | None) -> T:
    """``load()`` in a daemon thread, waited for up to ``timeout_s`` (None: no limit). Past the limit it is
    InputError (the thread is abandoned: a daemon, it never delays the exit); whatever ``load`` raises (SystemExit
    and KeyboardInterrupt included) is InputError too, one line naming ``key``. A real Ctrl-C reaches the waiting
    (main) thread as KeyboardInterrupt, as before."""
    box: list[Any] = []
    pid = os.getpid()

    def body() -> None:
        try:
            box.append((True, load()))
        except InputError as exc:
            box.append((False, exc))
        except IMPORT_FAILURES as exc:
            box.append((False, InputError(f"{key}: {what} failed: {_described(exc)}")))
        finally:
            leave_if_forked(pid)

    thread = threading.Thread(target=body, name="hermit-tui-import", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive() or not box:
        limit = f"agent.timeout_min ({_minutes(timeout_s)})" if timeout_s else "its time"
        raise InputError(f"{key}: {what} did not finish within {limit}")
    ok, value = box[0]
    if not ok:
        raise value
    result: T = value
    return result


def _described(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "(its message cannot be shown)"
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _import_source(spec: str, base: Path, key: str) -> Any:
    module_part, sep, name = spec.partition(":")
    if not sep or not name or not module_part:
        raise InputError(f"{key}: expected 'file.py:name' or 'module:name', got {spec!r}")
    if module_part.endswith(".py"):
        path = (Path(base) / module_part).expanduser().resolve()
        if not path.is_file():
            if path.exists():
                raise InputError(f"{key}: {path} is not a regular file")
            raise InputError(f"{key}: file {path} does not exist")
        digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
        mod_name = f"_hermit_tui_task_{path.stem}_{digest}"
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        if module_spec is None or module_spec.loader is None:
            raise InputError(f"{key}: cannot import {path}")
        module = importlib.util.module_from_spec(module_spec)
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))  # the task's own helper modules sit beside it
        sys.modules[mod_name] = module
        try:
            module_spec.loader.exec_module(module)
        except IMPORT_FAILURES as exc:  # the user's code failed at import: say where, no traceback
            sys.modules.pop(mod_name, None)
            raise InputError(f"{key}: importing {path} failed: {_described(exc)}") from None
    else:
        try:
            module = importlib.import_module(module_part)
        except IMPORT_FAILURES as exc:
            raise InputError(f"{key}: cannot import module {module_part!r}: {_described(exc)}") from None
    if not hasattr(module, name):
        raise InputError(f"{key}: {module_part} has no {name!r}")
    return getattr(module, name)


def load_function(spec: str, base: Path, key: str) -> Callable[..., Any]:
    """A function named ``file.py:name`` (relative to ``base``) or ``module:name``; InputError naming ``key`` when
    it cannot be imported or is not callable."""
    fn = _import_source(spec, base, key)
    if not callable(fn):
        raise InputError(f"{key}: {spec!r} is not a function")
    return fn  # type: ignore[no-any-return]


def _bind(fn: Callable[..., Any], params: dict[str, Any], base: Path) -> Callable[..., Any]:
    try:
        wanted = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    extra: dict[str, Any] = {}
    if "params" in wanted:
        extra["params"] = dict(params)
    if "base" in wanted:
        extra["base"] = Path(base)
    return functools.partial(fn, **extra) if extra else fn


#: ``run(task, adapter)``: a pipeline (hermit's agent), called with a task row and the adapter folder (None: none).
Pipeline = Callable[[dict[str, Any], Path | None], Any]
#: ``score(task, output)``: a judge, called with a task row and the pipeline's output.
Judge = Callable[[dict[str, Any], Any], Any]


def load_pipeline(config: Config, timeout_s: float | None = None) -> Pipeline:
    """The ``run(task, adapter)`` callable that ``agent.name`` names, imported (and built) within ``timeout_s``."""
    what = f"loading the pipeline {config.agent_name}"
    return bounded(lambda: _load_pipeline(config), f"{config.path.name}: agent.name", what, timeout_s)


def _load_pipeline(config: Config) -> Pipeline:
    name = config.agent_name
    if not name:
        raise InputError(f"{config.path.name}: agent.name is required")
    params = dict(config.agent_params or {})
    if name in BUILTIN_AGENTS:
        try:
            from hermit.agents.base import load_agent
        except ImportError:
            raise InputError(
                f"{config.path.name}: agent.name {name!r} is a hermit-harness built-in agent: "
                "install hermit-harness (pip install hermit-harness) to use it"
            ) from None
        try:
            run: Pipeline = load_agent(name, params, config.base).run
            return run
        except IMPORT_FAILURES as exc:
            raise InputError(f"{config.path.name}: agent.name {name!r}: {_described(exc)}") from None
    target = _import_source(str(name), config.base, f"{config.path.name}: agent.name")
    if inspect.isclass(target):
        try:
            agent: Any = target(params, config.base)  # type: ignore[call-arg]  # an agent class: (params, base)
        except IMPORT_FAILURES as exc:
            raise InputError(
                f"{config.path.name}: agent.name {name}: building the agent failed: {_described(exc)}"
            ) from None
        if not callable(getattr(agent, "run", None)):
            raise InputError(f"{config.path.name}: agent.name {name}: the class has no run(task, adapter) method")
        method: Pipeline = agent.run
        return method
    if not callable(target):
        raise InputError(f"{config.path.name}: agent.name {name} is not callable")
    return _bind(target, params, config.base)


def load_judge(config: Config, timeout_s: float | None = None) -> Judge:
    """The ``score(task, output)`` callable of ``judge.path`` + ``judge.name``, imported within ``timeout_s``."""
    what = f"loading the judge {config.judge_path}"
    return bounded(lambda: _load_judge(config), f"{config.path.name}: judge", what, timeout_s)


def _load_judge(config: Config) -> Judge:
    if not config.judge_path:
        raise InputError(f"{config.path.name}: judge.path is required")
    spec = f"{config.judge_path}:{config.judge_name or 'score'}"
    target = _import_source(spec, config.base, f"{config.path.name}: judge")
    if not callable(target):
        raise InputError(f"{config.path.name}: judge {spec} is not callable")
    judge: Judge = target
    return judge


def normalize_output(value: Any) -> RunOutput:
    """hermit's RunOutput, this package's RunOutput, or a mapping with ``output``; anything else is a TypeError."""
    if isinstance(value, RunOutput):
        return value
    if type(value).__name__ == "RunOutput" and dataclasses.is_dataclass(value) and hasattr(value, "output"):
        return RunOutput(**{k: getattr(value, k) for k in RUN_OUTPUT_FIELDS if hasattr(value, k)})
    if isinstance(value, Mapping) and "output" in value:
        unknown = [k for k in value if k not in RUN_OUTPUT_FIELDS]
        known = {k: value[k] for k in RUN_OUTPUT_FIELDS if k in value}
        if unknown:
            known["extra"] = {**dict(known.get("extra") or {}), **{k: value[k] for k in unknown}}
        return RunOutput(**known)
    raise TypeError(f"the pipeline returned {type(value).__name__}, not RunOutput (or a mapping with 'output')")


def normalize_judge(value: Any) -> tuple[float, str, dict[str, Any]]:
    """(score, feedback, extra) of what a judge returned: a number, a mapping with ``score``, or an object with
    ``.score``. A score that is not a finite number raises ValueError (recorded as a judge_error)."""
    if isinstance(value, Mapping):
        if "score" not in value:
            raise ValueError(f"the judge returned a mapping without 'score' (keys: {', '.join(map(str, value))})")
        raw, feedback = value["score"], value.get("feedback", "")
        extra = {k: v for k, v in value.items() if k not in ("score", "feedback")}  # nested as hermit nests them
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        raw, feedback, extra = value, "", {}
    elif hasattr(value, "score") and not isinstance(value, (str, bytes)):
        raw, feedback = value.score, getattr(value, "feedback", "")
        extra = dict(getattr(value, "extra", None) or {})
    else:
        raise TypeError(f"the judge returned {type(value).__name__}, not a score")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise TypeError(f"the judge's score is {type(raw).__name__} {str(raw)[:40]!r}, not a number")
    score = float(raw)
    if not math.isfinite(score):
        raise ValueError(f"the judge's score is {score}, not a finite number")
    if abs(score) > LARGEST_REPORTED:
        raise ValueError(
            f"the judge's score is {score:g}, beyond ±{LARGEST_REPORTED:g} (a sum of such scores overflows)"
        )
    try:
        text = "" if feedback is None else str(feedback)
    except Exception as exc:
        raise TypeError(f"the judge's feedback cannot be turned into text ({type(exc).__name__})") from None
    try:
        extra = dict(extra)
    except Exception as exc:
        raise TypeError(f"the judge's extra is not a mapping ({type(exc).__name__})") from None
    return score, text, extra
