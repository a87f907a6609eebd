"""Helpers of the hostile corpus: a time limit for in-process cases, and the workspace's file hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any


def interruptible_popen(command: list[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(command, **kwargs)`` with SIGINT at its default disposition in the child, as a command typed
    at a terminal has it, so that the test's SIGINT is the user's Ctrl-C wherever the suite was started.

    A signal this process ignores stays ignored across fork and exec: pytest started in the background of a
    non-interactive shell (``pytest &`` in a script, nohup) ignores SIGINT, and so would the command, until it installs
    a handler of its own; a pipeline hanging at import (before eval's handler) then never sees the interrupt and the
    case waits out its limit. A handler installed here is reset to the default by exec, so one is installed for the
    moment of the start."""
    assert threading.current_thread() is threading.main_thread(), "signal handlers are set in the main thread"
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(command, **kwargs)
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


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


FOLDER = "ad" + OSC0 + "\n# Injected heading"  # a directory selector: a title set, a newline and a heading
LINKED = "lnk|x[click](https:evil.example)"  # a directory selector: a table column and a link
IDS = [
    "plain",
    "id" + OSC52,
    "t|x[l](https://evil.example) www.evil.example",
    "[bold red]mk[/]",
    "=1+1",
    "-2+3",
    "@cmd",
    "rlo" + RLO,
]
FIELD = "field" + OSC52 + CLEAR
OUTPUT = "out" + OSC52 + CLEAR + C1_CSI + RLO + "\r fake line"
FEEDBACK = "fb" + CLEAR + "\x9b0m [bold red]markup[/]"
ERROR = "boom " + OSC0
MESSAGES = [{"role": "user", "content": "ask" + OSC0}, {"role": "assistant", "content": "say" + OSC52 + CLEAR}]


def hostile_cli(ws: Path, *argv: str, env: dict | None = None, timeout: float = 90):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", *argv],
        capture_output=True,
        cwd=ws,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def hostile_text_workspace(ws: Path) -> tuple[Path, bytes]:
    """A workspace whose every text is hostile (task ids and fields, outputs, an error, feedback, transcripts, two
    directory selectors' folder names), evaluated under none and both directories by the CLI; with the bytes
    ``eval`` wrote (its progress lines)."""
    import json
    import textwrap

    (ws / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": i, "question": FIELD, "note" + CLEAR: 1}) + "\n" for i in IDS)
    )
    (ws / "test.txt").write_text("".join(i + "\n" for i in IDS))
    (ws / "train.txt").write_text("")
    (ws / "pipe.py").write_text(
        textwrap.dedent(
            f"""
            def run(task, adapter=None):
                if task["id"] == "plain":
                    raise ValueError({ERROR!r})
                print({OSC0!r})
                return {{"output": {OUTPUT!r}, "cost_usd": 0.01, "messages": {MESSAGES!r}}}
            """
        )
    )
    (ws / "judge.py").write_text(f"def score(task, output):\n    return {{'score': 0.5, 'feedback': {FEEDBACK!r}}}\n")
    (ws / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 2}\njudge: {path: judge.py}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    for name in (FOLDER, LINKED):
        (ws / name).mkdir()
        (ws / name / "adapter.yaml").write_text("template: {id: x}\n")
    done = hostile_cli(
        ws, "eval", "--config", "run.yaml", "--adapter", "none", "--adapter", FOLDER, "--adapter", LINKED
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    return ws, done.stdout + done.stderr
