"""Where the package's files are: the stylesheets ship inside the wheel as ``hermit_tui/styles``."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def style(name: str) -> Path:
    """The path of ``styles/<name>`` (top-level in the repository, ``hermit_tui/styles`` when installed)."""
    path = Path(str(files("hermit_tui.styles") / name))
    if not path.is_file():  # running from a source tree that was never installed
        path = Path(__file__).resolve().parent.parent / "styles" / name
    return path
