"""Two texts side by side with their differences highlighted: lines are matched with difflib, and within a changed
line the words are matched too. Removed text is red, added text green (theme colours, via component classes)."""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Literal, cast

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.worker import get_current_worker

Kind = Literal["same", "removed", "added"]
Segment = tuple[str, Kind]
#: One aligned row: (left line number, left segments) and (right line number, right segments); None = no line.
Side = tuple[int, list[Segment]] | None
Row = tuple[Side, Side]

WORKER_THRESHOLD = 20_000  # characters: bigger pairs of texts are diffed in a thread
MAX_ROWS = 5_000  # rows drawn at most (a note says how many more there are)

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def _words(line: str) -> list[str]:
    return _TOKEN.findall(line)


def diff_words(a: str, b: str) -> tuple[list[Segment], list[Segment]]:
    """The segments of a changed line on each side: unchanged words are "same", the others removed/added."""
    wa, wb = _words(a), _words(b)
    left: list[Segment] = []
    right: list[Segment] = []
    ops = SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes()
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        # a lone space between two changes reads as part of the change
        inner = 0 < n < len(ops) - 1 and not "".join(wa[i1:i2]).strip()
        if tag == "equal" and not inner:
            left.append(("".join(wa[i1:i2]), "same"))
            right.append(("".join(wb[j1:j2]), "same"))
            continue
        if i2 > i1:
            left.append(("".join(wa[i1:i2]), "removed"))
        if j2 > j1:
            right.append(("".join(wb[j1:j2]), "added"))
    return _merge(left), _merge(right)


def _merge(segments: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for text, kind in segments:
        if out and out[-1][1] == kind:
            out[-1] = (out[-1][0] + text, kind)
        elif text:
            out.append((text, kind))
    return out


def diff_rows(a: str, b: str) -> list[Row]:
    """Align the lines of ``a`` (left) and ``b`` (right); paired changed lines get a word diff."""
    la, lb = a.splitlines(), b.splitlines()
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [
                ((i + 1, [(la[i], "same")]), (j + 1, [(lb[j], "same")])) for i, j in zip(range(i1, i2), range(j1, j2))
            ]
            continue
        n = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(n):
            left, right = diff_words(la[i1 + k], lb[j1 + k])
            rows.append(((i1 + k + 1, left), (j1 + k + 1, right)))
        rows += [((i + 1, [(la[i], "removed")]), None) for i in range(i1 + n, i2)]
        rows += [(None, (j + 1, [(lb[j], "added")])) for j in range(j1 + n, j2)]
    return rows


def changed_words(rows: list[Row]) -> tuple[list[str], list[str]]:
    """The removed texts (left) and added texts (right) of a diff, in order."""
    removed = [t for left, _ in rows if left for t, k in left[1] if k == "removed"]
    added = [t for _, right in rows if right for t, k in right[1] if k == "added"]
    return removed, added


class _DiffBody(Widget):
    """The rendered rows (a table keeps both sides of a row aligned even when a long line wraps)."""

    DEFAULT_CSS = "_DiffBody { height: auto; }"

    def render(self) -> Table:
        return cast("DiffView", self.parent).table()


class DiffView(VerticalScroll):
    """Two texts side by side, differences highlighted. ``compare(left, right)`` shows a new pair; ``rows`` holds
    the aligned rows last computed (large pairs are diffed in a worker, then ``rows`` is set)."""

    COMPONENT_CLASSES = {"diff--removed", "diff--added", "diff--number", "diff--title"}
    DEFAULT_CSS = """
    DiffView { height: 1fr; }
    DiffView > .diff--removed { background: $error 35%; color: $text; }
    DiffView > .diff--added { background: $success 35%; color: $text; }
    DiffView > .diff--number { color: $text-muted; }
    DiffView > .diff--title { text-style: bold; color: $accent; }
    """

    def __init__(
        self,
        left: str = "",
        right: str = "",
        *,
        left_title: str = "",
        right_title: str = "",
        id: str | None = None,
        classes: str | None = None,
    ):
        super().__init__(id=id, classes=classes)
        self.rows: list[Row] = []
        self.titles = (left_title, right_title)
        self.pending = False
        self._pair: tuple[str, str] | None = None
        self._initial = (left, right)

    def compose(self) -> ComposeResult:
        yield _DiffBody()

    def on_mount(self) -> None:
        self.compare(*self._initial, *self.titles)

    def compare(self, left: str, right: str, left_title: str | None = None, right_title: str | None = None) -> None:
        """Show ``left`` against ``right`` (in a worker thread when they are large)."""
        titles = self.titles if left_title is None and right_title is None else (left_title or "", right_title or "")
        if self._pair == (left, right):
            if titles != self.titles:
                self.titles = titles
                self._redraw()
            return
        self.titles = titles
        self._pair = (left, right)
        if len(left) + len(right) <= WORKER_THRESHOLD:
            self.rows, self.pending = diff_rows(left, right), False
            self._redraw()
            return
        self.pending = True
        self._redraw()
        self.run_worker(
            lambda: self._diff_in_thread(left, right), thread=True, exclusive=True, group="diff", name="diff"
        )

    def _diff_in_thread(self, left: str, right: str) -> None:
        rows = diff_rows(left, right)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._computed, (left, right), rows)

    def _computed(self, pair: tuple[str, str], rows: list[Row]) -> None:
        if pair == self._pair:
            self.rows, self.pending = rows, False
            self._redraw()

    def _redraw(self) -> None:
        if self.is_mounted:
            body = self.query_one(_DiffBody)
            body.refresh(layout=True)

    # -- drawing --------------------------------------------------------------------------------------------------
    def styles_of(self) -> dict[str, str | Style]:
        """The Rich styles of the segment kinds (from the theme)."""
        return {
            "same": "",
            "removed": self.get_component_rich_style("diff--removed"),
            "added": self.get_component_rich_style("diff--added"),
        }

    def table(self) -> Table:
        style = self.styles_of()
        number = self.get_component_rich_style("diff--number")
        title = self.get_component_rich_style("diff--title")
        digits = len(str(max((s[0] for row in self.rows for s in row if s), default=1)))
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(width=digits, justify="right", style=number)
        grid.add_column(ratio=1, overflow="fold")
        grid.add_column(width=digits, justify="right", style=number)
        grid.add_column(ratio=1, overflow="fold")
        grid.add_row("", Text(self.titles[0], style=title), "", Text(self.titles[1], style=title))
        if self.pending:
            grid.add_row("", Text("comparing…"), "", "")
            return grid
        if not self.rows:
            grid.add_row("", Text("(both empty)"), "", "")
        for left, right in self.rows[:MAX_ROWS]:
            cells: list = []
            for side in (left, right):
                if side is None:
                    cells += ["", ""]
                else:
                    cells += [str(side[0]), Text.assemble(*((t, style[k]) for t, k in side[1]))]
            grid.add_row(*cells)
        if len(self.rows) > MAX_ROWS:
            grid.add_row("", Text(f"… {len(self.rows) - MAX_ROWS} more lines not shown"), "", "")
        return grid
