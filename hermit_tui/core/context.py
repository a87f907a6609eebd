"""Which attempt the current thread is running, for pipelines that want to know (the demo's does).

hermit passes a pipeline only ``(task, adapter)``; hermit-tui runs repeats concurrently, so a pipeline that varies
by repeat can ask here. Outside hermit-tui ``current_repeat()`` and ``attempt_log_path()`` return None.

``attempt_log_path()`` is where the attempt may write its log: inside the evaluation's folder
(``eval/<label>/logs/<start of the evaluation>/``), named from the task id made safe for a file name, so that a task
id holding ``../`` or ``/`` can never place a file outside it. Use :func:`safe_file_name` for your own names.
"""

from __future__ import annotations

import hashlib
import re
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SUFFIX = re.compile(r"[A-Za-z0-9._-]{0,32}")


@dataclass(frozen=True)
class AttemptContext:
    label: str
    task_id: str
    repeat: int
    log_dir: Path | None = None


_CURRENT: ContextVar[AttemptContext | None] = ContextVar("hermit_tui_attempt", default=None)


def current_attempt() -> AttemptContext | None:
    return _CURRENT.get()


def current_repeat() -> int | None:
    ctx = _CURRENT.get()
    return ctx.repeat if ctx else None


def safe_file_name(text: str, *, limit: int = 80) -> str:
    """``text`` as one file name: only letters, digits, ``.``, ``_`` and ``-``, no leading dot, at most ``limit``
    characters; when anything had to change, a short hash of the original keeps distinct texts distinct."""
    text = str(text)
    cleaned = _UNSAFE.sub("_", text).lstrip(".")[:limit]
    if cleaned != text or not cleaned:
        cleaned = f"{cleaned or '_'}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"
    return cleaned


def attempt_log_path(suffix: str = ".log") -> Path | None:
    """A file path for the current attempt's log (its folder is created), or None outside a hermit-tui attempt.
    ``suffix`` may hold only letters, digits, ``.``, ``_`` and ``-``."""
    ctx = _CURRENT.get()
    if ctx is None or ctx.log_dir is None:
        return None
    if not _SUFFIX.fullmatch(suffix):
        raise ValueError(f"log suffix {suffix!r}: only letters, digits, '.', '_' and '-' (at most 32)")
    folder = Path(ctx.log_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{safe_file_name(ctx.task_id)}.r{int(ctx.repeat)}{suffix}"
