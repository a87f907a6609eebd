"""VirtualTable: lazy rendering of large row sets, cursor movement, mouse, messages, header alignment."""

from __future__ import annotations

from rich.style import Style
from textual.app import App, ComposeResult
from textual.geometry import Size

from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable

# Three columns: content widths 6, 8, 10, each padded by one cell either side -> 8 + 10 + 12 = 30 cells.
COLUMNS = [VColumn("a", "A", 6), VColumn("b", "B", 8, "right"), VColumn("c", "C", 10)]
N = 50_000


class TableApp(App):
    """A table filling a 40x12 screen: one header line and 11 body lines, no scrollbars at 30 cells wide."""

    def __init__(self, columns=COLUMNS, rows=None):
        super().__init__()
        self.columns, self.rows_in = columns, rows if rows is not None else list(range(N))
        self.rendered: list[tuple[int, str]] = []
        self.messages: list = []

    def render_cell(self, row, key: str) -> str:
        self.rendered.append((row, key))
        return f"{key}{row}"

    def compose(self) -> ComposeResult:
        yield VirtualTable()

    def on_mount(self) -> None:
        table = self.query_one(VirtualTable)
        table.set_columns(self.columns)
        table.set_rows(self.rows_in, self.render_cell)
        table.focus()

    def on_virtual_table_row_highlighted(self, message: VirtualTable.RowHighlighted) -> None:
        self.messages.append(("highlighted", message.row_index, message.row))

    def on_virtual_table_row_selected(self, message: VirtualTable.RowSelected) -> None:
        self.messages.append(("selected", message.row_index, message.row))

    def on_virtual_table_header_clicked(self, message: VirtualTable.HeaderClicked) -> None:
        self.messages.append(("header", message.column_key))


def lines(table: VirtualTable, n: int) -> list[str]:
    return [table.render_line(y).text for y in range(n)]


async def test_setting_50000_rows_renders_nothing_until_painted_then_only_the_visible_rows():
    app = TableApp()
    table = VirtualTable()
    table.set_columns(COLUMNS)
    table.set_rows(app.rows_in, app.render_cell)  # not mounted: nothing can be painted yet
    assert app.rendered == []
    assert table.virtual_size == Size(30, N + 1)  # header line + one line per row

    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(VirtualTable)
        assert {row for row, _ in app.rendered} == set(range(11))
        assert len(app.rendered) == 11 * 3  # each visible cell once: later paints come from the cache
        app.rendered.clear()
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == N - 1
        assert {row for row, _ in app.rendered} <= set(range(N - 11, N))
        assert lines(table, 12)[-1].rstrip() == "›a49999    b49999  c49999"  # the cursor row: marked without colour


async def test_cursor_keys_and_page_down_move_the_cursor_and_the_scroll_follows():
    app = TableApp()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.press("down", "down", "down", "up")
        assert table.cursor_row == 2
        await pilot.press("pagedown")  # one page is the 11 body lines
        assert table.cursor_row == 13
        assert table.scroll_y == 3  # rows 3..13 on screen: the cursor on the last body line
        assert lines(table, 12)[11].startswith("›a13 ")
        await pilot.press("pageup")
        assert table.cursor_row == 2 and table.scroll_y == 2
        await pilot.press("home")
        assert table.cursor_row == 0 and table.scroll_y == 0
        await pilot.press("up")  # clamped at the top
        assert table.cursor_row == 0
        await pilot.pause()
        highlighted = [m[1] for m in app.messages if m[0] == "highlighted"]
        assert highlighted == [0, 1, 2, 3, 2, 13, 2, 0]


async def test_click_moves_the_cursor_and_a_click_on_the_cursor_row_or_enter_selects_it():
    app = TableApp()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.click(VirtualTable, offset=(3, 4))  # line 4 is row 3 (line 0 is the header)
        assert table.cursor_row == 3
        assert ("selected", 3, 3) not in app.messages
        await pilot.click(VirtualTable, offset=(20, 4))
        await pilot.pause()
        assert ("selected", 3, 3) in app.messages
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.messages[-1] == ("selected", 4, 4)


async def test_header_click_names_the_column_under_the_mouse():
    app = TableApp()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.click(VirtualTable, offset=(10, 0))  # cells 8..17 are column b
        await pilot.click(VirtualTable, offset=(25, 0))  # cells 18..29 are column c
        await pilot.pause()
        assert [m for m in app.messages if m[0] == "header"] == [("header", "b"), ("header", "c")]
        assert table.cursor_row == 0


async def test_horizontal_scroll_moves_header_and_body_together():
    wide = [VColumn("a", "A", 6), VColumn("b", "B", 8, "right"), VColumn("c", "Cee", 30)]  # 8 + 10 + 32 = 50
    app = TableApp(columns=wide, rows=list(range(100)))
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        header, first = lines(table, 2)
        assert header.startswith(" A" + " " * 14 + "B  Cee ")
        assert first.startswith("›a0" + " " * 12 + "b0  c0 ")  # the cursor row
        table.scroll_to(x=9, animate=False, immediate=True)
        await pilot.pause()
        header, first = lines(table, 2)
        # both lines lose their first 9 cells: B and b0 stay right-aligned in the same column
        assert header.startswith("       B  Cee ")
        assert first.startswith("      b0  c0 ")
        assert header.index("Cee") == first.index("c0") == 10


async def test_unset_widths_are_measured_from_the_header_and_the_first_200_rows_only():
    rows = list(range(1000))  # rows 0..199 give "a0".."a199" (4 cells); "a999" is never measured but fits too
    rows[500] = 10**12  # a long value beyond the sample: truncated with an ellipsis, never measured
    app = TableApp(columns=[VColumn("a", "Label", None), VColumn("b", "B", 3)], rows=rows)
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        assert table.column_widths == [5, 3]  # "Label" is wider than "a199"
        assert {row for row, key in app.rendered if key == "a"} == set(range(200))
        table.cursor_row = 500
        await pilot.pause()
        assert any(line.startswith("›a100… ") for line in lines(table, 12))


async def test_replacing_rows_keeps_the_cursor_on_the_same_row_object():
    app = TableApp(rows=list(range(100)))
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        table.cursor_row = 5
        await pilot.pause()
        app.messages.clear()
        table.set_rows(list(range(99, -1, -1)), key=lambda r: r)  # reversed: 5 is now at index 94
        await pilot.pause()
        assert table.cursor_row == 94 and table.cursor_value == 5
        assert 94 in range(int(table.scroll_y), int(table.scroll_y) + 11)
        table.set_rows([r for r in range(100) if r != 5], key=lambda r: r)  # gone: the index is kept
        await pilot.pause()
        assert table.cursor_row == 94 and table.cursor_value == 95
        assert app.messages == [("highlighted", 94, 95)]
        table.set_rows([], key=lambda r: r)
        await pilot.pause()
        assert table.cursor_row == 0 and table.cursor_value is None
        assert lines(table, 2)[1].strip() == ""


async def test_zebra_stripes_and_cursor_use_the_component_classes():
    app = TableApp(rows=list(range(10)))
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        table.zebra_stripes = True
        table.cursor_row = 2
        await pilot.pause()
        styles = [list(table.render_line(y))[0].style for y in range(5)]
        assert all(style is not None for style in styles)
        bg = [style.bgcolor for style in styles if style is not None]
        header, row0, row1, row2, row3 = bg
        cursor = table.get_component_rich_style("virtual-table--cursor").bgcolor
        even = table.get_component_rich_style("virtual-table--even-row").bgcolor
        assert header == table.get_component_rich_style("virtual-table--header").bgcolor
        assert row0 == even and row2 == cursor and row1 == row3 != even


def cell_styles(table: VirtualTable, y: int) -> list[tuple[str, Style]]:
    """(character, style) for every cell of line ``y`` as drawn (every segment of the table is styled)."""
    cells = [(ch, seg.style) for seg in table.render_line(y) for ch in seg.text]
    assert all(style is not None for _, style in cells)
    return [(ch, style) for ch, style in cells if style is not None]


async def test_cells_keep_their_colours_spans_and_truncation_and_the_cursor_wins_over_them():
    from rich.text import Text

    values = {
        0: ["plain", Text("0.50", style="red"), Text.assemble(("0.67", "green"), ("J", "bold magenta"))],
        1: ["two\nlines", Text("toolongvalue", style="blue"), Text("a\tb", style="yellow")],
    }

    class Styled(TableApp):
        def render_cell(self, row, key):
            return values[row % 2]["abc".index(key)]

    app = Styled(rows=[0, 1, 2])
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        table.cursor_row = 2
        await pilot.pause()
        base = table.rich_style
        cursor = table.get_component_rich_style("virtual-table--cursor")
        row0, row1, row2 = cell_styles(table, 1), cell_styles(table, 2), cell_styles(table, 3)
        # layout: pad, 6 left-justified, pad | pad, 8 right-justified, pad | pad, 10 left-justified, pad
        assert "".join(ch for ch, _ in row0)[:30] == " plain  " + "     0.50 " + " 0.67J      "
        red, green, magenta = (Style.parse(c).color for c in ("red", "green", "magenta"))
        assert {s.color for _, s in row0[13:17]} == {red} and {s.bgcolor for _, s in row0[13:17]} == {base.bgcolor}
        assert {s.color for _, s in row0[19:23]} == {green}
        assert row0[23][1].color == magenta and row0[23][1].bold
        assert {s.color for _, s in row0[:8]} == {base.color}  # plain cells and padding: the table's own style
        text1 = "".join(ch for ch, _ in row1)
        assert text1[:8] == " two l… " and text1[9:17] == "toolong…" and text1[19:22] == "a b"
        assert {s.color for _, s in row1[9:17]} == {Style.parse("blue").color}  # truncated, still blue
        # the cursor row: every cell takes the cursor's colours, over the cells' own
        assert "".join(ch for ch, _ in row2)[:30] == "›plain  " + "     0.50 " + " 0.67J      "  # the mark
        assert {s.bgcolor for _, s in row2[:30]} == {cursor.bgcolor}
        assert {s.color for _, s in row2[:30]} == {cursor.color}


async def test_left_and_right_scroll_a_column_at_a_time_past_the_fixed_ones():
    """Issue 27 (finding 10): Right brings the next column beside the fixed ones, not one cell further."""
    wide = [VColumn("a", "A", 6), VColumn("b", "B", 8, "right"), VColumn("c", "Cee", 30), VColumn("d", "D", 30)]
    app = TableApp(columns=wide, rows=list(range(100)))
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(VirtualTable)
        table.fixed_columns = 1
        table.focus()
        await pilot.pause()
        # widths with their padding: a 8 (fixed), b 10, c 32, d 32; scrolling starts after the fixed 8
        await pilot.press("right")
        await pilot.pause()
        assert round(table.scroll_x) == 10  # b scrolled away: c beside a
        header = lines(table, 1)[0]
        assert header.startswith(" A" + " " * 6 + " Cee")
        await pilot.press("right")
        await pilot.pause()
        assert round(table.scroll_x) == min(42, round(table.max_scroll_x))
        await pilot.press("left", "left")
        await pilot.pause()
        assert round(table.scroll_x) == 0
