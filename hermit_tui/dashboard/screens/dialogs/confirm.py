"""A deliberate confirmation over the review screen (dashboard/screens/review): publishing and its undo are
confirmed by typing a word, or by ticking a box and clicking the button."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, Input, Static

from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitModal
from hermit_tui.dashboard.widgets.checklist import TickBox


class ConfirmScreen(HermitModal[bool]):
    """A deliberate confirmation: type ``word`` (Enter), or tick the box and click the button (no box when ``tick``
    is None: then only typing confirms)."""

    CSS_PATH = [style("confirm.tcss")]
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, body: str, *, word: str, tick: str | None, ok: str, warnings: int = 0):
        super().__init__()
        self.title_text, self.body, self.word, self.tick, self.ok, self.warnings = title, body, word, tick, ok, warnings

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(Text(self.title_text), id="confirm-title")
            yield Static(Text(self.body), id="confirm-body")
            if self.warnings:
                n = self.warnings
                yield Static(f"{n} warning{'s' if n > 1 else ''} on the review screen.", id="confirm-warnings")
            yield Input(placeholder=f"type {self.word} to confirm, then Enter", id="confirm-word", compact=True)
            if self.tick is not None:
                yield Static("or", classes="muted")
                yield TickBox(self.tick, id="confirm-read", compact=True)
            with Horizontal(id="confirm-buttons"):
                yield Button(self.ok, variant="error", id="confirm-ok", disabled=True, compact=True)
                yield Button("Cancel", id="confirm-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#confirm-word", Input).focus()

    def _ready(self) -> bool:
        ticked = self.query("#confirm-read")
        return self.query_one("#confirm-word", Input).value.strip() == self.word or (
            bool(ticked) and ticked.first(Checkbox).value
        )

    @on(Input.Changed, "#confirm-word")
    @on(Checkbox.Changed, "#confirm-read")
    def _update(self) -> None:
        self.query_one("#confirm-ok", Button).disabled = not self._ready()

    @on(Input.Submitted, "#confirm-word")
    def _typed(self, event: Input.Submitted) -> None:
        if event.value.strip() == self.word:
            self.dismiss(True)
        else:
            self.notify(f"Type {self.word} exactly to confirm", severity="warning", markup=False)

    @on(Button.Pressed, "#confirm-ok")
    def _clicked(self) -> None:
        if self._ready():
            self.dismiss(True)

    @on(Button.Pressed, "#confirm-cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)


__all__ = ["ConfirmScreen"]
