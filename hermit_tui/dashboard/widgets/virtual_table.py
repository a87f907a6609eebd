"""A table that renders only the rows on screen, so 50,000 rows cost no more than 50.

``VirtualTable`` keeps the caller's row objects as they are and asks ``render(row, column_key)`` for a cell only
when that row is about to be painted (Textual's Line API). The header line stays put while the body scrolls
vertically and moves with it horizontally; the first ``fixed_columns`` columns stay put when it scrolls sideways.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hermit_tui.core.safe import ACTED_ON
from hermit_tui.core.safe import line as one_line

Cell = Text | str
Render = Callable[[Any, str], Cell]

MEASURE_ROWS = 200  # rows looked at to size a column whose width the caller left open
PAD = 1  # blank cells either side of every cell
CURSOR_MARK = "›"  # in the cursor row's first padding cell: the cursor reads without colour


@dataclass(frozen=True, slots=True)
class VColumn:
    """One column: ``width`` in cells (None: measured from the header and the first rows)."""

    key: str
    label: str | Text
    width: int | None = None
    justify: Literal["left", "right"] = "left"


def _flat(text: str) -> str:
    """``text`` on one line: newlines and tabs become blanks, the other control characters their visible escape
    (``core.safe.line``: a task id holding ``ESC]0;…`` shows as ``\\x1b]0;…``)."""
    if "\n" in text or "\t" in text:
        text = text.replace("\n", " ").replace("\t", " ")
    return one_line(text) if ACTED_ON.search(text) else text


def _as_text(value: Cell) -> Text:
    if isinstance(value, Text):
        flat = _flat(value.plain)
        if flat is not value.plain:
            value = value.copy()
            value.plain = flat
        return value
    return Text(_flat(str(value)))


class VirtualTable(ScrollView, can_focus=True):
    """A scrolling table of any number of rows; cells are rendered lazily, one visible row at a time."""

    BINDINGS: ClassVar = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First row", show=False),
        Binding("end", "last", "Last row", show=False),
        Binding("enter", "select", "Select", show=False),
        Binding("left", "column_left", "Previous column", show=False),
        Binding("right", "column_right", "Next column", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "virtual-table--header",
        "virtual-table--cursor",
        "virtual-table--even-row",
        "virtual-table--odd-row",
    }

    DEFAULT_CSS = """
    VirtualTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        & > .virtual-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .virtual-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .virtual-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .virtual-table--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .virtual-table--even-row {
            background: $surface-darken-1 40%;
        }
    }
    """

    cursor_row: reactive[int] = reactive(0, always_update=False)
    zebra_stripes: reactive[bool] = reactive(False)

    # -- messages -------------------------------------------------------------------------------------------------
    class _RowMessage(Message):
        def __init__(self, table: VirtualTable, row_index: int, row: Any):
            super().__init__()
            self.table = table
            self.row_index = row_index
            self.row = row

        @property
        def control(self) -> VirtualTable:
            return self.table

    class RowHighlighted(_RowMessage):
        """The cursor moved onto another row."""

    class RowSelected(_RowMessage):
        """Enter was pressed on a row, or the cursor row was clicked."""

    class HeaderClicked(Message):
        """A column's header was clicked."""

        def __init__(self, table: VirtualTable, column_key: str):
            super().__init__()
            self.table = table
            self.column_key = column_key

        @property
        def control(self) -> VirtualTable:
            return self.table

    # -- setup ----------------------------------------------------------------------------------------------------
    def __init__(
        self,
        *,
        zebra_stripes: bool = False,
        fixed_columns: int = 0,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ):
        super().__init__(name=name, id=id, classes=classes)
        self.fixed_columns = fixed_columns
        self._columns: list[VColumn] = []
        self._widths: list[int] = []
        self._rows: Sequence[Any] = ()
        self._render_cell: Render = lambda row, key: ""
        self._key: Callable[[Any], Hashable] | None = None
        self._cache: LRUCache[tuple[Any, ...], Strip] = LRUCache(1024)  # lines as drawn for self._view
        self._view: tuple[int, int, int] = (0, 0, 0)  # (width, scroll_x, fixed width) the cached lines were cut to
        self._style_set: tuple[Style, Style, Style, Style, Style] | None = None
        self._parsed: dict[str, Style] = {}
        self.set_reactive(VirtualTable.zebra_stripes, zebra_stripes)

    @property
    def columns(self) -> list[VColumn]:
        return list(self._columns)

    @property
    def rows(self) -> Sequence[Any]:
        return self._rows

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def column_widths(self) -> list[int]:
        """The content width of each column (without its padding)."""
        return list(self._widths)

    @property
    def cursor_value(self) -> Any | None:
        """The row object under the cursor, or None when the table is empty."""
        return self._rows[self.cursor_row] if self._rows else None

    def set_columns(self, columns: Sequence[VColumn]) -> None:
        columns = list(columns)
        if columns == self._columns and all(c.width is not None for c in columns):
            return  # the same columns (a resize that changes no width): the lines drawn stay right
        self._columns = columns
        self._measure()
        self._changed()

    def set_rows(
        self, rows: Sequence[Any], render: Render | None = None, *, key: Callable[[Any], Hashable] | None = None
    ) -> None:
        """Show ``rows``; ``render(row, column_key)`` is called only for rows being painted. ``key`` identifies a
        row across replacements (default: the object itself), so the cursor stays on it."""
        before = self.cursor_value
        old_key = self._key
        offset = self.cursor_row - round(self.scroll_y)  # the cursor's line on screen, kept if the row moves
        self._rows = rows
        if render is not None:
            self._render_cell = render
        self._key = key
        index = self._find(before, old_key) if before is not None else None
        if any(c.width is None for c in self._columns):
            self._measure()
        self._changed()
        new = min(index if index is not None else self.cursor_row, max(len(rows) - 1, 0))
        moved = index is not None and index != self.cursor_row
        self.set_reactive(VirtualTable.cursor_row, new)
        if moved:
            self.scroll_to(y=max(new - offset, 0), animate=False, immediate=True)
        self._scroll_cursor_into_view()
        if rows and (before is None or index is None):
            self.post_message(self.RowHighlighted(self, new, rows[new]))

    def _find(self, row: Any, old_key: Callable[[Any], Hashable] | None) -> int | None:
        if self._key is not None and old_key is not None:
            wanted = old_key(row)
            position = getattr(self._rows, "position", None)  # rows that find a key themselves (the store's)
            if position is not None:
                return position(wanted)
            make = self._key
            for i, candidate in enumerate(self._rows):
                if make(candidate) == wanted:
                    return i
            return None
        for i, candidate in enumerate(self._rows):
            if candidate is row:
                return i
        return None

    def _measure(self) -> None:
        sample: Sequence[Any] | None = None  # taken only when a column's width is open: rows may be built on access
        widths = []
        for col in self._columns:
            if col.width is not None:
                widths.append(max(col.width, 1))
                continue
            if sample is None:
                sample = self._rows[:MEASURE_ROWS] if self._rows else ()
            label = col.label.cell_len if isinstance(col.label, Text) else cell_len(col.label)
            widths.append(max([label, 1, *(_as_text(self._render_cell(row, col.key)).cell_len for row in sample)]))
        self._widths = widths

    def _changed(self) -> None:
        self._cache.clear()
        total = sum(w + 2 * PAD for w in self._widths)
        self.virtual_size = Size(total, len(self._rows) + 1)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_set = None
        self._parsed.clear()
        self._cache.clear()

    # -- cursor ---------------------------------------------------------------------------------------------------
    def validate_cursor_row(self, value: int) -> int:
        return max(0, min(value, len(self._rows) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh_line(old + 1)
        self.refresh_line(new + 1)
        self._scroll_cursor_into_view()
        if self._rows:
            self.post_message(self.RowHighlighted(self, new, self._rows[new]))

    @property
    def _body_height(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def _scroll_cursor_into_view(self) -> None:
        top = round(self.scroll_y)
        height = self._body_height
        row = self.cursor_row
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    def on_resize(self) -> None:
        self._scroll_cursor_into_view()

    def on_focus(self) -> None:
        self._style_set = None
        self._cache.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._style_set = None
        self._cache.clear()
        self.refresh()

    def action_cursor_up(self) -> None:
        self.cursor_row -= 1

    def action_cursor_down(self) -> None:
        self.cursor_row += 1

    def action_page_up(self) -> None:
        self.cursor_row -= self._body_height

    def action_page_down(self) -> None:
        self.cursor_row += self._body_height

    def action_first(self) -> None:
        self.cursor_row = 0

    def action_last(self) -> None:
        self.cursor_row = len(self._rows) - 1

    def action_select(self) -> None:
        if self._rows:
            self.post_message(self.RowSelected(self, self.cursor_row, self._rows[self.cursor_row]))

    def column_starts(self) -> list[int]:
        """Where each scrolling column starts, in cells of horizontal scroll (the fixed columns stay put)."""
        starts, left = [], 0
        for i, width in enumerate(self._widths):
            if i >= self.fixed_columns or not self.fixed_width:
                starts.append(left - (self.fixed_width if i >= self.fixed_columns else 0))
            left += width + 2 * PAD
        return [max(x, 0) for x in starts]

    def action_column_right(self) -> None:
        """Scroll one column to the right: the next column starts beside the fixed ones (a press per column, not per
        cell)."""
        x = round(self.scroll_x)
        after = [start for start in self.column_starts() if start > x]
        self.scroll_to(x=min(after[0], self.max_scroll_x) if after else self.max_scroll_x, animate=False)

    def action_column_left(self) -> None:
        x = round(self.scroll_x)
        before = [start for start in self.column_starts() if start < x]
        self.scroll_to(x=before[-1] if before else 0, animate=False)

    def column_at(self, x: int) -> VColumn | None:
        """The column under virtual x coordinate ``x`` (as if nothing were fixed)."""
        left = 0
        for col, width in zip(self._columns, self._widths):
            left += width + 2 * PAD
            if x < left:
                return col
        return None

    @property
    def fixed_width(self) -> int:
        """Cells taken by the fixed columns on the left (0 when they would leave no room to scroll)."""
        width = sum(w + 2 * PAD for w in self._widths[: self.fixed_columns])
        return width if width < self.scrollable_content_region.width - 4 else 0

    def column_at_screen(self, x: int) -> VColumn | None:
        """The column under content x coordinate ``x`` as drawn: fixed columns stay put, the others scroll."""
        fixed = self.fixed_width
        return self.column_at(x if x < fixed else x + round(self.scroll_x))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        event.stop()
        if offset.y == 0:
            col = self.column_at_screen(offset.x)
            if col is not None:
                self.post_message(self.HeaderClicked(self, col.key))
            return
        row = offset.y - 1 + round(self.scroll_y)
        if row >= len(self._rows):
            return
        if row == self.cursor_row:
            self.action_select()
        else:
            self.cursor_row = row

    # -- painting -------------------------------------------------------------------------------------------------
    # A line is built once as segments (no Text assembled and rendered per line, one Strip per line) and kept, cut to
    # the view, until the rows, the styles, the cursor on it or the horizontal view change: a full paint of a
    # 160x50 table costs ~40 lines of cell rendering, a cursor move two.
    def _styles(self) -> tuple[Style, Style, Style, Style, Style]:
        """The table's own style, then its header, cursor, odd-row and even-row styles (kept until restyled)."""
        cached = self._style_set
        if cached is None:
            part = self.get_component_rich_style
            cached = (
                self.rich_style,
                part("virtual-table--header"),
                part("virtual-table--cursor"),
                part("virtual-table--odd-row"),
                part("virtual-table--even-row"),
            )
            self._style_set = cached
        return cached

    def _cell_style(self, style: str | Style) -> Style | None:
        if isinstance(style, Style):
            return style
        if not style:
            return None
        parsed = self._parsed.get(style)
        if parsed is None:
            parsed = self.app.console.get_style(style, default=Style())
            self._parsed[style] = parsed
        return parsed

    def _cells(self, values: Sequence[Cell], style: Style, over: Style | None = None, marker: str = "") -> Strip:
        """One line of cells on ``style``; ``over`` (the cursor) wins over the cells' own colours; ``marker`` takes
        the first cell of padding (the cursor row's, which reads without colour)."""
        pad_style = style + over if over is not None else style
        segments: list[Segment] = []
        add = segments.append
        pad = " " * PAD
        pending = ""  # blank cells not yet added (joined with the next cell's)
        lead = pad
        if marker:
            add(Segment(marker, pad_style))
            lead = pad[len(marker) :]  # the first cell's padding, less the marker
        total = 0
        for col, width, value in zip(self._columns, self._widths, values):
            plain: str | None = None
            cell_style: Style | None = None
            if isinstance(value, str):
                plain = _flat(value)
            elif not value._spans:
                plain = _flat(value.plain)
                cell_style = self._cell_style(value.style)
            parts: list[Segment]
            if plain is not None and (length := cell_len(plain)) <= width:
                parts = (
                    [
                        Segment(
                            plain,
                            pad_style
                            if cell_style is None
                            else (style + cell_style + over if over is not None else style + cell_style),
                        )
                    ]
                    if plain
                    else []
                )
            else:
                text = _as_text(value)
                if text.cell_len > width:
                    text = text.copy()
                    text.truncate(width, overflow="ellipsis")
                length = text.cell_len
                cell = Text(end="")
                cell.append_text(text)  # the cell's own style becomes a span: rendered like its spans
                parts = list(Segment.apply_style(cell.render(self.app.console), style, over))
            gap = " " * (width - length)
            if col.justify == "right":
                pending += lead + gap
                after = pad
            else:
                pending += lead
                after = gap + pad
            if pending:
                add(Segment(pending, pad_style))
            segments.extend(parts)
            pending, lead = after, pad
            total += width + 2 * PAD
        if pending:
            add(Segment(pending, pad_style))
        return Strip(segments, total)

    def _row_strip(self, index: int) -> tuple[Strip, Style]:
        cursor = index == self.cursor_row
        base, _header, cursor_style, odd, even = self._styles()
        if cursor:
            style = cursor_style
        elif self.zebra_stripes:
            style = odd if index % 2 else even
        else:
            style = base
        row = self._rows[index]
        cells = [self._render_cell(row, c.key) for c in self._columns]
        return self._cells(cells, style, style if cursor else None, CURSOR_MARK if cursor else ""), style

    def _header_strip(self) -> tuple[Strip, Style]:
        style = self._styles()[1]
        return self._cells([c.label for c in self._columns], style), style

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = round(self.scroll_x)
        fixed = self.fixed_width
        view = (width, scroll_x, fixed)
        if view != self._view:
            self._cache.clear()
            self._view = view
        if y == 0:
            key: tuple[Any, ...] = ("header",)
        else:
            index = y - 1 + round(self.scroll_y)
            if index >= len(self._rows):
                return Strip.blank(width, self._styles()[0])
            key = (index, index == self.cursor_row, self.zebra_stripes)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        strip, style = self._header_strip() if y == 0 else self._row_strip(key[0])
        if not fixed or not scroll_x:
            line = strip.crop_extend(scroll_x, scroll_x + width, style)
        else:
            line = Strip.join([strip.crop(0, fixed), strip.crop_extend(fixed + scroll_x, scroll_x + width, style)])
        self._cache[key] = line
        return line
