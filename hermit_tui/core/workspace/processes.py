"""Whether a process named in a file (a lock, a temporary file's name) is still running: the folder lock and the
clean-up of what a killed process left behind both ask."""

from __future__ import annotations

import os
from pathlib import Path

PID_MAX = 1 << 22  # the kernel's largest possible pid (PID_MAX_LIMIT)


def process_start(pid: int) -> str | None:
    """The kernel's start time of a process (guards against a reused pid), or None where /proc is missing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def alive(pid: object, start: str | None) -> bool:
    """Whether process ``pid`` runs, and is the one that started at ``start`` (None: any)."""
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid < PID_MAX:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError):
        return False
    return start is None or process_start(pid) in (None, start)
