"""The ``?`` help screen: every key binding, screen by screen, read from the binding data."""
from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from hermit_tui import bindings
from hermit_tui.paths import style


def bindings_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for title, items in bindings.ALL:
        table.add_row(f"[b]{title}[/b]", "")
        for b in items:
            if b.action == "command_palette" and title != "Everywhere":
                continue
            table.add_row(b.key_display or b.key, b.description)
        table.add_row("", "")
    return table


class HelpScreen(ModalScreen[None]):
    CSS_PATH = [style("help.tcss")]
    BINDINGS = bindings.HELP

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static("hermit-tui: keys", id="help-title")
            yield Static(bindings_table(), id="help-keys")
            yield Static("Every main action is also in the command palette (ctrl+p). The mouse works too.",
                         id="help-foot")

    def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
