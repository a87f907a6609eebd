"""What the app uses beside its class: the pacer that lets worker threads give way to the event loop, the guard that
keeps the data's control characters from the terminal, and helpers run off the loop or before it (the resource
tracker, a config's current evaluations, its protocol warnings)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hermit_tui.core.errors import InputError
from hermit_tui.core.safe import ACTED_ON

_GUARDED = "_hermit_tui_guarded"

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


def guard_terminal() -> None:
    """Make every line Textual writes carry none of the data's control characters.

    Everything a Textual app draws reaches the terminal through ``Strip.render`` (the compositor joins strips and
    its own cursor moves). Text from the data (a task id, an output, an error, a transcript) is shown with its
    control characters as visible escapes where the dashboard puts it on screen (``core.safe``); this is the net
    under all of them: a text segment holding ESC, C1, BEL, a bidi override or another character a terminal acts
    on has them removed before the strip is turned into terminal sequences, so an OSC 52 clipboard write, a title
    set or ``ESC[2J`` that reached a widget some other way is never executed. The characters removed take no cell
    (Rich measures them as zero width), so the layout stays as measured. Textual's own styles and cursor moves are
    not text segments and pass as they are. Idempotent."""
    from rich.segment import Segment
    from textual.strip import Strip

    if getattr(Strip, _GUARDED, False):
        return
    render = Strip.render
    search = ACTED_ON.search

    def guarded_render(self: Strip, console) -> str:
        if self._render_cache is None and any(control is None and search(text) for text, _, control in self._segments):
            self._segments = [
                Segment(ACTED_ON.sub("", text), style, control) if control is None else Segment(text, style, control)
                for text, style, control in self._segments
            ]
        return render(self, console)

    Strip.render = guarded_render  # type: ignore[method-assign]
    setattr(Strip, _GUARDED, True)


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
