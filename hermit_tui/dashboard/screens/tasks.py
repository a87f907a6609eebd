"""The per-task table: one row per task, each selector's mean (failed attempts marked as in the grid: ✗ pipeline
error, J judge error), solved-at-least-once and delta to the baseline, with filters, search and sort; and an outputs
mode (o) with each selector's output side by side per task, the words that differ from the baseline's highlighted.
Rows come from ``EvalStore.rows``; a large store computes them in a worker thread. The columns, cells and header
lines are drawn by ``task_table.TaskTable``, a mixin of this screen."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import Header, Input, Static
from textual.worker import get_current_worker

from hermit_tui.core.records.annotations import is_failure
from hermit_tui.core.safe import line as one_line
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.annotate import (
    GROUP_NAMES,
    LabelPickScreen,
    Triage,
    annotation_text,
    keys_text,
    progress_text,
)
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.screens.task_cells import compare_pair, label_filter_name, row_attempts, sort_keys, task_text
from hermit_tui.dashboard.screens.task_table import TaskTable
from hermit_tui.dashboard.state.store import (
    ANY_LABEL,
    FILTER_NAMES,
    FILTERS,
    UNLABELLED,
    EvalStore,
    Failure,
    Filter,
    TaskRows,
)
from hermit_tui.dashboard.widgets.banners import Banners
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.static_text import show_text
from hermit_tui.dashboard.widgets.textfield import TextField
from hermit_tui.dashboard.widgets.virtual_table import VirtualTable

WORKER_THRESHOLD = 2000  # more tasks than this: rows are computed off the event loop
SEARCH_DEBOUNCE_S = 0.15
TEXT_WIDTH = 120  # widest the task-text column gets (longer text is cut with an ellipsis)


async def yield_to_loop() -> None:
    """Let the event loop run before going on. A screen handles the messages waiting in its queue in one step of
    the loop, without giving way between them: on the first show of the per-task table, Textual's own ScreenResume
    (restyle, layout and a full render, ~50 ms), the store's updates and the Resize that follows (another full
    render) ran back to back, a stall of 110-130 ms. Yielding before and after each of our refreshes cuts that into
    steps. A short sleep rather than ``sleep(0)``: a zero sleep only lets the tasks already waiting run, and the
    steps ran back to back again before the loop looked at its timers and input (an 80 ms gap made of 14 + 44 ms
    steps, measured at 1,112 tasks)."""
    await asyncio.sleep(YIELD_S)


YIELD_S = 0.001  # see yield_to_loop


class TasksScreen(TaskTable, Triage, HermitScreen[None]):
    """One row per task across the selected evaluations. The triage keys act on the row's target attempt (its
    first failure in triage order; a cycles through the row's attempts)."""

    CSS_PATH = [style("tasks.tcss")]
    BINDINGS = bindings.TASKS

    def __init__(
        self,
        filter: Filter = "all",
        search: str = "",
        only: tuple[str, str, frozenset[str]] | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.filter: Filter = filter if filter in FILTERS else "all"
        self.only = only  # a slice (field, value, its task ids), from the Slices screen: only its tasks are shown
        self.search = search
        self.sort = "id"
        self.reverse = False
        self._generation = 0
        self._debounce: Timer | None = None
        self._col_index: dict[str, int] = {}
        self._styles: dict[str, Style] = {}
        self._styles_theme = ""
        self._shown = 0
        self._layout: tuple[list[str], int, int] = ([], 4, 0)  # keys, id width, natural text width
        self.outputs = False  # the outputs mode (o): each selector's output side by side
        self.repeat = 1  # the repeat whose outputs are shown
        self.label_filter: str | None = None  # a label, ANY_LABEL or UNLABELLED (store.rows' ``label``)
        self.target: tuple[str, str, int] | None = None  # the attempt the triage keys act on (column, task, repeat)
        self._pending_task: str | None = None  # a task to put the cursor on once the rows are shown
        self._painted_once = False  # the first show draws the rows after its first paint (on_screen_resume)
        self._walked: tuple[str, str, int] | None = None  # the attempt u (the walk) or a chose last
        self._walked_group = ""  # why the walk chose it
        self.details: bool | None = None  # one line per selector (i); None: unless the terminal is short

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banners(id="tasks-banners")
        yield Static("", id="tasks-columns")
        yield Static("", id="tasks-filters")
        with Horizontal(id="tasks-bar"):
            yield TextField(self.search, placeholder="/ search id or text", id="tasks-search", compact=True)
            yield Static("", id="tasks-count")
        yield VirtualTable(id="tasks-table", zebra_stripes=True, fixed_columns=1)
        yield Static("", id="tasks-triage")
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "theme", lambda: self.refresh_from_store(), init=False)
        self.table.focus()

    def focus_main(self) -> None:
        self.table.focus()

    async def on_screen_resume(self) -> None:
        """Shown, first or again: the store may have changed meanwhile. On the first show the rows come after the
        first paint (the screen and its headers, the table empty), each its own step of the loop: together they
        were one step of ~45 ms CPU at 1,112 tasks, the longest of opening the table."""
        if not self._painted_once:
            self._painted_once = True
            self.refresh_from_store(rows_later=True)
            return
        await yield_to_loop()
        self.refresh_from_store()
        await yield_to_loop()

    async def on_hermit_app_store_updated(self, message) -> None:
        await yield_to_loop()
        self.refresh_from_store()
        await yield_to_loop()

    # -- computing ------------------------------------------------------------------------------------------------
    def refresh_from_store(self, rows_later: bool = False) -> None:
        """Redraw the headers now and the rows inline (small store) or from a worker thread (large store);
        ``rows_later``: the rows after the next paint."""
        store: EvalStore = self.app.store
        self._theme_styles()
        self.query_one(Banners).show_for(self.app, store)
        self._show_columns(store)
        self._show_filters(store)
        self._generation += 1
        generation = self._generation
        query = dict(
            filter=self.filter,
            search=self.search,
            sort=self.sort,
            reverse=self.reverse,
            compare=compare_pair(store),
            label=self.label_filter,
            only=self.only[2] if self.only is not None else None,
        )
        if len(store.task_ids) <= WORKER_THRESHOLD:
            if rows_later:
                self.call_after_refresh(lambda: self._show_rows(generation, *self._compute(store, query)))
            else:
                self._show_rows(generation, *self._compute(store, query))
            return
        pace = self.app.pacer.pace

        def work() -> None:
            for _ in range(5):  # the store may change under us (a batch applied meanwhile): try again
                try:
                    result = self._compute(store, query, pace)
                    break
                except RuntimeError:
                    continue
            else:
                return
            if not get_current_worker().is_cancelled:
                self.app.call_from_thread(self._show_rows, generation, *result)

        self.app.paced_worker(self, work, exclusive=True, group="tasks-rows", name="tasks-rows")

    @staticmethod
    def _compute(
        store: EvalStore, query: dict[str, Any], pause: Callable[[], None] | None = None
    ) -> tuple[TaskRows, list[str], int, int]:
        rows = store.rows(**query, pause=pause)
        id_width = rows.id_width()
        text_width = max((len(task_text(store, r.task_id)) for r in rows[:200]), default=0)
        return rows, store.keys, id_width, min(text_width, TEXT_WIDTH)

    def _show_rows(self, generation: int, rows: TaskRows, keys: list[str], id_width: int, text_width: int) -> None:
        if generation != self._generation:
            return  # a newer request is on its way
        store: EvalStore = self.app.store
        self._col_index = {k: i for i, k in enumerate(keys)}
        self._layout = (keys, id_width, text_width)
        table = self.table
        table.set_columns(self._columns(store))
        table.set_rows(rows, self._cell, key=lambda r: r.task_id)
        self._shown = len(rows)
        if self._pending_task is not None:
            index = next((i for i, r in enumerate(rows) if r.task_id == self._pending_task), None)
            self._pending_task = None
            if index is not None:
                table.cursor_row = index
        self._show_count(store)
        self._show_triage()

    def on_resize(self) -> None:
        self._show_columns(self.app.store)  # one line per selector, or all on one, follows the height
        self.call_after_refresh(lambda: self.table.set_columns(self._columns(self.app.store)))

    # -- actions --------------------------------------------------------------------------------------------------
    def action_set_filter(self, name: str) -> None:
        if name in FILTERS:
            self.filter = name
            self.refresh_from_store()

    def action_next_filter(self) -> None:
        self.action_set_filter(FILTERS[(FILTERS.index(self.filter) + 1) % len(FILTERS)])

    def set_label_filter(self, label: str | None) -> None:
        self.label_filter = label
        self.refresh_from_store()

    def action_label_filter(self) -> None:
        """Choose a label to filter by (or any label, or the failures without one); on the chip: clear it."""
        store: EvalStore = self.app.store
        in_use = store.labels_in_use()
        done, total = store.triage_progress()

        def attempts(n: int) -> str:
            return f"{n} attempt{'s' * (n != 1)}"

        choices = [
            ("", "no label filter (every task)"),
            (ANY_LABEL, f"any label ({attempts(sum(in_use.values()))})"),
            (UNLABELLED, f"unlabelled failures ({attempts(total - done)})"),
        ]
        names = list(dict.fromkeys([*store.label_set, *in_use]))
        choices += [(name, f"{name} ({attempts(in_use.get(name, 0))})") for name in names]
        self.app.push_screen(
            LabelPickScreen("Show the tasks with an attempt carrying", choices, self.label_filter or ""),
            lambda value: None if value is None else self.set_label_filter(value or None),
        )

    # -- triage ---------------------------------------------------------------------------------------------------
    def _target_valid(self, store: EvalStore) -> bool:
        if self.target is None:
            return False
        col = store.columns.get(self.target[0])
        return col is not None and (self.target[1], self.target[2]) in col.records

    def _default_target(self) -> tuple[str, str, int] | None:
        row = self.table.cursor_value
        if row is None:
            return None
        attempts = row_attempts(self.app.store, row.task_id)
        return attempts[0] if attempts else None

    def chosen_attempt(self) -> tuple[str, str, int] | None:
        store: EvalStore = self.app.store
        row = self.table.cursor_value
        if row is not None and (self.target is None or self.target[1] != row.task_id or not self._target_valid(store)):
            self.target = self._default_target()
        return self.target if self._target_valid(store) else None

    def bulk_scope(self) -> tuple[str, list[tuple[str, str, int]]] | None:
        """Every failed attempt of the rows shown (the filter, the label filter and the search applied), in row
        order, then column and repeat."""
        store: EvalStore = self.app.store
        repeats = range(1, max(store.repeats, 1) + 1)
        attempts = []
        for row in self.table.rows:
            for key, col in store.columns.items():
                ix = col.index
                for r in repeats:
                    i = ix.row_of(row.task_id, r)
                    if i >= 0 and ix.failed_row(i):
                        attempts.append((key, row.task_id, r))
        n = len(self.table.rows)
        what = [FILTER_NAMES[self.filter]]
        if self.search:
            what.append(f"search '{one_line(self.search)[:30]}'")
        if self.label_filter is not None:
            what.append(label_filter_name(self.label_filter))
        return f"the {n} task{'s' * (n != 1)} shown ({' · '.join(what)})", attempts

    def walk_from(self) -> tuple[str, str, int] | None:
        """After the attempt the walk showed last; from the top of the walk when the target is not one it showed."""
        return self.target if self.target is not None and self.target == self._walked else None

    def show_failure(self, failure: Failure) -> None:
        """Put the cursor on the failure's task (clearing the filters and search that hide it) and target it."""
        self.target = self._walked = (failure.key, failure.task_id, failure.repeat)
        self._walked_group = GROUP_NAMES[failure.group]
        rows = self.table.rows
        index = next((i for i, r in enumerate(rows) if r.task_id == failure.task_id), None)
        if index is not None:
            self.table.cursor_row = index
            self._show_triage()
            return
        self.filter, self.label_filter, self.search = "all", None, ""
        self.query_one("#tasks-search", Input).value = ""
        self._pending_task = failure.task_id
        self.refresh_from_store()

    def action_next_attempt(self) -> None:
        """Target the row's next attempt (what 1-9, 0 and n act on)."""
        row = self.table.cursor_value
        if row is None:
            return
        attempts = row_attempts(self.app.store, row.task_id)
        if not attempts:
            self.notify(f"No attempt of {row.task_id} yet", severity="warning")
            return
        current = self.chosen_attempt()
        i = attempts.index(current) if current in attempts else -1
        self.target = self._walked = attempts[(i + 1) % len(attempts)]
        self._walked_group = ""
        self._show_triage()

    def _show_triage(self) -> None:
        """The target attempt (status, score, labels) and the triage progress, on one line."""
        store: EvalStore = self.app.store
        self._theme_styles()
        strip = self.query_one("#tasks-triage", Static)
        target = self.chosen_attempt()
        text = Text(no_wrap=True, overflow="ellipsis")
        if target is None:
            text.append(progress_text(store), style="dim")
            show_text(strip, text)
            return
        key, task, repeat = target
        rec = store.columns[key].records[(task, repeat)]
        failed = is_failure(rec, store.threshold)
        text.append("▶ ", style=self._styles.get("accent", ""))
        text.append(f"{one_line(key)} · {one_line(task)} · repeat {repeat}", style="bold")
        text.append(f"  {rec.status} {rec.judge.score:.2f}", style=self._styles["bad" if failed else "good"])
        if self._walked == target and self._walked_group:
            text.append(f" ({self._walked_group})", style="dim")
        ann = annotation_text(store.annotation(key, task, repeat), rec.judge.score)
        text.append("  ")
        text.append_text(Text(one_line(ann.plain.replace("\n", "  "))) if ann else Text("no label", style="dim"))
        text.append(f"   {progress_text(store)} · a other attempt · n note · u next unlabelled · ", style="dim")
        text.append_text(keys_text(store.label_set))
        show_text(strip, text)

    def on_virtual_table_row_highlighted(self, message: VirtualTable.RowHighlighted) -> None:
        self._show_triage()

    def action_search(self) -> None:
        self.query_one("#tasks-search", Input).focus()

    def action_sort(self) -> None:
        keys = sort_keys(self.app.store)
        self.set_sort(keys[(keys.index(self.sort) + 1) % len(keys)] if self.sort in keys else "id")

    def set_sort(self, key: str, reverse: bool = False) -> None:
        self.sort, self.reverse = key, reverse
        self.refresh_from_store()

    def action_reverse(self) -> None:
        self.set_sort(self.sort, not self.reverse)

    def action_baseline(self) -> None:
        store: EvalStore = self.app.store
        keys = store.keys
        if not keys:
            return
        store.set_baseline(keys[(keys.index(store.baseline) + 1) % len(keys)] if store.baseline in keys else keys[0])
        if self.sort == f"delta:{store.baseline}":  # the baseline has no delta column any more
            self.sort, self.reverse = "id", False
        self.notify(f"Baseline: {store.baseline}", timeout=3)
        self.refresh_from_store()

    def action_details(self) -> None:
        """The selectors in the header: one line each (commit, mean, errors), or all on one line."""
        self.details = self.compact(self.app.store)
        self.refresh_from_store()

    def action_sort_pick(self) -> None:
        """Choose the sort column directly (s steps through them one by one)."""
        store: EvalStore = self.app.store
        names = {"mean": "mean", "solved": "solved once", "delta": f"Δ vs {store.baseline}"}

        def name(key: str) -> str:
            if key == "id":
                return "task id"
            kind, _, label = key.partition(":")
            return f"{label}: {names[kind]}"

        self.app.push_screen(
            LabelPickScreen("Sort the table by", [(k, name(k)) for k in sort_keys(store)], self.sort),
            lambda key: None if key is None else self.set_sort(key, self.reverse if key == self.sort else False),
        )

    def action_toggle_outputs(self) -> None:
        self.outputs = not self.outputs
        self.refresh_from_store()

    def _step_repeat(self, step: int) -> None:
        if not self.outputs:
            self.outputs = True
        else:
            n = max(self.app.store.repeats, 1)
            self.repeat = (self.repeat - 1 + step) % n + 1
        self.refresh_from_store()

    def action_prev_repeat(self) -> None:
        self._step_repeat(-1)

    def action_next_repeat(self) -> None:
        self._step_repeat(1)

    def action_take_out(self) -> None:
        """Choose a shown selector and take it out of the view (History, + here, puts it back)."""
        store: EvalStore = self.app.store
        if not store.columns:
            self.notify("Nothing in the view: + adds evaluations from History", severity="warning")
            return
        choices = [(k, f"{k}  ({c.selector}, {c.done} attempts)") for k, c in store.columns.items()]
        self.app.push_screen(
            LabelPickScreen("Take out of the view (History, +, puts it back)", choices),
            lambda key: None if not key else self.app.take_out([key]),
        )

    def action_errors(self) -> None:
        self.app.goto("errors")

    def action_history(self) -> None:
        self.app.goto("history")

    def action_compare(self) -> None:
        self.app.goto("compare")

    def action_clear_slice(self) -> None:
        """Every task again, after the Slices screen opened this table on one slice."""
        if self.only is None:
            return
        self.only = None
        self.refresh_from_store()

    def action_review(self) -> None:
        self.app.goto("review")

    def action_versions(self) -> None:
        """The highlighted task through every evaluation of the run (why it changed, part 4)."""
        row = self.table.cursor_value
        if row is not None:
            self.app.goto("versions", task_id=row.task_id)

    def action_back(self) -> None:
        if isinstance(self.focused, Input):
            self.table.focus()
        else:
            self.app.pop_screen()

    # -- events ---------------------------------------------------------------------------------------------------
    def on_virtual_table_header_clicked(self, message: VirtualTable.HeaderClicked) -> None:
        if message.column_key == "text" or message.column_key.startswith("out:"):
            return
        self.set_sort(message.column_key, not self.reverse if message.column_key == self.sort else False)

    def on_virtual_table_row_selected(self, message: VirtualTable.RowSelected) -> None:
        if self.outputs:
            self.app.goto("attempt", task_id=message.row.task_id, repeat=self.repeat, tab="side")
        elif self.target is not None and self.target == self._walked and self.target[1] == message.row.task_id:
            # on the attempt the walk (u) or the user (a) chose
            self.app.goto("attempt", task_id=message.row.task_id, key=self.target[0], repeat=self.target[2])
        else:
            self.app.goto("attempt", task_id=message.row.task_id)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "tasks-search":
            return
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(SEARCH_DEBOUNCE_S, lambda: self._apply_search(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "tasks-search":
            return
        if self._debounce is not None:
            self._debounce.stop()
        self._apply_search(event.value)
        self.table.focus()

    def _apply_search(self, value: str) -> None:
        if value != self.search:
            self.search = value
            self.refresh_from_store()
