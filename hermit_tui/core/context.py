"""Which attempt the current thread is running, for pipelines that want to know (the demo's does).

hermit passes a pipeline only ``(task, adapter)``; hermit-tui runs repeats concurrently, so a pipeline that varies
by repeat can ask here. Outside hermit-tui ``current_repeat()`` returns None.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class AttemptContext:
    label: str
    task_id: str
    repeat: int


_CURRENT: ContextVar[AttemptContext | None] = ContextVar("hermit_tui_attempt", default=None)


def current_attempt() -> AttemptContext | None:
    return _CURRENT.get()


def current_repeat() -> int | None:
    ctx = _CURRENT.get()
    return ctx.repeat if ctx else None
