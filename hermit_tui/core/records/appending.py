"""A JSON-lines file written a line at a time while a launch runs: results.jsonl (``journal``) and its transcripts
sidecar (``transcripts``) append the same way.

Each line is flushed as it is written and synced to disk at most every :data:`FSYNC_EVERY_S` (a crash loses at most
that much, never a line already synced); a write that fails (a full disk) rolls the file back to its last whole line
and raises, so that the file stays readable; closing syncs what is left.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import BinaryIO

FSYNC_EVERY_S = 0.5


class AppendedLines:
    """One file opened for appending (or anew), its length after the last whole line kept for a rollback."""

    def __init__(self, path: Path):
        self.path = path
        self.fh: BinaryIO | None = None
        self.good = 0  # the file's length after the last whole line
        self._opened = False
        self._last_sync = time.monotonic()

    def open(self, *, append: bool) -> BinaryIO:
        fh: BinaryIO = open(self.path, "ab") if append else open(self.path, "wb")
        self.fh = fh
        fh.seek(0, os.SEEK_END)
        self.good = fh.tell()
        self._opened = True
        return fh

    def write(self, line: bytes) -> None:
        """Append one whole line, flushed; OSError after rolling the file back to its last whole line."""
        try:
            if self.fh is None:
                raise OSError(f"{self.path.name} is not open")
            self.fh.write(line)
            self.fh.flush()
            now = time.monotonic()
            if now - self._last_sync > FSYNC_EVERY_S:
                os.fsync(self.fh.fileno())
                self._last_sync = now
        except OSError:
            self.rollback()
            raise
        self.good += len(line)

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (a length :attr:`good` had): the lines appended since are gone."""
        if not self._opened or size >= self.good:
            return
        if self.fh is not None:
            self.fh.flush()
            self.fh.truncate(size)
        else:
            with open(self.path, "r+b") as fh:
                fh.truncate(size)
        self.good = size

    def rollback(self) -> None:
        """Close the file and cut it back to its last whole line (nothing when it was never opened here)."""
        if self.fh is not None:
            try:
                self.fh.close()
            except OSError:
                pass
            self.fh = None
        if not self._opened:
            return
        try:
            with open(self.path, "r+b") as fh:
                fh.truncate(self.good)
        except OSError:
            pass

    def close(self) -> None:
        if self.fh is not None:
            try:
                self.fh.flush()
                os.fsync(self.fh.fileno())
            except OSError:
                pass
            self.fh.close()
            self.fh = None


__all__ = ["FSYNC_EVERY_S", "AppendedLines"]
