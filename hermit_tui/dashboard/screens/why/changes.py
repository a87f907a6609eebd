"""Changes: why a compared pair changed. The tasks the pair fixed, broke or made flaky (each with the agent step
where its trajectories first part ways), beside what the adapter changed between the two versions (tools, skills
and subagents first, then each file's diff) and the pair's summary: the first-divergence distribution, tool use, and
whether the adapter was used (descriptive). Computed in a worker (``core.why.pair.pair_why``); ``enter`` on a task
opens its aligned trajectories."""

from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from hermit_tui.core.errors import InputError
from hermit_tui.core.why.pair import FLIPS, PairWhy, pair_why
from hermit_tui.core.why.text import divergence_cell
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen, opened, shown_pair
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable
from hermit_tui.dashboard.widgets.why_text import pair_text

HOOK_ENV = "HERMIT_TUI_USAGE_HOOK"
KIND_STYLE = {"fixed": "green", "broken": "red", "flaky": "yellow"}


def usage_hook(config):
    """The usage hook ``$HERMIT_TUI_USAGE_HOOK`` names (docs/why.md), or None."""
    from hermit_tui.core.workspace.callables import load_function

    spec = os.environ.get(HOOK_ENV)
    return load_function(spec, config.base, HOOK_ENV) if spec else None


class ChangesScreen(HermitScreen[None]):
    """What changed between the compared pair's adapters, beside the tasks it fixed, broke or made flaky."""

    CSS_PATH = [style("changes.tcss")]
    BINDINGS = bindings.CHANGES

    def __init__(self, a: str | None = None, b: str | None = None):
        super().__init__()
        self.a, self.b = a, b
        self.pair: PairWhy | None = None
        self.problem: str | None = None
        self.rows: list[tuple[str, str]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="changes-title")
        yield VirtualTable(id="changes-tasks")
        with VerticalScroll(id="changes-body"):
            yield Static(Text("Reading the adapter versions and the trajectories…", style="italic"), id="changes-text")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Changes"
        self.query_one("#changes-tasks", VirtualTable).set_columns(
            [VColumn("kind", "", 7), VColumn("task", "task", None), VColumn("div", "first divergence", 18)]
        )
        self.start()

    @property
    def ready(self) -> bool:
        return self.pair is not None or self.problem is not None

    def _pair(self) -> tuple[str, str]:
        self.a, self.b = shown_pair(self.app, self.a, self.b, "Changes needs")
        store = self.app.store
        return store.columns[self.a].selector, store.columns[self.b].selector

    def start(self) -> None:
        self.pair, self.problem = None, None
        try:
            config, taskset = opened(self.app)
            texts = self._pair()
        except (InputError, RuntimeError) as exc:
            self._failed(str(exc))
            return
        self.query_one("#changes-title", Static).update(Text(f"Why it changed: {self.a} → {self.b} · reading…"))
        test_ids = list(taskset.test_ids)

        def work() -> None:
            try:
                pair = pair_why(
                    config, texts[0], texts[1], test_ids, hook=usage_hook(config), pause=self.app.pacer.pace
                )
            except InputError as exc:
                self.app.call_from_thread(self._failed, str(exc))
                return
            self.app.call_from_thread(self._show, pair)

        self.app.paced_worker(self, work, exclusive=True, group="why", name="changes")

    def _failed(self, message: str) -> None:
        self.problem = message
        self.query_one("#changes-title", Static).update(Text(f"Why it changed: {self.a} → {self.b}", style="bold"))
        self.query_one("#changes-text", Static).update(Text(message, style="bold red"))

    def _show(self, pair: PairWhy) -> None:
        self.pair = pair
        counts = " · ".join(f"{k} {len(pair.flips.get(k, []))}" for k in FLIPS)
        what = (
            "same files"
            if pair.diff is not None and pair.diff.same
            else (f"{len(pair.diff.files)} files changed" if pair.diff is not None else "versions not read")
        )
        self.query_one("#changes-title", Static).update(
            Text.assemble((f"Why it changed: {pair.a} → {pair.b}", "bold"), f"  {counts} · {what}")
        )
        self.rows = [(kind, task) for kind in FLIPS for task in pair.flips.get(kind, [])]
        table = self.query_one("#changes-tasks", VirtualTable)

        def render(row: tuple[str, str], col: str) -> Text | str:
            kind, task = row
            if col == "kind":
                return Text(kind, style=KIND_STYLE.get(kind, ""))
            if col == "task":
                return task
            return divergence_cell(pair.divergence_by_task.get(task, []))

        table.set_rows(self.rows, render, key=lambda r: r)
        self.query_one("#changes-text", Static).update(pair_text(pair))
        if self.rows:
            table.focus()
        else:
            self.query_one("#changes-body").focus()

    def focus_main(self) -> None:
        self.query_one("#changes-tasks", VirtualTable).focus()

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        event.stop()
        self._align(event.row[1])

    def _align(self, task: str) -> None:
        from hermit_tui.dashboard.screens.why.aligned import AlignedScreen

        if self.a is None or self.b is None:
            return
        self.app.push_screen(AlignedScreen(task, [self.a, self.b]))

    def action_align(self) -> None:
        row = self.query_one("#changes-tasks", VirtualTable).cursor_value
        if row is None:
            self.notify("No task the pair fixed, broke or made flaky", severity="warning")
            return
        self._align(row[1])

    def action_switch(self) -> None:
        table = self.query_one("#changes-tasks", VirtualTable)
        (self.query_one("#changes-body") if table.has_focus else table).focus()

    def action_refresh(self) -> None:
        self.start()

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["ChangesScreen", "usage_hook"]
