"""The per-task table's drawing, for :class:`~hermit_tui.dashboard.screens.tasks.TasksScreen`: its columns (the
sort arrow on the sorted one), its cells in the theme's colours (a selector's mean with the grid's failure marks,
solved once, the delta to the baseline, or in the outputs mode each selector's output with the words that differ
from the baseline's highlighted), and the header lines above it (the selectors, the filter chips, the count). A
mixin of the screen, which owns the state it reads (declared here for the type checker only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text
from textual.color import Color, ColorParseError
from textual.content import Content
from textual.widgets import Static

from hermit_tui.core.present import fixed
from hermit_tui.core.safe import line as one_line
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.screens.task_cells import compare_pair, error_marks, label_filter_name, output_of, task_text
from hermit_tui.dashboard.state.store import FILTER_NAMES, FILTERS, EvalStore, Filter, TaskRow
from hermit_tui.dashboard.widgets.attempt_grid import ERROR, JUDGE_ERROR, mark_for
from hermit_tui.dashboard.widgets.diff_view import diff_words
from hermit_tui.dashboard.widgets.static_text import show_text
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable

COMPACT_BELOW = 30  # terminal lines: below this, more than three selectors share one header line (i: one each)
MEAN_WIDTH = 12  # widest a mean column gets: a longer selector name ends in an ellipsis (the header has it whole)
NO_DATA = "—"
CHIPS = {
    "all": "all",
    "errors": "errors",
    "regressions": "regressions",
    "improvements": "improvements",
    "flaky": "flaky",
    "unknown_cost": "unknown cost",
}


class TaskTable(HermitScreen[None]):
    """The table's columns and cells, and the header lines over it."""

    if TYPE_CHECKING:  # the screen's, set in TasksScreen.__init__
        filter: Filter
        only: tuple[str, str, frozenset[str]] | None
        sort: str
        reverse: bool
        outputs: bool
        repeat: int
        label_filter: str | None
        details: bool | None
        _col_index: dict[str, int]
        _styles: dict[str, Style]
        _styles_theme: str
        _shown: int
        _layout: tuple[list[str], int, int]

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#tasks-table", VirtualTable)

    # -- columns and cells ----------------------------------------------------------------------------------------
    def _label(self, text: str, sort_key: str) -> Text:
        label = Text(text)
        if sort_key == self.sort:
            label.append(" ▼" if self.reverse else " ▲", style=self._styles["accent"])
        return label

    def _columns(self, store: EvalStore) -> list[VColumn]:
        """The table's columns; the task text takes what is left of the width (at least 9 cells, then scroll)."""
        keys, id_width, text_width = self._layout

        def column(key: str, label: str, width: int, justify: str = "right") -> VColumn:
            text = self._label(label, key)
            return VColumn(key, text, max(width, text.cell_len), justify)  # type: ignore[arg-type]

        cols = [column("id", "task", max(id_width, 4) + 2, "left")]
        if self.outputs:
            room = self.table.size.width - 2 - ((cols[0].width or 0) + 2)
            each = max(24, room // max(len(keys), 1) - 2)
            for key in keys:
                label = Text(key, style="bold")
                if key == store.baseline:
                    label.append(" (baseline)", style=self._styles["accent"])
                cols.append(VColumn(f"out:{key}", label, each, "left"))
            return cols
        for key in keys:
            name = key if len(key) <= MEAN_WIDTH else key[: MEAN_WIDTH - 1] + "…"  # the header has it whole
            cols.append(column(f"mean:{key}", name, max(len(name), 6) + 1))
            cols.append(column(f"solved:{key}", "✓", 1, "left"))
            if key != store.baseline:
                cols.append(column(f"delta:{key}", "Δ", 5))
        if text_width:
            room = self.table.size.width - 2 - sum((c.width or 0) + 2 for c in cols)  # 2: the vertical scrollbar
            cols.append(VColumn("text", "task text", max(min(text_width, room), 9)))
        return cols

    def _cell(self, row: TaskRow, key: str) -> Text | str:
        if key == "id":
            return row.task_id
        if key == "text":
            return Text(task_text(self.app.store, row.task_id), style=self._styles["muted"])
        kind, _, name = key.partition(":")
        if kind == "out":
            return self._output_cell(row.task_id, name)
        i = self._col_index.get(name)
        cell = row.cells[i] if i is not None and i < len(row.cells) else None
        if cell is None or cell.mean is None:
            return Text(NO_DATA, style=self._styles["muted"])
        if kind == "mean":
            marks = error_marks(cell)
            if not marks:
                return f"{cell.mean:.2f}"
            if cell.errors + cell.judge_errors >= cell.n:  # nothing but failures: no score to speak of
                return Text(marks, style=self._styles["bad"] + Style(bold=True))
            return Text.assemble(f"{cell.mean:.2f}", (marks, self._styles["bad"] + Style(bold=True)))
        if kind == "solved":
            return Text("✓", style=self._styles["good"]) if cell.solved_once else Text("·", self._styles["muted"])
        delta = row.deltas[i] if i is not None else None
        if delta is None:
            return Text(NO_DATA, style=self._styles["muted"])
        if abs(delta) < 0.005:
            return Text("0.00", style=self._styles["muted"])
        return Text(f"{delta:+.2f}", style=self._styles["good" if delta > 0 else "bad"])

    def _output_cell(self, task_id: str, key: str) -> Text:
        """One selector's output for a task (the repeat chosen with [ and ]), its mark first; the words that differ
        from the baseline's output are highlighted (bold and underlined: legible without colour)."""
        store: EvalStore = self.app.store
        col = store.columns.get(key)
        rec = col.records.get((task_id, self.repeat)) if col is not None else None
        if rec is None:
            return Text(NO_DATA, style=self._styles["muted"])
        glyph, cls = mark_for(rec.status, rec.judge.score, store.threshold)
        tone = {"attempt-grid--pass": "good", "attempt-grid--partial": "accent"}.get(cls, "bad")
        text = Text()
        text.append(glyph, style=self._styles[tone])
        text.append(" ")
        mine = output_of(rec)
        base_col = store.columns.get(store.baseline) if store.baseline else None
        base = base_col.records.get((task_id, self.repeat)) if base_col is not None and key != store.baseline else None
        if base is None:
            text.append(mine, style=self._styles["muted"] if rec.status != "ok" else "")
            return text
        for part, kind in diff_words(output_of(base), mine)[1]:
            text.append(part, style=self._styles["changed"] if kind == "added" else "")
        return text

    def _theme_styles(self) -> None:
        """Rich styles for the cells from the current theme's colours (worked out again when the theme changes)."""
        if self._styles and self._styles_theme == self.app.theme:
            return
        variables = self.app.get_css_variables()

        def colour(name: str, fallback: str) -> Style:
            try:
                return Style(color=Color.parse(variables[name]).rich_color)
            except (KeyError, ColorParseError):
                return Style(color=fallback)

        self._styles_theme = self.app.theme
        self._styles = {
            "good": colour("success", "green"),
            "bad": colour("error", "red"),
            "accent": colour("accent", "cyan"),
            "muted": Style(dim=True),
            "changed": colour("warning", "yellow") + Style(bold=True, underline=True),
        }

    # -- header lines ---------------------------------------------------------------------------------------------
    def compact(self, store: EvalStore) -> bool:
        """The selectors on one line (i shows one line each): on a short terminal with more than three of them."""
        if self.details is not None:
            return not self.details
        return len(store.columns) > 3 and self.app.size.height < COMPACT_BELOW

    @staticmethod
    def _header_name(key: str, col: Any) -> str:
        """A selector's name in the header lines: its label, and the selector it was given as when that differs
        (``demo_ckpt-step-1 (demo/ckpt-step-1)``), so that the columns after it line up under the longest."""
        return one_line(key) + (f" ({one_line(col.selector)})" if col.selector != key else "")

    def _show_columns(self, store: EvalStore) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        names = {key: self._header_name(key, col) for key, col in store.columns.items()}
        width = max((len(name) for name in names.values()), default=0)
        if store.columns and self.compact(store):
            text.append(f"{len(store.columns)} selectors (i) ", style="dim")
            for i, (key, col) in enumerate(store.columns.items()):
                text.append(" · " if i else "", style="dim")
                if key == store.baseline:
                    text.append("● ", style=self._styles["accent"])
                text.append(one_line(key), style="bold")
                text.append(f" {fixed(col.mean)}" if col.mean is not None else f" {NO_DATA}")
                if col.running:
                    text.append(f" {col.done}/{col.expected}", style=self._styles["accent"])
        for i, (key, col) in enumerate(store.columns.items() if not self.compact(store) else []):
            text.append("\n" if i else "")
            base = key == store.baseline
            text.append("● " if base else "  ", style=self._styles["accent"])
            label, given_as = one_line(key), names[key][len(one_line(key)) :]  # given_as: " (the selector)" or ""
            text.append(label if given_as else label.ljust(width), style="bold")
            if given_as:
                text.append(given_as.ljust(width - len(label)))
            text.append(f"  {col.commit[:7]:<9}" if col.commit else "  no commit", style="" if col.commit else "dim")
            text.append(f"  mean {fixed(col.mean)}" if col.mean is not None else f"  mean {NO_DATA:<5}")
            errors = col.errors + col.judge_errors
            text.append(
                f"  errors {errors}" + (f" ({col.judge_errors} judge)" if col.judge_errors else ""),
                style=self._styles["bad"] if errors else "",
            )
            if col.running:
                text.append(f"  running {col.done}/{col.expected}", style=self._styles["accent"])
            if base:
                text.append("  baseline", style=self._styles["accent"])
        if store.columns and self.outputs:
            text.append(
                f"\noutputs, repeat {self.repeat}/{store.repeats} ([ ]) · differences from {store.baseline} "
                "highlighted · o: scores",
                style="dim",
            )
        elif store.columns:
            text.append(
                f"\nmeans ({ERROR} pipeline, {JUDGE_ERROR} judge error = 0) · ✓ solved once · Δ vs "
                f"{store.baseline} (b) · o outputs",
                style="dim",
            )
        else:
            text.append(
                "No evaluations yet: go back to setup (escape) and launch (l), or open earlier ones from history (h).",
                style="dim",
            )
        show_text(self.query_one("#tasks-columns", Static), text)

    def _show_filters(self, store: EvalStore) -> None:
        parts: list[str] = []
        for name in FILTERS:
            label = f" {CHIPS[name]} "
            link = f"[@click=screen.set_filter('{name}')]{label}[/]"
            parts.append(f"[reverse b]{link}[/]" if name == self.filter else link)
        content = Content.from_markup("".join(parts) + "  ")
        chip = f" {label_filter_name(self.label_filter)} × " if self.label_filter is not None else " label… "
        chip_link = Content.from_markup("[@click=screen.label_filter()]$chip[/]", chip=chip)
        content += chip_link.stylize("reverse bold") if self.label_filter is not None else chip_link
        if self.only is not None:
            field, value = self.only[0], self.only[1]
            sliced = Content.from_markup("  [@click=screen.clear_slice()]$chip[/]", chip=f" {field} = {value} × ")
            content += sliced.stylize("reverse bold")
        show_text(self.query_one("#tasks-filters", Static), content)

    def _show_count(self, store: EvalStore) -> None:
        text = f"{self._shown} of {len(store.task_ids)} tasks · {FILTER_NAMES[self.filter]}"
        pair = compare_pair(store)
        if self.filter in ("regressions", "improvements"):
            text = f"{text}: {pair[1]} vs {pair[0]}" if pair else f"{text}: needs two evaluations"
        if self.label_filter is not None:
            text += f" · {label_filter_name(self.label_filter)}"
        if self.only is not None:
            text += f" · slice {self.only[0]} = {self.only[1]}"
        show_text(self.query_one("#tasks-count", Static), Text(text))
