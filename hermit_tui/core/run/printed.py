"""What an attempt prints: kept per attempt, away from the terminal and from the command's stdout.

A pipeline or a judge may print (``print``, ``sys.stderr``, ``os.write(1, ...)``, a C library, a subprocess it
starts). Left alone, that text lands on the dashboard's screen or inside the JSON ``hermit-tui eval`` prints. Here:

- **Python-level, in this process** (threads executor; the judge under the processes executor): while a launch runs,
  ``sys.stdout`` and ``sys.stderr`` are a router (``routed``) that sends each write to the capture of the attempt
  whose context it runs in (a ``ContextVar``, set by ``capturing`` around the pipeline and the judge), else to the
  stream that was there before. Threads the pipeline starts itself do not carry the attempt's context: what they
  print goes to the stream that was there before (the dashboard swallows it; the CLI shows it on stderr).
- **In a worker process** (processes executor): the worker points its file descriptors 1 and 2 at a private file
  (``WorkerCapture``), so everything the attempt's process prints, fd-level and subprocesses included, is kept for
  the attempt that printed it (the worker runs one attempt at a time).
- **fd-level, in this process** (a C library, a subprocess started from a thread): file descriptors are
  process-wide, so with several attempts at once that output cannot be told apart per attempt. ``TerminalGuard``
  (used by the dashboard and ``hermit-tui eval``) keeps the terminal for the command's own output on duplicates of
  fds 1 and 2 and points the real fds 1 and 2 at a pipe; a thread copies what arrives to the launch's
  ``printed-outside-attempts.txt`` (``stray_output``), or to hermit-tui's cache folder between launches.

An attempt that printed something gets ``printed``, the path of ``<task>.r<repeat>.printed.txt`` in its evaluation's
log folder (``eval/<label>/logs/<start>/``), on its results.jsonl line (a hermit-tui key beside hermit's, like
``traceback``; hermit never reads results.jsonl back). Only the last ``PRINT_LIMIT`` bytes of each attempt are kept.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

from hermit_tui.core.context import safe_file_name

#: What is kept of each attempt's printed output: its last 64 KiB (the start is marked as cut).
PRINT_LIMIT = 64 * 1024
#: What is kept of the output printed outside any attempt during one launch: its first 1 MiB.
STRAY_LIMIT = 1024 * 1024
STRAY_NAME = "printed-outside-attempts.txt"


# -- one attempt's capture ------------------------------------------------------------------------------------------
class Tail:
    """The last ``limit`` characters written (thread-safe appends; ``text()`` says how much was cut)."""

    __slots__ = ("limit", "_parts", "_size", "_dropped", "_lock")

    def __init__(self, limit: int = PRINT_LIMIT):
        self.limit = limit
        self._parts: deque[str] = deque()
        self._size = 0
        self._dropped = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            self._parts.append(text)
            self._size += len(text)
            while self._size > self.limit and self._parts:
                first = self._parts[0]
                excess = self._size - self.limit
                if len(first) <= excess:
                    self._parts.popleft()
                    self._size -= len(first)
                    self._dropped += len(first)
                else:
                    self._parts[0] = first[excess:]
                    self._size -= excess
                    self._dropped += excess
        return len(text)

    def __bool__(self) -> bool:
        return self._size > 0 or self._dropped > 0

    def text(self) -> str:
        with self._lock:
            body = "".join(self._parts)
            dropped = self._dropped
        return (f"[... {dropped} earlier characters not kept]\n" if dropped else "") + body


_CAPTURE: ContextVar[Tail | None] = ContextVar("hermit_tui_printed", default=None)


@contextmanager
def capturing(tail: Tail) -> Iterator[Tail]:
    """Python-level writes to ``sys.stdout``/``sys.stderr`` in this context go to ``tail`` (while ``routed``)."""
    token = _CAPTURE.set(tail)
    try:
        yield tail
    finally:
        _CAPTURE.reset(token)


def printed_path(log_dir: Path, task_id: str, repeat: int) -> Path:
    return Path(log_dir) / f"{safe_file_name(task_id)}.r{int(repeat)}.printed.txt"


def save_printed(log_dir: Path | None, task_id: str, repeat: int, *texts: str) -> str | None:
    """Write what an attempt printed (the non-empty ``texts``, in order) to its file; its path, or None when it
    printed nothing, has no log folder, or the file cannot be written (never an attempt's failure)."""
    text = "".join(t for t in texts if t)
    if not text or log_dir is None:
        return None
    if len(text) > PRINT_LIMIT:
        text = f"[... {len(text) - PRINT_LIMIT} earlier characters not kept]\n" + text[-PRINT_LIMIT:]
    path = printed_path(log_dir, task_id, repeat)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="replace")
    except OSError:
        return None
    return str(path)


# -- the router on sys.stdout / sys.stderr ----------------------------------------------------------------------------
class _Router(io.TextIOBase):
    """A text stream that writes into the current attempt's capture, else into ``fallback``."""

    def __init__(self, fallback: TextIO):
        self.fallback = fallback

    def write(self, text: str) -> int:
        tail = _CAPTURE.get()
        if tail is not None:
            return tail.write(text)
        return self.fallback.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _CAPTURE.get() is None:
            try:
                self.fallback.flush()
            except (OSError, ValueError):
                pass

    def isatty(self) -> bool:
        return False if _CAPTURE.get() is not None else bool(getattr(self.fallback, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self.fallback.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.fallback, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.fallback, "errors", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fallback, name)


_route_lock = threading.Lock()
_route_users = 0
_routers: tuple[_Router, _Router] | None = None


@contextmanager
def routed() -> Iterator[None]:
    """While inside (launches may nest or overlap), ``sys.stdout`` and ``sys.stderr`` are routers. On leaving, the
    streams are put back unless someone else replaced them meanwhile."""
    global _route_users, _routers
    with _route_lock:
        _route_users += 1
        if _route_users == 1:
            _routers = (_Router(sys.stdout), _Router(sys.stderr))
            sys.stdout, sys.stderr = _routers
    try:
        yield
    finally:
        with _route_lock:
            _route_users -= 1
            if _route_users == 0 and _routers is not None:
                out, err = _routers
                if sys.stdout is out:
                    sys.stdout = out.fallback
                if sys.stderr is err:
                    sys.stderr = err.fallback
                _routers = None


# -- a worker process's capture -------------------------------------------------------------------------------------
class WorkerCapture:
    """A worker process's file descriptors 1 and 2 (and so ``sys.stdout``, ``sys.stderr``, every subprocess it
    starts) point at a private file, emptied before each attempt and read after it."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="hermit-tui-printed-", suffix=".txt")
        os.close(fd)
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND)  # appends land at the end even after a truncate
        os.unlink(path)
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        os.dup2(self.fd, 1)
        os.dup2(self.fd, 2)
        for stream in (sys.stdout, sys.stderr):
            try:  # each line reaches the file as it is printed, in the order printed across both streams
                stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
            except (AttributeError, ValueError):
                pass

    def start(self) -> None:
        """A new attempt: what was printed since the last one ended (loading the pipeline) is kept for it."""

    def take(self) -> str:
        """What was printed since the last ``take`` (its last PRINT_LIMIT bytes), and empty the file."""
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        try:
            size = os.fstat(self.fd).st_size
            if not size:
                return ""
            start = max(0, size - PRINT_LIMIT)
            data = os.pread(self.fd, size - start, start)
            os.ftruncate(self.fd, 0)
        except OSError:
            return ""
        text = data.decode("utf-8", errors="replace")
        return (f"[... {start} earlier bytes not kept]\n" if start else "") + text


def _on_fd(stream: Any, fd: int) -> bool:
    try:
        return bool(stream.fileno() == fd)
    except (AttributeError, OSError, ValueError):
        return False


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _flush(stream: Any) -> None:
    try:
        if stream is not None:
            stream.flush()
    except (OSError, ValueError, AttributeError):
        pass


# -- this process's file descriptors 1 and 2 --------------------------------------------------------------------------
class _StraySink:
    """Copies what arrives on the pipe behind fds 1 and 2 to the current target file (bounded per target)."""

    def __init__(self, read_fd: int, default: Path | int | None):
        self.read_fd = read_fd
        self.lock = threading.Lock()
        self.default = default
        self.path: Path | int | None = None
        self.fh: Any = None
        self.written = self.dropped = 0
        self.total = 0  # bytes that arrived while the current target was set
        self._open(default)
        self.thread = threading.Thread(target=self._pump, name="hermit-tui-printed", daemon=True)
        self.thread.start()

    def _open(self, path: Path | int | None) -> None:
        self.path, self.fh, self.written, self.dropped, self.total = path, None, 0, 0, 0

    def _close(self) -> None:
        if self.fh is not None:
            if self.dropped:
                try:
                    self.fh.write(f"\n[... {self.dropped} further bytes not kept]\n".encode())
                except OSError:
                    pass
            try:
                self.fh.close()
            except OSError:
                pass
        self.fh = None

    def retarget(self, path: Path | int | None) -> tuple[Path | int | None, int]:
        """Send what arrives from now on to ``path`` (None: the default); the previous target and its byte count."""
        with self.lock:
            previous = (self.path, self.total)
            self._close()
            self._open(path if path is not None else self.default)
        return previous

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.read_fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.total += len(data)
                if self.path is None:
                    continue
                if isinstance(self.path, int):  # the terminal's stderr (the CLI between launches)
                    try:
                        _write_all(self.path, data)
                    except OSError:
                        pass
                    continue
                room = STRAY_LIMIT - self.written
                if room <= 0:
                    self.dropped += len(data)
                    continue
                try:
                    if self.fh is None:
                        self.path.parent.mkdir(parents=True, exist_ok=True)
                        self.fh = open(self.path, "ab", buffering=0)
                    self.fh.write(data[:room])
                except OSError:
                    self.path = None  # cannot be written: counted, not kept
                    continue
                self.written += min(room, len(data))
                self.dropped += max(0, len(data) - room)


_sink: _StraySink | None = None


class TerminalGuard:
    """The terminal kept for this command's own output, and fds 1 and 2 given to a pipe read into files.

    On entry, ``terminal_out`` and ``terminal_err`` are text streams on duplicates of the original fds 1 and 2 (the
    command's own stdout, e.g. the JSON of ``hermit-tui eval``, and its progress and errors); ``sys.__stdout__`` and
    ``sys.__stderr__`` are these too (Textual draws on ``sys.__stderr__`` and reads the terminal's size from
    ``sys.__stdout__``), and so are ``sys.stdout`` and ``sys.stderr``. fds 1 and 2 are the pipe's write end:
    whatever is written to them (a C library, a subprocess, a worker process started from now on) never reaches the
    terminal's stdout: inside a launch (``stray_output``) it goes to the launch's file, outside to ``default`` (None:
    the terminal's stderr). On exit everything is put back. Where fds 1 and 2 are not real files (a test's captured
    streams) nothing is done (``active`` is False)."""

    def __init__(self, default: Path | None = None):
        self.default = default  # where fd-level output goes outside a launch; None: the terminal's stderr
        self.active = False

    def __enter__(self) -> TerminalGuard:
        global _sink
        self.saved = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
        self.terminal_out: TextIO = sys.stdout
        self.terminal_err: TextIO = sys.stderr
        if _sink is not None:
            return self  # already guarded (nested): nothing to do
        try:
            sys.__stdout__.fileno()  # type: ignore[union-attr]
            sys.__stderr__.fileno()  # type: ignore[union-attr]
            _flush(sys.stdout)
            _flush(sys.stderr)
            self.dup_out, self.dup_err = os.dup(1), os.dup(2)
        except (AttributeError, OSError, ValueError):
            return self
        read_fd, write_fd = os.pipe()
        os.set_inheritable(self.dup_out, False)
        os.set_inheritable(self.dup_err, False)
        enc = getattr(sys.__stdout__, "encoding", None) or "utf-8"
        real_out = open(self.dup_out, "w", encoding=enc, errors="backslashreplace", closefd=False, buffering=1)
        real_err = open(
            self.dup_err,
            "w",
            encoding=getattr(sys.__stderr__, "encoding", None) or enc,
            errors="backslashreplace",
            closefd=False,
            buffering=1,
        )
        os.dup2(write_fd, 1)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        sys.__stdout__, sys.__stderr__ = real_out, real_err  # type: ignore[misc]
        # sys.stdout and sys.stderr move to the kept terminal only when they were fds 1 and 2 (a caller that
        # replaced them, a test capturing them, keeps its own)
        self.terminal_out = real_out if _on_fd(sys.stdout, 1) else sys.stdout
        self.terminal_err = real_err if _on_fd(sys.stderr, 2) else sys.stderr
        sys.stdout, sys.stderr = self.terminal_out, self.terminal_err
        _sink = _StraySink(read_fd, self.default if self.default is not None else self.dup_err)
        self.read_fd = read_fd
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        global _sink
        if not self.active:
            return
        _flush(self.terminal_out)
        _flush(self.terminal_err)
        os.dup2(self.dup_out, 1)  # the pipe's last write ends in this process are gone: the pump sees its end
        os.dup2(self.dup_err, 2)
        sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__ = self.saved  # type: ignore[misc]
        sink, _sink = _sink, None
        if sink is not None:
            sink.thread.join(0.5)  # a subprocess still holding the pipe keeps it open: do not wait for it
            with sink.lock:
                sink._close()
        for fd in (self.dup_out, self.dup_err):
            os.close(fd)
        self.active = False


@contextmanager
def stray_output(path: Path) -> Iterator[list[int]]:
    """While inside, fd-level output of this process (under a ``TerminalGuard``) goes to ``path``; the list yielded
    gets the number of bytes that arrived, on exit. Without a guard nothing is redirected (0 bytes)."""
    sink = _sink
    count = [0]
    if sink is None:
        yield count
        return
    _flush(sys.stdout)
    _flush(sys.stderr)
    previous, _ = sink.retarget(path)
    try:
        yield count
    finally:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            _flush(stream)
        # what is already in the pipe belongs to this launch: let the pump copy it before switching back
        _drain(sink)
        _, count[0] = sink.retarget(previous if previous != sink.default else None)


def _drain(sink: _StraySink, wait_s: float = 0.2) -> None:
    """Give the pump a moment to read what is in the pipe (without a reliable way to ask how much is left)."""
    import time

    deadline = time.monotonic() + wait_s
    last = -1
    while time.monotonic() < deadline:
        with sink.lock:
            now = sink.total
        if now == last:
            return
        last = now
        time.sleep(0.02)


__all__ = [
    "PRINT_LIMIT",
    "STRAY_LIMIT",
    "STRAY_NAME",
    "Tail",
    "TerminalGuard",
    "WorkerCapture",
    "capturing",
    "printed_path",
    "routed",
    "save_printed",
    "stray_output",
]
