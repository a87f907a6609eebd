"""What the app uses beside its class: the pacer that lets worker threads give way to the event loop, and helpers
run off the loop or before it (the resource tracker, a config's current evaluations, its protocol warnings)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hermit_tui.core.errors import InputError

BEAT_S = 0.01  # while evaluations are read, the event loop beats at this pace (see Pacer)


class Pacer:
    """Lets worker threads give way to the event loop. Threads share one interpreter lock: while a worker reads a
    million attempts or builds the per-task rows of 111,112 tasks, a repaint that needs 50 ms alone takes two or
    three times that. While a paced worker runs (:meth:`HermitApp.paced_worker`), the loop beats every BEAT_S; the
    workers call :meth:`pace` between steps (a few ms of work each) and wait, without the lock, while the last beat
    is older than one and a half beats (the loop is busy) - up to ``most_s``, so none starves. Waiting for three
    beats left a long step of the loop sharing the lock for its first 30-40 ms; an unpaced rows worker shared it
    for the whole step."""

    def __init__(self, most_s: float = 0.2):
        self.beat = time.monotonic()
        self.most_s = most_s
        self.active = False  # the beat runs (a paced worker is alive): pace() is a no-op otherwise

    def tick(self) -> None:
        self.beat = time.monotonic()

    def pace(self) -> None:
        if not self.active:
            return
        deadline = time.monotonic() + self.most_s
        while self.active and time.monotonic() - self.beat > 1.5 * BEAT_S and time.monotonic() < deadline:
            time.sleep(0.002)


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker now, its stderr on /dev/null. Worker processes start it on first
    use, passing ``sys.stderr.fileno()`` to the new process; inside the dashboard, Textual has replaced sys.stderr
    with a capture whose fileno() is -1, and the launch failed with "bad value(s) in fds_to_keep". Started once, it
    is reused."""
    import contextlib
    from multiprocessing import resource_tracker

    with open(os.devnull, "w") as null, contextlib.redirect_stderr(null):
        resource_tracker.ensure_running()


def current_evaluations(config) -> list:
    """The current (not archived) evaluations under the run's eval folder, readable ones only."""
    from hermit_tui.core.records.folders import list_evaluations

    try:
        return [e for e in list_evaluations(config.run_dir, include_archived=False) if e.summary is not None]
    except (InputError, OSError):
        return []


def protocol_warnings(config, taskset) -> list[str]:
    """The protocol checks every summary view carries (test overlap, answers visible to training, grants...)."""
    from hermit_tui.core.report.protocol import protocol_checks

    return [check.message for check in protocol_checks(config, taskset)]


def printed_outside_launches() -> Path:
    """Where the dashboard keeps what its process prints to file descriptors 1 and 2 outside a launch (the file of
    the last session; a launch's own goes to its evaluation's log folder: core.run.printed)."""
    cache = os.environ.get("XDG_CACHE_HOME")
    return (
        (Path(cache).expanduser() if cache else Path.home() / ".cache") / "hermit-tui" / "printed-outside-launches.txt"
    )
