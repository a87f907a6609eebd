"""What every command shares: the exit codes and a parser whose usage mistakes are one line.

Exit codes: 0 done, 2 bad input (one line on stderr, no traceback), 3 a gate failed (``gate``, ``eval --require``),
1 anything else (including a cancelled run).
"""

from __future__ import annotations

import argparse

from hermit_tui.core.errors import InputError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit code 2 like every other bad input."""

    def error(self, message: str):
        raise InputError(f"{self.prog}: {message}")


__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_OK", "Parser"]
