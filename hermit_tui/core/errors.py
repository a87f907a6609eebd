"""Errors the engine raises for the user to read."""
from __future__ import annotations


class InputError(Exception):
    """Bad input: a config, task file, selector or folder the user must fix.

    The message is one line that names the file, key or line at fault. The CLI prints it and exits 2, the dashboard
    shows it as an error notification; neither shows a traceback.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
