"""Aligned trajectories: one task's attempts under two or more selectors, step by step (a message, a tool call with
its arguments, a tool result), same steps matched, changed (``~``), inserted (``+``) and removed (``-``) marked, the
first step where they part ways highlighted (``>>``). One row per aligned step, each step folded to one line; the
highlighted row is shown whole below. Aligned in a worker (``core.why.pair.align_task``), every repeat at once."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, Input, Static

from hermit_tui.core.errors import InputError
from hermit_tui.core.why.pair import TaskAlignment, align_task
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen, opened
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.textfield import TextField
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable
from hermit_tui.dashboard.widgets.why_text import mark_cell, matches, row_detail, step_cell


class AlignedScreen(HermitScreen[None]):
    """One task's trajectories under ``keys`` (store columns; the first is the pivot) aligned step by step."""

    CSS_PATH = [style("aligned.tcss")]
    BINDINGS = bindings.ALIGNED

    def __init__(self, task_id: str, keys: list[str], repeat: int | None = None):
        super().__init__()
        self.task_id, self.keys, self.wanted = task_id, list(keys), repeat
        self.aligned: TaskAlignment | None = None
        self.problem: str | None = None
        self.shown = 0  # index into aligned.repeats
        self.full = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"{self.task_id}: aligning…", style="italic"), id="aligned-title")
        yield VirtualTable(id="aligned-rows")
        with VerticalScroll(id="aligned-detail"):
            yield Static("", id="aligned-step")
        yield TextField(placeholder="search the steps (enter: next match, escape: leave)", id="aligned-search")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Aligned trajectories"
        self.query_one("#aligned-search").display = False
        self.start()

    @property
    def ready(self) -> bool:
        return self.aligned is not None or self.problem is not None

    @property
    def alignment(self):
        return None if self.aligned is None else self.aligned.alignments[self.shown]

    def start(self) -> None:
        try:
            config, _ = opened(self.app)
            store = self.app.store
            texts = [store.columns[k].selector for k in self.keys if k in store.columns]
            if len(texts) < 2:
                raise InputError(f"aligning needs two evaluated selectors ({', '.join(self.keys)})")
        except (InputError, RuntimeError) as exc:
            self._failed(str(exc))
            return
        task = self.task_id

        def work() -> None:
            try:
                aligned = align_task(config, texts, task)
            except InputError as exc:
                self.app.call_from_thread(self._failed, str(exc))
                return
            self.app.call_from_thread(self._show, aligned)

        self.app.paced_worker(self, work, exclusive=True, group="why", name="align")

    def _failed(self, message: str) -> None:
        self.problem = message
        self.query_one("#aligned-title", Static).update(Text(f"{self.task_id}: {message}", style="bold red"))

    def _show(self, aligned: TaskAlignment) -> None:
        self.aligned = aligned
        if self.wanted in aligned.repeats:
            self.shown = aligned.repeats.index(self.wanted)
        else:  # no repeat asked for: the first where the agents part ways (what Changes sent the user to see)
            parted = (i for i, al in enumerate(aligned.alignments) if al.first_divergence is not None)
            self.shown = next(parted, 0)
        self._draw()
        self.query_one("#aligned-rows", VirtualTable).focus()
        self.action_first_divergence()

    def _draw(self) -> None:
        al = self.alignment
        if al is None or self.aligned is None:
            return
        repeat = self.aligned.repeats[self.shown]
        if al.first_divergence is None:
            where = "the agents' steps are the same" + (" (their inputs differ)" if al.inputs_differ else "")
        else:
            where = f"first divergence: agent step {al.divergence_step}"
        others = f" · repeat {self.shown + 1} of {len(self.aligned.repeats)}"
        self.query_one("#aligned-title", Static).update(
            Text.assemble(
                (f"{self.task_id} · repeat {repeat}", "bold"),
                f" · {' | '.join(al.labels)} · {where}{others if len(self.aligned.repeats) > 1 else ''}",
            )
        )
        table = self.query_one("#aligned-rows", VirtualTable)
        width = max(self.size.width, 40)
        each = max((width - 10) // len(al.labels) - 2, 10)
        table.set_columns(
            [VColumn("mark", "", 3), *(VColumn(f"s{i}", label, each) for i, label in enumerate(al.labels))]
        )

        def render(index: int, col: str) -> Text:
            return mark_cell(al, index) if col == "mark" else step_cell(al, index, int(col[1:]))

        table.set_rows(list(range(len(al.rows))), render, key=lambda i: (self.shown, i))
        self._detail()

    def on_resize(self) -> None:
        if self.aligned is not None:
            self._draw()

    def _detail(self) -> None:
        al = self.alignment
        table = self.query_one("#aligned-rows", VirtualTable)
        if al is None or not al.rows:
            self.query_one("#aligned-step", Static).update(Text("No steps on either side.", style="italic"))
            return
        self.query_one("#aligned-step", Static).update(row_detail(al, table.cursor_row, self.full))

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        self._detail()

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        event.stop()
        self.action_unfold()

    def focus_main(self) -> None:
        self.query_one("#aligned-search").display = False
        self.query_one("#aligned-rows", VirtualTable).focus()

    # -- actions --------------------------------------------------------------------------------------------------
    def _go(self, index: int | None, what: str) -> None:
        if index is None:
            self.notify(what, severity="information")
            return
        table = self.query_one("#aligned-rows", VirtualTable)
        table.cursor_row = index
        self._detail()

    def action_first_divergence(self) -> None:
        al = self.alignment
        if al is not None:
            self._go(al.first_divergence, "The agents' steps are the same: no divergence")

    def _difference(self, step: int) -> None:
        al = self.alignment
        if al is None:
            return
        here = self.query_one("#aligned-rows", VirtualTable).cursor_row
        order = range(here + 1, len(al.rows)) if step > 0 else range(here - 1, -1, -1)
        self._go(next((i for i in order if not al.rows[i].same), None), "No further difference")

    def action_next_difference(self) -> None:
        self._difference(1)

    def action_prev_difference(self) -> None:
        self._difference(-1)

    def action_unfold(self) -> None:
        self.full = not self.full
        self._detail()

    def action_search(self) -> None:
        field = self.query_one("#aligned-search", Input)
        field.display = True
        field.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        al, query = self.alignment, event.value.strip()
        if al is None or not query:
            return
        here = self.query_one("#aligned-rows", VirtualTable).cursor_row
        hits = [i for i in range(len(al.rows)) if matches(al, i, query)]
        after = [i for i in hits if i > here] or hits
        self.notify(f"{len(hits)} {'row' if len(hits) == 1 else 'rows'} match {query!r}")
        self._go(after[0] if after else None, f"No step holds {query!r}")

    def _repeat(self, step: int) -> None:
        if self.aligned is None or len(self.aligned.repeats) < 2:
            self.notify("One repeat aligned: no other to show", severity="information")
            return
        self.shown = (self.shown + step) % len(self.aligned.repeats)
        self._draw()
        self.action_first_divergence()

    def action_next_repeat(self) -> None:
        self._repeat(1)

    def action_prev_repeat(self) -> None:
        self._repeat(-1)

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["AlignedScreen"]
