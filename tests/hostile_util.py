"""Helpers of the hostile corpus: a time limit for in-process cases, and the workspace's file hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import stat
import threading
from pathlib import Path


class TimeLimitExceeded(Exception):
    """A hostile case ran past its time limit: something hangs."""


@contextlib.contextmanager
def time_limit(seconds: float, what: str = "the case"):
    """Raise TimeLimitExceeded in the main thread after ``seconds`` (SIGALRM also interrupts a blocking open() or
    read(), e.g. of a FIFO). Outside the main thread (or without SIGALRM) it only runs the body."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise TimeLimitExceeded(f"{what} ran longer than {seconds:g} s")

    import time

    outer = signal.getitimer(signal.ITIMER_REAL)[0]  # an enclosing limit goes on after this one
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds if not outer else min(seconds, outer))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))


def snapshot(ws: Path, exclude: tuple[str, ...] = ()) -> dict[str, str]:
    """Every regular file under ``ws`` and its content hash (git internals included), plus the kind of every
    special file (FIFO, socket, device link). Paths under ``exclude`` (relative, posix) are left out."""
    out = {}
    for path in sorted(Path(ws).rglob("*")):
        rel = path.relative_to(ws).as_posix()
        if "__pycache__" in path.parts or any(rel == e or rel.startswith(e.rstrip("/") + "/") for e in exclude):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() + f" {stat.S_IMODE(st.st_mode):o}"
        elif stat.S_ISLNK(st.st_mode):
            out[rel] = "link " + os.readlink(path)
        elif not stat.S_ISDIR(st.st_mode):
            out[rel] = f"special {stat.S_IFMT(st.st_mode):o}"
    return out


# -- text that a terminal would act on (issue 29) ----------------------------------------------------------------------
OSC52 = "\x1b]52;c;ZXZpbA==\x07"  # write "evil" to the clipboard
OSC0 = "\x1b]0;PWNED\x07"  # set the window title
CLEAR = "\x1b[2J"  # clear the screen
C1_CSI = "\x9b2J"  # the same, with the one-byte C1 introducer
RLO = "\u202e"  # right-to-left override
HOSTILE_TEXTS = (OSC52, OSC0, CLEAR, C1_CSI, RLO)
# What a terminal acts on rather than shows: C0 but tab and newline, DEL, C1, bidirectional controls, separators.
_ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def acted_on(data: bytes | str) -> list[str]:
    """The characters of ``data`` (bytes decoded as UTF-8) a terminal would act on, each with some context."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [repr(text[max(m.start() - 12, 0) : m.end() + 12]) for m in _ACTED_ON.finditer(text)]
