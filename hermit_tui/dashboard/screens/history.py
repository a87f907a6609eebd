"""History: earlier evaluations of this run read back from disk (current and archived, written by hermit-tui or by
``hermit eval`` itself, and the smoke checks kept apart under ``eval/<label>/smoke/``), chosen with space and put side
by side with the ones already shown."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Header, Input, Static
from textual.worker import get_current_worker

from hermit_tui.core.present import cost_text, fixed, incomplete_caveat, partial_cost, retry_caveat, smoke_caveat
from hermit_tui.core.records import folders as evalstore
from hermit_tui.core.records.folders import StoredEvaluation
from hermit_tui.core.safe import line as one_line
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.screens.picker import display_path
from hermit_tui.dashboard.state.store import selector_rank
from hermit_tui.dashboard.widgets.banners import DEMO_TEXT
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.textfield import TextField
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable

COLUMNS = [  # the mark and the label stay put when the table scrolls sideways; the figures come first
    VColumn("mark", "", width=3),
    VColumn("label", "label"),
    VColumn("view", "view", width=5),  # "shown": in the view (x takes it out, enter puts it in)
    VColumn("mean", "mean", width=5, justify="right"),
    VColumn("size", "tasks×rep", justify="right"),
    VColumn("solved", "solved once", justify="right"),
    VColumn("errors", "errors", justify="right"),
    VColumn("cost", "cost", justify="right"),
    VColumn("when", "archived (UTC)", width=19),
    VColumn("commit", "commit", width=7),
    VColumn("adapter", "adapter"),
    VColumn("source", "source"),
    VColumn("notes", "notes", width=56),  # cut with …: the detail below spells it out
]
FIXED = 2


def tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"


def archived_text(stamp: str | None) -> str:
    """``20260102T030405Z`` (the archive folder's name) as ``2026-01-02 03:04:05``; other names as they are."""
    if stamp is None:
        return "current"
    base, _, n = stamp.partition("-")
    try:
        shown = datetime.strptime(base, "%Y%m%dT%H%M%SZ").strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return stamp
    return f"{shown} #{n}" if n else shown


def problem_text(stored: StoredEvaluation) -> str:
    """Why the summary could not be read, without the folder's own path (shown elsewhere) or pydantic's URL."""
    text = (stored.problem or "").replace(f"{stored.folder}/", "").replace(str(stored.folder), ".")
    return re.sub(r"\s*For further information visit \S+", "", text)


def marks(stored: StoredEvaluation) -> list[tuple[str, str]]:
    """(text, style) notes for a row: incomplete, smoke, retries, unreadable."""
    s = stored.summary
    if s is None:
        return [(problem_text(stored), "bold red")]
    out = []
    if not s.is_complete:
        out.append(("incomplete", "yellow"))
    if stored.smoke:
        out.append((f"smoke check ({tasks(s.smoke_limit) if s.smoke_limit else 'subset'})", "yellow"))
    elif s.is_smoke:
        out.append((f"smoke ({tasks(s.smoke_limit) if s.smoke_limit else 'subset'})", "yellow"))
    if s.retries:
        out.append((f"{s.retries} retried", "yellow"))
    return out


def cell(stored: StoredEvaluation, key: str) -> Text | str:
    """The text of one column for one evaluation."""
    s = stored.summary
    if key == "label":
        return Text(stored.label, style="bold")
    if key == "when":
        if stored.archived:
            return archived_text(stored.archived_at)
        return Text("smoke check", style="yellow") if stored.smoke else Text("current", style="green")
    if key == "notes":
        text = Text()
        for i, (note, st) in enumerate(marks(stored)):
            text.append(", " if i else "")
            text.append(note, style=st)
        return text
    if s is None:
        return Text("—", style="dim")
    if key == "adapter":
        return s.adapter
    if key == "commit":
        return s.commit[:7] if s.commit else Text("—", style="dim")
    if key == "size":
        return f"{s.tasks}×{s.repeats}"
    if key == "mean":
        return fixed(s.mean_score)
    if key == "solved":
        return fixed(s.solved_once)
    if key == "errors":
        return Text(str(s.errors), style="red" if s.errors else "")
    if key == "cost":  # a cost partly unknown: its known part and how many are not, in the detail line below
        return Text(cost_text(None), style="yellow") if s.cost_usd is None else cost_text(s.cost_usd)
    if key == "source":
        return "hermit" if s.written_by_hermit else "hermit-tui"
    return ""


class HistoryTable(VirtualTable):
    """The evaluations, one per row; a click in the first column toggles that row's selection."""

    class Toggled(Message):
        """A row's selection box was clicked."""

        def __init__(self, table: HistoryTable, row_index: int):
            super().__init__()
            self.table = table
            self.row_index = row_index

        @property
        def control(self) -> HistoryTable:
            return self.table

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        col = self.column_at_screen(offset.x)
        row = offset.y - 1 + round(self.scroll_y)
        if col is not None and col.key == "mark" and row < self.row_count:
            event.prevent_default()  # not the plain table's click (which would open on the cursor row)
            event.stop()
            self.cursor_row = row
            self.post_message(self.Toggled(self, row))


class HistoryScreen(HermitScreen[None]):
    """Every evaluation under ``<run dir>/eval``; space selects, Enter shows the selected ones side by side."""

    CSS_PATH = [style("history.tcss")]
    BINDINGS = bindings.HISTORY
    TITLE = "hermit-tui"
    SUB_TITLE = "history"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.evaluations: list[StoredEvaluation] = []
        self.selected: set[Path] = set()  # folders
        self._typing_folder = False  # the user went to the folder field (/): a late listing leaves the focus there

    def compose(self) -> ComposeResult:
        yield Header()
        if getattr(self.app, "is_demo", False):
            yield Static(DEMO_TEXT, classes="demo-banner")
        yield Static("", id="history-title", classes="section-title")
        yield HistoryTable(id="history-table", fixed_columns=FIXED)
        yield Static("", id="history-empty", classes="muted")
        yield Static("", id="history-detail")
        yield Static("", id="history-status", classes="muted")
        with Horizontal(id="open-row"):
            yield Static("Open folder…", id="open-label")
            yield TextField(placeholder="path of an eval folder (results.jsonl), then Enter", id="open-folder")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(HistoryTable)
        table.set_columns(COLUMNS)  # shown (empty) until the listing arrives, so that it has the focus from the start
        self.query_one("#history-empty").display = False
        title = "Evaluations"
        if self.run_dir is not None:
            title += f" under {display_path(evalstore.eval_root(self.run_dir))}"
        self.query_one("#history-title", Static).update(title)
        table.focus()

    @property
    def run_dir(self) -> Path | None:
        config = getattr(self.app, "config", None)
        return Path(config.run_dir) if config is not None else None

    # -- reading the disk -----------------------------------------------------------------------------------------
    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        """List the evaluations again, in a thread (it reads every summary.json)."""
        run_dir = self.run_dir
        if run_dir is None:
            self._listed([])
            return

        def read() -> None:
            found = evalstore.list_evaluations(run_dir, which="all")  # the smoke checks too
            if not get_current_worker().is_cancelled:
                self.app.call_from_thread(self._listed, found)

        self.run_worker(read, thread=True, exclusive=True, group="history-list", name="list-evaluations")

    def _listed(self, found: list[StoredEvaluation]) -> None:
        # as a launch orders its columns (none, root, checkpoints by step, final); each label's archive after it,
        # newest first (list_evaluations' order within a label)
        rank = {id(e): i for i, e in enumerate(found)}
        found = sorted(
            found, key=lambda e: (selector_rank(e.summary.adapter if e.summary else e.label)[:-1], rank[id(e)])
        )
        self.evaluations = found
        folders = {e.folder for e in found}
        self.selected &= folders
        table = self.query_one(HistoryTable)
        table.display = bool(found)
        empty = self.query_one("#history-empty", Static)
        empty.display = not found
        where = display_path(evalstore.eval_root(self.run_dir)) if self.run_dir else "this run (open a config)"
        empty.update(
            f"No evaluations yet under {where}: go back to setup (escape) and launch some (l), or type the "
            "path of an evaluation folder below (/)."
        )
        self._show_rows()
        if found and not self._typing_folder:
            # shown only now: on mount the hidden table could not take the focus, and the screen gave it to the
            # folder field; the table takes it unless the user went to that field (/) on purpose
            table.focus()

    def _show_rows(self) -> None:
        table = self.query_one(HistoryTable)
        table.set_rows(list(self.evaluations), self._cell, key=lambda e: e.folder)
        self._show_detail(table.cursor_value)
        self._show_status()

    def _cell(self, stored: StoredEvaluation, key: str) -> Text | str:
        if key == "mark":
            return Text("[x]", style="bold") if stored.folder in self.selected else "[ ]"
        if key == "view":
            return Text("shown", style="bold") if self.shown_keys(stored) else ""
        return cell(stored, key)

    def shown_keys(self, stored: StoredEvaluation) -> list[str]:
        """The keys of the columns in the view that show this evaluation (read from its folder or written to it)."""
        columns = getattr(self.app.store, "columns", {})
        return [k for k, c in columns.items() if c.folder is not None and c.folder == stored.folder]

    def _show_detail(self, stored: StoredEvaluation | None) -> None:
        """The highlighted evaluation's folder, and what its marks mean (the notes column may be off screen)."""
        detail = self.query_one("#history-detail", Static)
        if stored is None:
            detail.update("")
            return
        text = Text(one_line(display_path(stored.folder)), style="bold")
        s = stored.summary
        if s is not None:
            when = "current" if not stored.archived else "archived " + archived_text(stored.archived_at)
            text.append(
                f"  {one_line(s.adapter)} · {one_line(s.commit[:7]) if s.commit else 'no commit'} · "
                f"{'smoke check, ' if stored.smoke else ''}{when} · "
                f"by {'hermit' if s.written_by_hermit else 'hermit-tui'}",
                style="dim",
            )
            if s.cost_usd is None:  # the column says only "unknown": the known part, and how many lack a cost
                known = partial_cost(s.known_cost_usd, s.unknown_cost_tasks, attempts=s.tasks * s.repeats)
                text.append(f" · cost {known}", style="yellow")
        if s is None:
            text.append(f"\n{one_line(problem_text(stored))}", style="red")
        else:
            if not s.is_complete:
                text.append(f"\n{incomplete_caveat()}", style="yellow")
            if stored.smoke:
                text.append(
                    f"\nsmoke check{' of ' + tasks(s.smoke_limit) if s.smoke_limit else ''}: a wiring check "
                    "kept apart from the evaluation; report, gate and publish use it only with --smoke",
                    style="yellow",
                )
            elif s.is_smoke:
                text.append(f"\n{smoke_caveat(s.smoke_limit)}", style="yellow")
            if s.retries:
                text.append(f"\n{retry_caveat(s.retries)}", style="yellow")
        detail.update(text)

    def _show_status(self) -> None:
        n = len(self.selected)
        shown = len(getattr(self.app.store, "columns", {}))
        text = f"{n} selected · Enter opens them" if n else "space selects · Enter opens the highlighted one"
        text += f" beside the {shown} shown · x takes out of the view" if shown else ""
        self.query_one("#history-status", Static).update(text)

    def on_hermit_app_store_updated(self, message) -> None:
        self._show_status()

    @on(VirtualTable.RowHighlighted, "#history-table")
    def _highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        self._show_detail(event.row)

    # -- choosing -------------------------------------------------------------------------------------------------
    def action_toggle_pick(self) -> None:
        stored = self.query_one(HistoryTable).cursor_value
        if stored is None:
            return
        self.selected ^= {stored.folder}
        self._show_rows()

    @on(HistoryTable.Toggled)
    def _clicked(self, event: HistoryTable.Toggled) -> None:
        self.action_toggle_pick()

    @on(VirtualTable.RowSelected, "#history-table")
    def _entered(self, event: VirtualTable.RowSelected) -> None:
        self.action_open_selected()

    def chosen(self) -> list[StoredEvaluation]:
        """The selected evaluations in table order, else the one under the cursor."""
        picked = [e for e in self.evaluations if e.folder in self.selected]
        if not picked:
            current = self.query_one(HistoryTable).cursor_value
            picked = [current] if current is not None else []
        return picked

    def action_open_selected(self) -> None:
        self.open(self.chosen())

    def action_take_out(self) -> None:
        """Take the selected evaluations (else the highlighted one) out of the view; History keeps listing them."""
        keys = [k for stored in self.chosen() for k in self.shown_keys(stored)]
        if not keys:
            self.notify("Not in the view: enter puts an evaluation in it", severity="warning", timeout=4)
            return
        self.app.take_out(keys)
        self.selected.clear()
        self._show_rows()

    def open(self, evaluations: list[StoredEvaluation]) -> None:
        if not evaluations:
            return
        self.selected.clear()
        self.app.add_stored(evaluations)
        self.app.goto("tasks")

    @on(Input.Submitted, "#open-folder")
    def _folder_entered(self, event: Input.Submitted) -> None:
        text = event.value.strip().strip("'\"")
        if not text:
            return
        folder = Path(text).expanduser()
        folder = folder if folder.is_absolute() else Path.cwd() / folder

        def read() -> None:
            if not (folder / evalstore.RESULTS).is_file():
                self.app.call_from_thread(
                    self.notify, f"{text}: not an evaluation folder (no results.jsonl)", severity="error", timeout=8
                )
                return
            stored = evalstore.open_evaluation(folder)
            self.app.call_from_thread(self.open, [stored])

        self.run_worker(read, thread=True, exclusive=True, group="history-open", name="open-folder")

    def focus_main(self) -> None:
        self._typing_folder = False
        table = self.query_one(HistoryTable)
        if table.display:
            table.focus()
        else:
            self.set_focus(None)

    def action_open_folder(self) -> None:
        self._typing_folder = True
        self.query_one("#open-folder", Input).focus()

    def action_back(self) -> None:
        self.app.pop_screen()
