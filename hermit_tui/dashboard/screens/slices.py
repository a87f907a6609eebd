"""Slices: where the compared pair helps and where it hurts. The test tasks cut by a field of the task rows (each
value its slice; each value of a list field its own), and per slice both selectors' means and the pair's difference
with its interval, its p-value adjusted over the slices (Benjamini–Hochberg, for screening) and the Holm-adjusted
test of "this slice is hurt", as ``report --slice-by`` and ``gate --slice-by`` compute them (``core.stats.slices``).
A slice too small to show anything says so with its minimum detectable difference. ``enter`` opens the per-task
table on the highlighted slice's tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Header, Select, Static

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import p_value
from hermit_tui.core.stats.slices import MIN_TASKS, Slice, SlicePair, SliceReport, groups_by_field, slice_report
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen, opened, shown_pair
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable

MAX_SLICES = 100  # a field with more distinct values is not offered (a per-task field, not a grouping)
READING_STYLE = {"hurt": "bold red"}


def sliceable_fields(tasks: Mapping[str, Mapping[str, object]], test_ids: Sequence[str]) -> list[str]:
    """The fields of the test tasks' rows that group them: 2 to MAX_SLICES distinct values (a list field counts
    each of its values), not one value per task; ``category`` first, then by name."""
    values: dict[str, set[str]] = {}
    for tid in test_ids:
        for key, value in tasks.get(tid, {}).items():
            if key == "id" or isinstance(value, dict):
                continue
            seen = values.setdefault(key, set())
            if len(seen) > MAX_SLICES:
                continue
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if v is not None and v != "":
                    seen.add(str(v))
    n = len(test_ids)
    fields = [k for k, seen in values.items() if 2 <= len(seen) <= MAX_SLICES and (len(seen) < n or n <= 2)]
    return sorted(fields, key=lambda k: (k != "category", k))


def _num(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _ci(p: SlicePair) -> str:
    return "—" if p.ci_low is None or p.ci_high is None else f"[{p.ci_low:+.2f}, {p.ci_high:+.2f}]"


class SlicesScreen(HermitScreen[None]):
    """The compared pair's figures per slice of the test tasks, adjusted over the slices."""

    CSS_PATH = [style("slices.tcss")]
    BINDINGS = bindings.SLICES

    def __init__(self, a: str | None = None, b: str | None = None, field: str | None = None):
        super().__init__()
        self.a, self.b = a, b
        self.field = field
        self.report: SliceReport | None = None
        self.problem: str | None = None
        self.fields: list[str] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="slices-bar"):
            yield Static("Slice by ", id="slices-label")
            yield Select([], id="slices-field", allow_blank=True, prompt="a field of the task rows", compact=True)
        yield Static("", id="slices-title")
        yield VirtualTable(id="slices-table")
        yield Static("", id="slices-note")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Slices"
        _, taskset = opened(self.app)
        tasks, test_ids = taskset.tasks, list(taskset.test_ids)
        # every test task's row is looked at: off the event loop (111,112 tasks take a while)
        self.query_one("#slices-title", Static).update(Text("reading the task rows' fields…", style="italic"))

        def work() -> None:
            fields = sliceable_fields(tasks, test_ids)
            self.app.call_from_thread(self._fields_ready, fields)

        self.run_worker(work, thread=True, exclusive=True, group="slices-fields", name="slice-fields")

    def _fields_ready(self, fields: list[str]) -> None:
        self.fields = fields
        select = self.query_one("#slices-field", Select)
        select.set_options([(f, f) for f in self.fields])
        if self.field not in self.fields:
            self.field = self.fields[0] if self.fields else None
        if self.field is None:
            self._failed(
                "No field of the task rows groups the test tasks (2 to "
                f"{MAX_SLICES} values, not one per task): add one, such as a category, to the task rows"
            )
            return
        with select.prevent(Select.Changed):
            select.value = self.field
        self.start()

    @property
    def ready(self) -> bool:
        return self.report is not None or self.problem is not None

    def start(self) -> None:
        from hermit_tui.core.records.scores import tabulate

        self.report, self.problem = None, None
        field = self.field
        try:
            _, taskset = opened(self.app)
            a, b = self.a, self.b = shown_pair(self.app, self.a, self.b, "Slices need")
            if field is None:
                raise InputError("choose a field to slice by")
            groups = groups_by_field(taskset.tasks, taskset.test_ids, field)
        except (InputError, RuntimeError) as exc:
            self._failed(str(exc))
            return
        store = self.app.store
        snapshots = {label: store.columns[label].index.snapshot() for label in (a, b)}
        test_ids, threshold = list(store.task_ids), store.threshold
        self.query_one("#slices-title", Static).update(Text(f"{b} − {a} · computing…", style="italic"))

        def work() -> None:
            try:
                tables = {label: tabulate(s, test_ids, threshold) for label, s in snapshots.items()}
                report = slice_report(groups, tables, [(a, b)], test_ids, by=field)
            except (InputError, ValueError) as exc:
                self.app.call_from_thread(self._failed, str(exc))
                return
            self.app.call_from_thread(self._show, report, (a, b, field))

        self.run_worker(work, thread=True, exclusive=True, group="slices", name="slices")

    def _failed(self, message: str) -> None:
        self.problem = message
        self.query_one("#slices-title", Static).update("")
        self.query_one("#slices-note", Static).update(Text(message, style="bold red"))

    def _show(self, report: SliceReport, key: tuple[str | None, str | None, str | None]) -> None:
        if key != (self.a, self.b, self.field):
            return  # the user moved on while it was computed
        self.report = report
        a, b = self.a or "", self.b or ""
        table = self.query_one("#slices-table", VirtualTable)
        table.set_columns(
            [
                VColumn("slice", "slice", None),
                VColumn("tasks", "tasks", 5, "right"),
                VColumn("a", a[:12] or "a", 8, "right"),
                VColumn("b", b[:12] or "b", 8, "right"),
                VColumn("diff", "b − a", 7, "right"),
                VColumn("ci", "95% CI", 16),
                VColumn("p", "p", 7, "right"),
                VColumn("bh", "p BH", 7, "right"),
                VColumn("holm", "hurt Holm", 9, "right"),
                VColumn("wlt", "W/L/T", 8),
                VColumn("reading", "reading", None),
            ]
        )

        def render(row: Slice, col: str) -> Text | str:
            cell = _render(row, col)
            return Text(cell, style="dim") if row.pairs[0].too_small and isinstance(cell, str) else cell

        def _render(row: Slice, col: str) -> Text | str:
            pair = row.pairs[0]
            means = {s.label: s.mean for s in row.selectors}
            if col == "slice":
                return row.name
            if col == "tasks":
                return str(pair.n_paired)
            if col in ("a", "b"):
                return _num(means.get(a if col == "a" else b))
            if col == "diff":
                style = "red" if pair.hurt else ("green" if (pair.ci_low or 0) > 0 and not pair.too_small else "")
                return Text(_num(pair.mean_diff, signed=True), style=style) if style else _num(pair.mean_diff, True)
            if col == "ci":
                return _ci(pair)
            if col == "p":
                return p_value(pair.p_value) if pair.p_value is not None else "—"
            if col == "bh":
                return p_value(pair.p_bh) if pair.p_bh is not None else "—"
            if col == "holm":
                return p_value(pair.p_hurt_holm) if pair.p_hurt_holm is not None else "—"
            if col == "wlt":
                return f"{pair.wins}/{pair.losses}/{pair.ties}"
            return Text(
                ("HURT: " if pair.hurt else "") + pair.reading, style=READING_STYLE["hurt"] if pair.hurt else ""
            )

        table.set_rows(report.slices, render, key=lambda s: s.name)
        hurt = report.hurt()
        summary = (
            f"hurt: {', '.join(s.name for s, _ in hurt)}" if hurt else "no slice shown to be hurt"
        ) + f" · {len(report.slices)} slices by {report.by}"
        self.query_one("#slices-title", Static).update(
            Text.assemble((f"{b} − {a}", "bold"), "  ", (summary, "bold red" if hurt else ""))
        )
        unsliced = f" {report.unsliced} test tasks are in no slice." if report.unsliced else ""
        small = sum(p.too_small for s in report.slices for p in s.pairs)
        self.query_one("#slices-note", Static).update(
            Text(
                f"p BH: {report.fdr_method}, for screening · hurt Holm: the pair interval's one-sided test of a "
                f"drop {f'beyond −{report.margin:g}' if report.margin else 'below 0'}, {report.fwer_method} over the "
                f"slices, hurt at ≤ {report.hurt_alpha:g}"
                + (f" · {small} slices under {MIN_TASKS} paired tasks (dim) give no verdict" if small else "")
                + f".{unsliced} enter: the slice's tasks",
                style="dim",
            )
        )
        table.focus()

    def focus_main(self) -> None:
        self.query_one("#slices-table", VirtualTable).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "slices-field" or not isinstance(event.value, str):
            return
        self.field = event.value
        self.start()

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        event.stop()
        self._open(event.row)

    def _open(self, row: Slice) -> None:
        if self.field is None:
            return
        self.app.goto("tasks", only=(self.field, row.name, frozenset(row.task_ids)))

    def action_open_slice(self) -> None:
        row = self.query_one("#slices-table", VirtualTable).cursor_value
        if row is None:
            self.notify("No slice to open", severity="warning")
            return
        self._open(row)

    def action_pick_field(self) -> None:
        self.query_one("#slices-field", Select).focus()

    def action_refresh(self) -> None:
        self.start()

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["SlicesScreen", "sliceable_fields"]
