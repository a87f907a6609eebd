"""One selector's evaluation folder while a launch writes it: the lock, results.jsonl, and summary.json.

Nothing finished is ever lost: each attempt's line is appended and flushed as it finishes (fsync in batches), a
write that fails (disk full) is rolled back to the last whole line and stops the run, the summary is rewritten
every few seconds while the run goes on (``complete: false``), and a lock file names the process that writes the
folder, so that a second process refuses instead of interleaving lines.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.appending import AppendedLines
from hermit_tui.core.records.folders import ARCHIVE, LOCK, LOGS, RESULTS, SUMMARY
from hermit_tui.core.records.results import AttemptRecord, write_atomic
from hermit_tui.core.records.transcripts import TranscriptLog
from hermit_tui.core.workspace.files import kind_of, read_bytes
from hermit_tui.core.workspace.processes import PID_MAX, alive, process_start
from hermit_tui.core.workspace.selectors import Selector

EMPTY_LOCK_GRACE_S = 5.0  # an empty lock younger than this is being written by its owner
_TEMPORARY = re.compile(r"^\..+\.(\d{1,7})\.tmp$")  # write_atomic's temporary files: .<name>.<pid>.tmp


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _refuse(path: Path, what: str) -> InputError:
    return InputError(f"{path}: {what}; remove it if no evaluation of this folder is running")


def read_lock(path: Path) -> dict[str, Any] | None:
    """The holder a lock file names ({} for an empty lock left by a crash), None when there is no lock; InputError
    when the path holds something hermit-tui never writes there (a folder, a FIFO, a list, an impossible pid)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse(path, f"cannot inspect the lock ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(
            path, f"{kind_of(st.st_mode) if not stat.S_ISLNK(st.st_mode) else 'a symbolic link'}, not a lock file"
        )
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse(path, f"cannot read the lock ({exc.strerror or exc})") from None
    if not raw.strip():
        if time.time() - st.st_mtime < EMPTY_LOCK_GRACE_S:
            return {"pid": None, "writing": True}
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    pid = data.get("pid") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or isinstance(pid, bool)
        or not isinstance(pid, int)
        or not 0 < pid < PID_MAX
        or not isinstance(data.get("host", ""), str)
    ):
        shown = raw[:40].decode("utf-8", "replace")
        raise _refuse(
            path, f"not a hermit-tui lock (it holds {' '.join(shown.split())!r}{'...' if len(raw) > 40 else ''})"
        )
    return data


def check_eval_folder(root: Path, label: str) -> None:
    """Refuse, before anything is written, an evaluation folder that a launch could only fail on half-way: the
    folder (or eval/ itself) being a file, its results, summary or archive being the wrong kind of file, or a lock
    holding garbage or held by a live process."""
    root = Path(root)
    folder = root / label
    for path, want in (
        (root, "folder"),
        (folder, "folder"),
        (folder / ARCHIVE, "folder"),
        (folder / RESULTS, "file"),
        (folder / SUMMARY, "file"),
    ):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(f"{path}: cannot inspect it ({exc.strerror or exc})") from None
        if want == "folder" and not stat.S_ISDIR(mode):
            raise InputError(
                f"{path}: {kind_of(mode) if not stat.S_ISREG(mode) else 'a file'}, not a folder; move it away"
            )
        if want == "file" and not stat.S_ISREG(mode):
            raise InputError(f"{path}: {kind_of(mode)}, not a file; move it away")
    holder = read_lock(folder / LOCK)
    if holder:
        _refuse_if_alive(folder / LOCK, holder)


def _refuse_if_alive(path: Path, other: dict[str, Any]) -> None:
    if other.get("writing"):
        raise InputError(f"{path.parent}: another process is starting an evaluation of it; wait for it to finish")
    pid = other.get("pid")
    same_host = other.get("host", socket.gethostname()) == socket.gethostname()
    if isinstance(pid, int) and (not same_host or alive(pid, other.get("process_start"))):
        where = "" if same_host else f" on {other.get('host')}"
        raise InputError(
            f"{path.parent}: already being evaluated by process {pid}{where} "
            f"(since {other.get('started_at', '?')}); wait for it to finish or stop it"
        )


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the ``.<name>.<pid>.tmp`` files that a killed process left in ``folder`` (only of dead processes)."""
    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for path in entries:
        m = _TEMPORARY.match(path.name)
        if m and int(m.group(1)) != os.getpid() and not alive(int(m.group(1)), None) and path.is_file():
            try:
                path.unlink()
                removed.append(path)
            except OSError:
                pass
    return removed


class FolderLock:
    """``eval/<label>/.hermit-tui.lock``: pid, host, start time. A lock left by a dead process is taken over."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK
        self.held = False
        self.took_over: dict[str, Any] | None = None

    def acquire(self) -> None:
        """Take the lock; InputError (one line) when it is held by a live process or cannot be written (a read-only
        or full folder)."""
        try:
            self._acquire()
        except OSError as exc:
            raise InputError(
                f"{self.path.parent}: cannot take the evaluation's lock ({exc.strerror or exc}); nothing was written"
            ) from None

    def _acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": now_iso(),
            "process_start": process_start(os.getpid()),
        }
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                other = read_lock(self.path)  # garbage: InputError
                if other is None:
                    continue  # released meanwhile
                _refuse_if_alive(self.path, other)
                self.took_over = other
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
                continue
            try:
                with os.fdopen(fd, "w") as fh:
                    json.dump(me, fh)
            except OSError:
                self.path.unlink(missing_ok=True)  # a full disk: no empty lock left behind
                raise
            self.held = True
            return
        raise InputError(f"{self.path}: could not take the lock")

    def release(self) -> None:
        if self.held:
            try:
                self.path.unlink()
            except OSError:
                pass  # gone already, or the folder was made read-only meanwhile: the next run takes it over
            self.held = False


class WriteFailed(Exception):
    """Writing results failed (disk full, folder removed): the run stops, what was written stays whole."""


class SelectorJournal:
    """The records of one selector in one launch, and the files they go to."""

    def __init__(
        self,
        selector: Selector,
        folder: Path,
        total: int,
        earlier: dict[tuple[str, int], AttemptRecord] | None = None,
        retries: int = 0,
    ):
        self.selector = selector
        self.folder = folder
        self.total = total
        # (task id, repeat) -> record; a retry or a resume starts from the earlier records
        self.records: dict[tuple[str, int], AttemptRecord] = dict(earlier or {})
        self.foreign: list[AttemptRecord] = []  # recorded attempts outside this evaluation: not counted, kept
        self.continues = earlier is not None
        self.retries = retries
        self.pending = 0  # attempts scheduled and not yet recorded
        self.started = time.perf_counter()
        self.started_at = now_iso()
        self._lines = AppendedLines(folder / RESULTS)
        self.last_summary = 0.0
        self.transcripts = TranscriptLog(folder, self.continues)  # the trajectories' sidecar
        self.broken: str | None = None  # why writing stopped: nothing more is written to this folder

    @property
    def log_dir(self) -> Path:
        """Where this evaluation's attempts put their logs: one folder per evaluation (a resume keeps it)."""
        stamp = re.sub(r"[^0-9T]", "", str(self.started_at)[:19]) or "unknown"
        return self.folder / LOGS / f"{stamp}Z"

    def open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.continues:
            self._drop_cut_line()
        self._lines.open(append=self.continues)

    def _drop_cut_line(self) -> None:
        """A last line cut by a crash: drop its partial bytes (the reader ignored them; that attempt runs again) so
        that the next line never lands after them, which would make the file unreadable. A last line that is whole
        but lacks its newline gets one."""
        path = self.folder / RESULTS
        try:
            fh = open(path, "r+b")
        except FileNotFoundError:
            return
        with fh:
            size = fh.seek(0, os.SEEK_END)
            if not size:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            start = max(0, size - (1 << 20))
            while True:
                fh.seek(start)
                chunk = fh.read(size - start)
                cut = chunk.rfind(b"\n")
                if cut >= 0 or start == 0:
                    break
                start = max(0, start - (1 << 20))
            line_start = start + cut + 1 if cut >= 0 else 0
            fh.seek(line_start)
            tail = fh.read()
            try:
                AttemptRecord.model_validate_json(tail)
                whole = True
            except ValueError:
                whole = False
            if whole:
                fh.seek(0, os.SEEK_END)
                fh.write(b"\n")
            else:
                fh.truncate(line_start)
            fh.flush()
            os.fsync(fh.fileno())

    def append(self, record: AttemptRecord) -> None:
        """Append one line, flushed; on failure roll the file back to its last whole line and raise WriteFailed.

        After a failure nothing more is written to this folder (the words of the stop stay true), and the stop's
        message counts the whole lines results.jsonl holds on disk."""
        if self.broken is not None:
            raise WriteFailed(self.broken)
        line = record.take_line()  # encoded once, in the attempt's thread
        mark = self.transcripts.mark()
        try:  # the trajectory first; if its results line cannot follow, it is taken back
            self.transcripts.write(record.id, record.repeat, record._messages)
        except OSError as exc:
            raise self._stop(self.transcripts.path, exc) from None
        record._messages = None  # written: the dashboard's records never hold trajectories
        try:
            self._lines.write(line)
        except OSError as exc:
            self.transcripts.undo_to(mark)
            raise self._stop(self.folder / RESULTS, exc) from None
        self.records[record.key] = record

    def _stop(self, path: Path, exc: OSError) -> WriteFailed:
        results = self.folder / RESULTS
        try:
            with open(results, "rb") as fh:
                lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        except OSError:
            lines = 0
        self.broken = (
            f"writing {path} failed: {exc.strerror or exc}; {results} holds {lines} recorded "
            f"attempt{'s' * (lines != 1)}, intact (continue with --resume once there is room)"
        )
        return WriteFailed(self.broken)

    def close(self) -> None:
        self._lines.close()
        self.transcripts.close()

    def compact(self, task_order: list[str]) -> None:
        """One line per attempt again (a retried line replaces the earlier one), written atomically."""
        rank = {tid: i for i, tid in enumerate(task_order)}
        ordered = sorted(self.records.values(), key=lambda r: (r.repeat, rank.get(r.id, len(rank)), r.id))
        write_atomic(self.folder / RESULTS, "".join(r.to_json_line() for r in [*ordered, *self.foreign]))
        self.transcripts.compact([r.key for r in ordered])
