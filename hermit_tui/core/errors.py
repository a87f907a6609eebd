"""Errors the engine raises for the user to read."""

from __future__ import annotations


class InputError(Exception):
    """Bad input: a config, task file, selector or folder the user must fix.

    The message is one line that names the file, key or line at fault. The CLI prints it and exits 2, the dashboard
    shows it as an error notification; neither shows a traceback.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class RunFailed(Exception):
    """The run stopped for a reason outside the user's input (a disk that filled up, a folder that vanished).
    What was recorded before stays intact; the message says so. The CLI exits 1 with this one line."""
