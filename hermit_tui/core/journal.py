"""One selector's evaluation folder while a launch writes it: the lock, results.jsonl, and summary.json.

Nothing finished is ever lost: each attempt's line is appended and flushed as it finishes (fsync in batches), a
write that fails (disk full) is rolled back to the last whole line and stops the run, the summary is rewritten
every few seconds while the run goes on (``complete: false``), and a lock file names the process that writes the
folder, so that a second process refuses instead of interleaving lines.
"""
from __future__ import annotations

import json
import os
import socket
import time
from datetime import datetime, timezone
from pathlib import Path

from hermit_tui.core.errors import InputError
from hermit_tui.core.evalstore import RESULTS
from hermit_tui.core.records import AttemptRecord, write_atomic
from hermit_tui.core.selectors import Selector
from hermit_tui.core.transcripts import TranscriptLog

LOCK = ".hermit-tui.lock"
FSYNC_EVERY_S = 0.5


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _process_start(pid: int) -> str | None:
    """The kernel's start time of a process (guards against a reused pid), or None where /proc is missing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def _alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return start is None or _process_start(pid) in (None, start)


class FolderLock:
    """``eval/<label>/.hermit-tui.lock``: pid, host, start time. A lock left by a dead process is taken over."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK
        self.held = False
        self.took_over: dict | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": now_iso(),
              "process_start": _process_start(os.getpid())}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    other = json.loads(self.path.read_text() or "{}")
                except (OSError, ValueError):
                    other = {}
                pid = other.get("pid")
                same_host = other.get("host") == me["host"]
                if isinstance(pid, int) and (not same_host or _alive(pid, other.get("process_start"))):
                    where = "" if same_host else f" on {other.get('host')}"
                    raise InputError(f"{self.path.parent}: already being evaluated by process {pid}{where} "
                                     f"(since {other.get('started_at', '?')}); wait for it to finish or stop it")
                self.took_over = other
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            self.held = True
            return
        raise InputError(f"{self.path}: could not take the lock")

    def release(self) -> None:
        if self.held:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            self.held = False


class WriteFailed(Exception):
    """Writing results failed (disk full, folder removed): the run stops, what was written stays whole."""


class SelectorJournal:
    """The records of one selector in one launch, and the files they go to."""

    def __init__(self, selector: Selector, folder: Path, total: int, earlier: dict | None = None,
                 retries: int = 0):
        self.selector = selector
        self.folder = folder
        self.total = total
        # (task id, repeat) -> record; a retry or a resume starts from the earlier records
        self.records: dict[tuple[str, int], AttemptRecord] = dict(earlier or {})
        self.continues = earlier is not None
        self.retries = retries
        self.pending = 0  # attempts scheduled and not yet recorded
        self.started = time.perf_counter()
        self.started_at = now_iso()
        self._fh = None
        self._good = 0  # the file's length after the last whole line
        self._last_sync = time.monotonic()
        self.last_summary = 0.0
        self.transcripts = TranscriptLog(folder, self.continues)  # the trajectories' sidecar

    def open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.folder / RESULTS, "ab" if self.continues else "wb")
        self._fh.seek(0, os.SEEK_END)
        self._good = self._fh.tell()
        if self._good and not self._ends_with_newline():  # a line cut by a crash: keep the file line-aligned
            self._fh.write(b"\n")
            self._fh.flush()
            self._good = self._fh.tell()

    def _ends_with_newline(self) -> bool:
        with open(self.folder / RESULTS, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def append(self, record: AttemptRecord) -> None:
        """Append one line, flushed; on failure roll the file back to its last whole line and raise WriteFailed."""
        line = record.to_json_line().encode("utf-8")
        try:  # the trajectory first: a crash in between leaves a line that a re-run attempt replaces
            self.transcripts.write(record.id, record.repeat, record._messages)
        except OSError as exc:
            raise WriteFailed(f"writing {self.transcripts.path} failed: {exc.strerror or exc}; the "
                              f"{len(self.records)} attempts recorded before are intact") from None
        record._messages = None  # written: the dashboard's records never hold trajectories
        try:
            self._fh.write(line)
            self._fh.flush()
            now = time.monotonic()
            if now - self._last_sync > FSYNC_EVERY_S:
                os.fsync(self._fh.fileno())
                self._last_sync = now
        except OSError as exc:
            self._rollback()
            raise WriteFailed(f"writing {self.folder / RESULTS} failed: {exc.strerror or exc}; the "
                              f"{len(self.records)} attempts recorded before are intact") from None
        self._good += len(line)
        self.records[record.key] = record

    def _rollback(self) -> None:
        try:
            self._fh.close()
        except OSError:
            pass
        self._fh = None
        try:
            with open(self.folder / RESULTS, "r+b") as fh:
                fh.truncate(self._good)
        except OSError:
            pass

    def close(self) -> None:
        if self._fh is not None:
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            except OSError:
                pass
            self._fh.close()
            self._fh = None
        self.transcripts.close()

    def compact(self, task_order: list[str]) -> None:
        """One line per attempt again (a retried line replaces the earlier one), written atomically."""
        rank = {tid: i for i, tid in enumerate(task_order)}
        ordered = sorted(self.records.values(), key=lambda r: (r.repeat, rank.get(r.id, len(rank)), r.id))
        write_atomic(self.folder / RESULTS, "".join(r.to_json_line() for r in ordered))
        self.transcripts.compact([r.key for r in ordered])
