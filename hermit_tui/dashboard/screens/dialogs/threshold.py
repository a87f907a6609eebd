"""Ask for the success threshold the views use (solved at least once, pass^k, the grid's marks)."""

from __future__ import annotations

import math

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitModal


class ThresholdScreen(HermitModal[float | None]):
    """Dismisses with the new threshold, or None when cancelled."""

    CSS_PATH = [style("threshold.tcss")]
    BINDINGS = bindings.HELP

    def __init__(self, current: float):
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="threshold-box"):
            yield Static(
                "Success threshold: an attempt scoring at least this counts as solved in the views. "
                "hermit's files and summaries keep 1.0."
            )
            yield Input(f"{self.current:g}", type="number", id="threshold-input")
            yield Label("", id="threshold-error")
            with Horizontal(id="threshold-buttons"):
                yield Button("Set", variant="primary", id="threshold-ok")
                yield Button("Cancel", id="threshold-cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#threshold-ok")
    def _ok(self) -> None:
        raw = self.query_one(Input).value.strip()
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            self.query_one("#threshold-error", Label).update(f"not a number: {raw!r}")
            return
        self.dismiss(value)

    @on(Button.Pressed, "#threshold-cancel")
    async def action_dismiss(self, result: float | None = None) -> None:
        self.dismiss(None)
