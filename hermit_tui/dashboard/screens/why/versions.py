"""One task through every version: the task's marks and means in every evaluation of the run (none, root, each
checkpoint by step, final, archived and hermit-written ones) as one row, then one line per evaluation, and the run's
checkpoints as a curve on test, marked as description only. Read in a worker (``core.why.versions.task_versions``);
opened with ``V`` from the per-task table and the drill-down."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Header, Static

from hermit_tui.core.errors import InputError
from hermit_tui.core.why.text import point_name
from hermit_tui.core.why.versions import CURVE_NOTE, GLYPH, MARKS_SHORT, CheckpointCurve, TaskVersions, VersionRow
from hermit_tui.core.why.versions import task_versions as read_versions
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen, opened
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.plots import StatPlot
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable

MARK_STYLE = {"solved": "green", "unsolved": "", "error": "bold red", "judge_error": "bold red"}
COLUMNS = [
    VColumn("name", "evaluation", None),
    VColumn("marks", "marks", 8),
    VColumn("task", "task", 5, "right"),
    VColumn("eval", "eval", 5, "right"),
    VColumn("by", "by", 10),
    VColumn("commit", "commit", 7),
    VColumn("note", "", None),
]


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def marks_text(row: VersionRow) -> Text:
    text = Text()
    for m in row.marks:
        text.append(GLYPH[m.mark], style=MARK_STYLE[m.mark])
    return text if row.marks else Text("—", style="dim")


def strip_text(tv: TaskVersions) -> Text:
    """Every evaluation on this split as one row: its name, its marks, the task's mean."""
    text = Text()
    shown = [r for r in tv.rows if r.problem is None and r.on_test]
    for i, r in enumerate(shown):
        text.append(" │ " if i else "", style="dim")
        text.append(f"{r.name} ", style="bold")
        text.append_text(marks_text(r))
        text.append(f" {_num(r.task_mean)}")
    return text


class CurvePlot(StatPlot):
    """The run's checkpoints on test: the mean and its 95% interval at root, each checkpoint and final; the task's
    own mean beside them."""

    EMPTY = "No checkpoint of the run on this test split"
    data: tuple[CheckpointCurve, str] | None

    def draw(self, plt: Any, data: tuple[CheckpointCurve, str]) -> None:
        curve, task = data
        points = curve.points
        if not points:
            plt.title(self.EMPTY)
            return
        xs = list(range(1, len(points) + 1))
        main, other = self.series_colours()
        for x, p in zip(xs, points):
            if p.ci_low is not None and p.ci_high is not None:
                plt.plot([x, x], [p.ci_low, p.ci_high], color=main, marker="│")
        known = [(x, p.mean) for x, p in zip(xs, points) if p.mean is not None]
        if known:
            plt.plot([x for x, _ in known], [m for _, m in known], color=main, marker="dot")
            plt.scatter([x for x, _ in known], [m for _, m in known], color=main, marker="●", label="test mean, 95%")
        mine = [(x, p.task_mean) for x, p in zip(xs, points) if p.task_mean is not None]
        if task and mine:
            plt.scatter([x for x, _ in mine], [m for _, m in mine], color=other, marker="x", label=task)
        plt.xticks(xs, [point_name(p) for p in points])
        plt.xlim(0.6, len(points) + 0.4)
        plt.ylim(0, 1.05)
        plt.yticks([0, 0.25, 0.5, 0.75, 1.0])
        plt.title("Checkpoints on test: description only")


class VersionsScreen(HermitScreen[None]):
    """``task_id`` through every evaluation of the run, and the run's checkpoints on test."""

    CSS_PATH = [style("versions.tcss")]
    BINDINGS = bindings.VERSIONS

    def __init__(self, task_id: str):
        super().__init__()
        self.task_id = task_id
        self.versions: TaskVersions | None = None
        self.problem: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"{self.task_id} through every version · reading…", style="italic"), id="versions-title")
        yield Static("", id="versions-strip")
        yield VirtualTable(id="versions-rows")
        yield Static(Text(f"Checkpoints on test: {CURVE_NOTE}", style="yellow"), id="versions-note")
        yield CurvePlot(id="versions-curve")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Through every version"
        self.query_one("#versions-rows", VirtualTable).set_columns(COLUMNS)
        self.start()

    @property
    def ready(self) -> bool:
        return self.versions is not None or self.problem is not None

    def start(self) -> None:
        self.versions, self.problem = None, None
        try:
            config, taskset = opened(self.app)
        except RuntimeError as exc:
            self._failed(str(exc))
            return
        test_ids, task, threshold = list(taskset.test_ids), self.task_id, self.app.store.threshold
        run_dir = config.run_dir

        def work() -> None:
            try:
                found = read_versions(run_dir, task, test_ids, threshold)
            except InputError as exc:
                self.app.call_from_thread(self._failed, str(exc))
                return
            self.app.call_from_thread(self._show, found)

        self.app.paced_worker(self, work, exclusive=True, group="why", name="versions")

    def _failed(self, message: str) -> None:
        self.problem = message
        self.query_one("#versions-title", Static).update(Text(f"{self.task_id} through every version", style="bold"))
        self.query_one("#versions-strip", Static).update(Text(message, style="bold red"))

    def _show(self, tv: TaskVersions) -> None:
        self.versions = tv
        self.query_one("#versions-title", Static).update(
            Text.assemble(
                (f"{tv.task} through every version", "bold"), f" · {len(tv.rows)} evaluations · ", (MARKS_SHORT, "dim")
            )
        )
        self.query_one("#versions-strip", Static).update(strip_text(tv))
        table = self.query_one("#versions-rows", VirtualTable)

        def render(row: VersionRow, col: str) -> Text | str:
            if col == "name":
                return Text(row.name, style="bold" if row.archived_at is None else "")
            if col == "marks":
                return marks_text(row)
            if col == "task":
                return _num(row.task_mean)
            if col == "eval":
                return _num(row.eval_mean)
            if col == "by":
                return row.written_by or "—"
            if col == "commit":
                return row.commit[:7] if row.commit else "—"
            if row.problem is not None:
                return Text(f"unreadable: {row.problem}", style="red")
            if not row.on_test:
                return Text("another split: not on the curve", style="yellow")
            same = tv.curve.same_as.get(row.label) if row.archived_at is None else None
            return Text(f"the commit of {same}", style="dim") if same else ""

        table.set_rows(tv.rows, render, key=lambda r: (r.label, r.archived_at))
        note = Text(f"Checkpoints on test: {CURVE_NOTE}", style="yellow")
        missing = [n for n in tv.notes if n.startswith("no checkpoint")]  # the other notes are the table's
        if missing:
            note.append(f" · {missing[0]}", style="dim")
        self.query_one("#versions-note", Static).update(note)
        self.query_one(CurvePlot).show((tv.curve, tv.task))
        table.focus()

    def focus_main(self) -> None:
        self.query_one("#versions-rows", VirtualTable).focus()

    def action_refresh(self) -> None:
        self.start()

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["CurvePlot", "VersionsScreen", "marks_text", "strip_text"]
