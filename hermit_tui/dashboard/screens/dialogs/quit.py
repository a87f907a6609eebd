"""Quitting during a launch: ask first (cancel it and quit, cancel it and stay, keep it running), then show the
launch stopping until it has (the attempts in flight finish and are kept, or are abandoned on request), and only then
leave. Nothing is published from the dashboard, so nothing moves after the user has quit."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitModal
from hermit_tui.dashboard.widgets.footer import Footer


def in_flight(app) -> tuple[int, int, int]:
    """(attempts finished, attempts expected, attempts in flight) of the launch shown in the store."""
    store = app.store
    live = [c for c in store.columns.values() if c.source == "live"]
    done = sum(c.done for c in live)
    expected = sum(c.expected for c in live)
    return done, expected, len(store.in_flight)


class QuitScreen(HermitModal[str | None]):
    """A launch is running: cancel it and quit, cancel it and stay, or keep it running."""

    CSS_PATH = [style("quit.tcss")]
    BINDINGS = bindings.QUIT

    def compose(self) -> ComposeResult:
        done, expected, _ = in_flight(self.app)
        with Vertical(id="quit-box"):
            yield Static("A launch is running", id="quit-title")
            yield Static(
                Text(
                    f"{done} of {expected} attempts finished. Cancelling keeps every finished attempt; "
                    "the summaries are marked incomplete (resume later with r on the setup screen). "
                    "Nothing is published."
                ),
                id="quit-body",
            )
            with Vertical(id="quit-buttons"):
                yield Button("Cancel the launch and quit (q)", variant="error", id="quit", compact=True)
                yield Button("Cancel the launch, stay (c)", id="cancel", compact=True)
                yield Button("Keep running (k, escape)", variant="primary", id="keep", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#keep", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


class StoppingScreen(HermitModal[None]):
    """The launch is stopping before the dashboard quits: progress, and the choice to abandon what is in flight."""

    CSS_PATH = [style("quit.tcss")]
    BINDINGS = bindings.STOPPING

    def compose(self) -> ComposeResult:
        with Vertical(id="stopping-box"):
            yield Static("Stopping the launch, then quitting", id="stopping-title")
            yield Static("", id="stopping-body")
            with Horizontal(id="stopping-buttons"):
                yield Button("Abandon the attempts in flight (a)", variant="error", id="abandon", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.show()
        self.set_interval(0.5, self.show)

    def on_hermit_app_store_updated(self, message) -> None:
        self.show()

    def show(self) -> None:
        done, expected, flying = in_flight(self.app)
        text = Text()
        text.append(f"{done} of {expected} attempts finished and kept.\n")
        if self.app.abandoned:
            text.append("Abandoning the attempts in flight: they are not recorded.", style="bold")
        else:
            text.append(
                f"Waiting for the {flying} attempt{'s' if flying != 1 else ''} in flight to finish (they are kept)."
                if flying
                else "Waiting for the attempts in flight to finish (they are kept)."
            )
        text.append("\nThe summaries will be marked incomplete. Nothing is published.", style="dim")
        self.query_one("#stopping-body", Static).update(text)
        self.query_one("#abandon", Button).disabled = self.app.abandoned

    @on(Button.Pressed, "#abandon")
    def action_abandon(self) -> None:
        if not self.app.abandoned:
            self.app.cancel_run(force=True, quiet=True)
        self.show()
