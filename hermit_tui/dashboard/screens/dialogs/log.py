"""The text of an attempt's log file, over the drill-down (dashboard/screens/attempt): its end only when it is long."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TextArea

from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitModal

LOG_TAIL_BYTES = 200_000  # a log longer than this shows its end only


def size_text(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 1_000_000 else f"{n / 1000:.0f} KB" if n >= 1000 else f"{n} bytes"


def read_tail(path: Path, limit: int | None = None) -> tuple[str, str]:
    """The text of a log (its last ``limit`` bytes when longer) and a note saying what was cut, or ""."""
    limit = limit or LOG_TAIL_BYTES
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        start = max(0, size - limit)
        fh.seek(max(0, start - 1))
        data = fh.read(limit + 1 if start else limit)
    if not start:
        return data.decode("utf-8", errors="replace"), ""
    whole, data = data[:1] == b"\n", data[1:]  # did the cut fall at the start of a line?
    text = data.decode("utf-8", errors="replace")
    newline = text.find("\n")
    if not whole and 0 <= newline < 1000:  # drop the partial first line
        text = text[newline + 1 :]
    return text, f"Showing the last {size_text(limit)} of {size_text(size)}: the start of the log is cut."


class LogScreen(HermitModal[None]):
    """The text of an attempt's log file."""

    CSS_PATH = [style("log.tcss")]
    BINDINGS = bindings.HELP

    def __init__(self, path: str, text: str, note: str = ""):
        super().__init__()
        self.path, self.text, self.note = path, text, note

    def compose(self) -> ComposeResult:
        with Vertical(id="log-box"):
            yield Static(Text(f"Log  {self.path}"), id="log-title")
            if self.note:
                yield Static(self.note, id="log-note", classes="warning-banner")
            yield TextArea(self.text, read_only=True, soft_wrap=True, id="log-text")
            yield Static("escape: close", classes="muted")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


__all__ = ["LOG_TAIL_BYTES", "LogScreen", "read_tail", "size_text"]
