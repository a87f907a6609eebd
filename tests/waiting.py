"""Waiting for the state a test asserts, never for a fixed time: a loaded machine (two shared cores, several
workers) makes any fixed pause too short one day, and too long every other day.

- ``await wait_for(pilot, predicate, what=...)``: a Pilot test polls the app with ``pilot.pause()`` (which lets the
  app process what is pending, then waits for the process to go idle) until ``predicate()`` is true.
- ``workers_done(app, group)``: the app's workers (of a group, by its prefix) have all finished.
- ``wait_until(predicate, what=...)``: the same for a subprocess, a tmux pane, a file on disk (no event loop).

Each fails with one message naming what it waited for and for how long. The timeouts are generous on purpose: they
are only reached when the awaited state never comes, and a test that passes never waits for them."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

from textual.css.query import NoMatches

T = TypeVar("T")

#: How long a test waits for a state before it fails (a loaded machine is slow, a broken app never gets there).
TIMEOUT = 60.0


def _describe(predicate: Callable[[], object]) -> str:
    try:
        return " ".join(inspect.getsource(predicate).split())
    except (OSError, TypeError):
        return repr(predicate)


def _check(predicate: Callable[[], T | None]) -> T | None:
    """The predicate's value; None while the widgets it reads are not composed yet (a screen still mounting)."""
    try:
        return predicate()
    except NoMatches:
        return None


async def wait_for(
    pilot: Any, predicate: Callable[[], T | None], timeout: float = TIMEOUT, what: str | None = None
) -> T:
    """Let the app run until ``predicate()`` is truthy; its value (a screen, say: ``lambda: app.screen if
    isinstance(app.screen, S) else None`` waits for one and gives it typed). Fails naming ``what`` (or the
    predicate's source) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := _check(predicate)):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what or _describe(predicate)}: it never came")
        await pilot.pause()
    return value


def workers_done(app: Any, group: str = "") -> bool:
    """Every worker of ``app`` whose group starts with ``group`` has finished (succeeded, failed or cancelled)."""
    return all(worker.is_finished for worker in list(app.workers) if worker.group.startswith(group))


async def settled(pilot: Any, group: str = "", timeout: float = TIMEOUT) -> None:
    """The app's workers of ``group`` have finished and the app has processed what they posted."""
    await pilot.pause()
    await wait_for(pilot, lambda: workers_done(pilot.app, group), timeout, what=f"the workers {group!r}* to finish")
    await pilot.pause()


def wait_until(
    predicate: Callable[[], T | None], timeout: float = TIMEOUT, what: str | None = None, interval: float = 0.05
) -> T:
    """Poll ``predicate()`` (a file, a process, a pane: no event loop) until it is truthy; its value. Fails naming
    ``what`` (or the predicate's source) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what or _describe(predicate)}: it never came")
        time.sleep(interval)
    return value
