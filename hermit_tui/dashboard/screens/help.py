"""The ``?`` help screen: every key binding, screen by screen, read from the binding data."""

from __future__ import annotations

from rich.columns import Columns
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitModal


def section(title: str, items) -> Group:
    """One screen's keys under its title."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True, min_width=6)
    table.add_column(max_width=44)
    for b in items:
        if b.action == "command_palette" and title != "Everywhere":
            continue
        if b.action in bindings.HELP_HIDDEN:  # the label keys 2-9: listed once, as 1-9
            continue
        if items is not bindings.TRIAGE and any(b is t for t in bindings.TRIAGE):  # in their own section
            continue
        table.add_row(b.key_display or b.key, bindings.TRIAGE_HELP if b.action == "label(1)" else b.description)
    return Group(Text(title, style="bold reverse"), table)


def bindings_table() -> Columns:
    """Every screen's keys, side by side as far as the width allows."""
    return Columns([section(title, items) for title, items in bindings.ALL], padding=(1, 3))


class HelpScreen(HermitModal[None]):
    CSS_PATH = [style("help.tcss")]
    BINDINGS = bindings.HELP

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static("hermit-tui: keys", id="help-title")
            yield Static(bindings_table(), id="help-keys")
            yield Static(
                "Every action is also in the command palette (ctrl+p). The mouse works too. escape closes this.",
                id="help-foot",
            )

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
