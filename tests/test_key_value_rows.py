"""KeyValueRows draws what the two-column Table.grid it replaces drew: the same characters and styles, cell by cell,
at every width (the setup screen's protocol; a cheaper renderable must not change the screen)."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hermit_tui.dashboard.widgets.key_value import KeyValueRows

ROWS: list[tuple[str, str | Text]] = [
    ("run", "demo"),
    ("config", "run.yaml"),
    ("test split", "16 tasks  (train 8, val 4)"),
    ("agent params", "latency_scale=0.01, temperature=0.2, a_very_long_parameter_name_without_any_break=12345678"),
    ("judge", "judges/exact.py:judge"),
    ("order", Text("ordered stream (data.shuffle: false)", style="bold yellow")),
    ("timeout", "none"),
    ("checks", Text("warning: the test split has 3 tasks; a difference needs more to show", style="yellow")),
    ("", Text("error: two lines\nof one check", style="bold red")),
    ("a much longer key", "value"),
]


def grid(rows: list[tuple[str, str | Text]]) -> Table:
    table = Table.grid(padding=(0, 2, 0, 0))
    table.add_column(style="bold", no_wrap=True, min_width=12)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    return table


def cells(renderable: KeyValueRows | Table, width: int) -> list[list[tuple[str, str]]]:
    """Each line as (character, its style), trailing blanks dropped (a widget pads its lines to its width)."""
    console = Console(width=width, color_system="truecolor", legacy_windows=False)
    out = []
    for line in console.render_lines(renderable, console.options.update(width=width), pad=False):
        chars = [(ch, str(seg.style or "")) for seg in line for ch in seg.text]
        while chars and chars[-1][0] == " ":
            chars.pop()
        out.append([(ch, style if ch != " " else "") for ch, style in chars])
    while out and not out[-1]:
        out.pop()
    return out


@pytest.mark.parametrize("width", [27, 31, 40, 57, 80, 120])
@pytest.mark.parametrize("rows", [ROWS, ROWS[:3], [("k", "v")]], ids=["all", "short", "one"])
def test_the_rows_draw_as_the_grid_did(rows, width):
    assert cells(KeyValueRows(rows), width) == cells(grid(rows), width)


@pytest.mark.parametrize("width", [6, 12, 20, 26])
def test_too_narrow_for_a_column_each_key_is_above_its_value(width):
    lines = ["".join(ch for ch, _ in line) for line in cells(KeyValueRows(ROWS), width)]
    assert all(len(line) <= width for line in lines)
    assert "".join(lines).replace(" ", "") == "".join(
        (key if len(key) <= width else key[: width - 1] + "…") + str(value) for key, value in ROWS
    ).replace(" ", "").replace("\n", "")


def test_it_measures_as_wide_as_its_widest_row():
    console = Console(width=200)
    got = console.measure(KeyValueRows(ROWS[:3]))
    assert got.maximum == 14 + len("16 tasks  (train 8, val 4)")


def test_a_tail_value_stays_on_one_line_and_keeps_its_end():
    """A path (Tail) that does not fit shows its end after an ellipsis, exactly filling the value's column; one that
    fits shows whole, as a plain value would."""
    from hermit_tui.dashboard.widgets.key_value import Tail

    path = "cache2/hermit-tui/demo/run.yaml"  # 31 characters
    rows: list[tuple[str, str | Text]] = [("run", "demo"), ("config", Tail(path)), ("judge", "judge.py:score")]
    width = 14 + 20  # the key column (12 + a gap of 2) and 20 cells for the value
    lines = ["".join(ch for ch, _ in line) for line in cells(KeyValueRows(rows), width)]
    assert lines[1] == "config" + " " * 8 + "…" + path[-19:] and len(lines) == 3
    assert lines[1].endswith("demo/run.yaml")
    wide = ["".join(ch for ch, _ in line) for line in cells(KeyValueRows(rows), 80)]
    assert wide == ["".join(ch for ch, _ in line) for line in cells(grid(rows), 80)]
