"""Progress of ``hermit-tui eval`` when stderr is not a terminal (CI logs, ``nohup``, a pipe): plain lines.

One line per selector each time another quarter of its attempts is done, and at least every
:data:`EVERY_S` seconds while it runs (a timer thread: a slow attempt must not leave the log silent), e.g.::

    [progress] final: 30/120 attempts (25%), mean 0.633, errors 2, cost $0.1234 known + 3 unknown, ETA 4m10s

The mean is over the attempts done so far (failed ones score 0, as hermit counts them); the ETA extrapolates the
pace of this launch's attempts (attempts recorded by an earlier launch and resumed do not count towards the pace).
The clock is injectable and :meth:`PlainProgress.tick` can be called by hand, so tests need no real waiting.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from hermit_tui.core.present import fixed, known_cost_text
from hermit_tui.core.run import events as ev
from hermit_tui.core.safe import line as one_line

EVERY_S = 10.0
PREFIX = "[progress]"


def duration_text(seconds: float | None) -> str:
    """``12s``, ``3m05s``, ``2h07m``; ``?`` when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


@dataclass
class _Selector:
    total: int
    started: float  # clock time the selector started
    done: int = 0
    resumed: int = 0  # records of an earlier launch, shown before this launch's first attempt
    score_sum: float = 0.0
    errors: int = 0
    known_cost: float = 0.0
    unknown_cost: int = 0
    quarter: int = 0  # quarters reported so far
    last_line: float = 0.0  # clock time of this selector's last line
    finished: bool = False
    first_attempt: float | None = field(default=None)  # clock time this launch's first attempt started


class PlainProgress:
    """An event sink writing plain progress lines to ``stream``; a context manager running the timer thread.

    ``clock``: a monotonic clock (injectable for tests); ``every_s``: the longest silence per running selector;
    ``ticker``: start a thread that calls :meth:`tick` (tests call it themselves)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        clock: Callable[[], float] = time.monotonic,
        every_s: float = EVERY_S,
        ticker: bool = True,
    ):
        self.stream = stream
        self.clock = clock
        self.every_s = every_s
        self.ticker = ticker
        self.selectors: dict[str, _Selector] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._running = False  # an attempt of this launch has started

    # -- the sink ---------------------------------------------------------------------------------------------------
    def __call__(self, event: ev.Event) -> None:
        with self._lock:
            self._apply(event)

    def _apply(self, event: ev.Event) -> None:
        now = self.clock()
        if isinstance(event, ev.RunStarted):
            self._write(
                f"{PREFIX} {len(event.labels)} selector{'s' * (len(event.labels) != 1)} "
                f"({', '.join(event.labels)}) x {len(event.task_ids)} tasks x {event.repeats} repeats: "
                f"{event.total} attempts, {event.concurrency} at once"
            )
        elif isinstance(event, ev.SelectorStarted):
            self.selectors[event.label] = _Selector(total=event.total, started=now, last_line=now)
            if event.resolved and event.selector not in ("none",):
                self._write(f"{PREFIX} {event.selector} is {event.resolved}")
        elif isinstance(event, ev.AttemptStarted):
            sel = self.selectors.get(event.label)
            self._running = True
            if sel is not None and sel.first_attempt is None:
                sel.first_attempt = now
        elif isinstance(event, ev.AttemptFinished):
            sel = self.selectors.get(event.label)
            if sel is None:
                return
            rec = event.record
            sel.done += 1
            if not self._running:
                sel.resumed += 1
            score = rec.judge.score
            sel.score_sum += score if math.isfinite(score) else 0.0
            sel.errors += rec.status != "ok"
            if rec.cost_usd is None or not math.isfinite(rec.cost_usd):
                sel.unknown_cost += 1
            else:
                sel.known_cost += rec.cost_usd
            quarter = 4 * sel.done // sel.total if sel.total else 0
            if quarter > sel.quarter and self._running:
                sel.quarter = quarter
                self._line(event.label, sel, now)
        elif isinstance(event, ev.SelectorFinished):
            s = event.summary
            sel = self.selectors.get(event.label)
            if sel is not None:
                sel.finished = True
            self._write(
                f"{event.label}: {s.attempts}/{s.expected_attempts} attempts, mean {fixed(s.mean_score)}, "
                f"errors {s.errors}"
            )
        elif isinstance(event, (ev.RunLog, ev.CardUpdated)):
            self._write(event.message)
        elif isinstance(event, ev.RunFinished):
            for sel in self.selectors.values():
                sel.finished = True

    # -- the timer --------------------------------------------------------------------------------------------------
    def tick(self) -> None:
        """A line for each running selector that has been silent for ``every_s`` seconds."""
        with self._lock:
            now = self.clock()
            for label, sel in self.selectors.items():
                if not sel.finished and now - sel.last_line >= self.every_s:
                    self._line(label, sel, now)

    def __enter__(self) -> PlainProgress:
        if self.ticker:
            self._stop.clear()
            self._thread = threading.Thread(target=self._tick_loop, name="hermit-tui-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _tick_loop(self) -> None:
        while not self._stop.wait(min(1.0, self.every_s)):
            try:
                self.tick()
            except (OSError, ValueError):  # stderr closed: nothing more to say
                return

    # -- the lines --------------------------------------------------------------------------------------------------
    def line(self, label: str) -> str:
        """The progress line of one selector, as it would be written now."""
        with self._lock:
            return self._text(label, self.selectors[label], self.clock())

    def _text(self, label: str, sel: _Selector, now: float) -> str:
        pct = f" ({100 * sel.done // sel.total}%)" if sel.total else ""
        mean = fixed(sel.score_sum / sel.done) if sel.done else "—"
        cost = known_cost_text(sel.known_cost, sel.unknown_cost)
        fresh = sel.done - sel.resumed
        remaining = max(sel.total - sel.done, 0)
        if not remaining:
            eta = "0s"
        elif fresh > 0 and sel.first_attempt is not None and now > sel.first_attempt:
            eta = duration_text(remaining * (now - sel.first_attempt) / fresh)
        else:
            eta = "?"
        return (
            f"{PREFIX} {label}: {sel.done}/{sel.total} attempts{pct}, mean {mean}, errors {sel.errors}, "
            f"cost {cost}, ETA {eta}"
        )

    def _line(self, label: str, sel: _Selector, now: float) -> None:
        sel.last_line = now
        self._write(self._text(label, sel, now))

    def _write(self, text: str) -> None:
        self.stream.write(one_line(text) + "\n")  # a label or message from the data: control characters shown
        self.stream.flush()


__all__ = ["EVERY_S", "PREFIX", "PlainProgress", "duration_text"]
