"""Rows of a key and its value, drawn as a two-column ``Table.grid`` draws them, at a fraction of its cost.

The setup screen's protocol (a dozen rows) was a Rich ``Table.grid``: a table measures every cell, then renders
each one, and Textual renders a widget's content twice on a screen's first show (once for its height, once to
paint it), so the protocol was a third of the setup screen's first show, the longest step of opening a config
(``benchmarks/bench_dashboard.py``, ``config_open_s``). :class:`KeyValueRows` wraps each value (long words folded)
beside the keys' column and nothing else: the same lines, no measuring pass.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

KEY_STYLE = Style(bold=True)
ELLIPSIS = "…"


class Tail(str):
    """A value shown whole when it fits, else its end after an ellipsis on one line (a path: the file and the
    folders nearest it say the most; folded, ``run.yaml`` broke into ``run.yam`` and ``l``)."""


def _tail(value: str, width: int) -> Text:
    if cell_len(value) <= width:
        return Text(value)
    kept = value
    while kept and cell_len(kept) > width - 1:
        kept = kept[1:]
    return Text(ELLIPSIS + kept)


class KeyValueRows:
    """``rows`` of (key, value): each key in bold in a column at least ``min_key_width`` wide (never wrapped), then
    ``gap`` spaces, then the value wrapped to the width left (a word longer than that is folded); a value's own
    line breaks are kept. An empty key continues the row above (the setup screen's list of checks). A :class:`Tail`
    value stays on one line: its end after an ellipsis when it does not fit."""

    def __init__(self, rows: Iterable[tuple[str, str | Text]], *, min_key_width: int = 12, gap: int = 2):
        given = list(rows)
        self.rows: list[tuple[str, Text]] = [(key, v if isinstance(v, Text) else Text(v)) for key, v in given]
        self.tails = {i for i, (_, v) in enumerate(given) if isinstance(v, Tail)}
        self.key_width = max([min_key_width, *(cell_len(key) for key, _ in self.rows)])
        self.gap = gap

    @property
    def _left(self) -> int:
        return self.key_width + self.gap

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((cell_len(line) for _, value in self.rows for line in value.plain.split("\n")), default=0)
        return Measurement(min(self._left + 1, options.max_width), min(self._left + widest, options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        left = self._left
        new_line = Segment.line()
        if options.max_width < left + 8:  # too narrow for a column of values: each key on a line above its value
            for key, value in self.rows:
                if key:
                    head = Text(key)
                    head.truncate(options.max_width, overflow="ellipsis")
                    yield Segment(head.plain, KEY_STYLE)
                    yield new_line
                yield from console.render(value, options.update(overflow="fold"))
            return
        width = options.max_width - left
        blank = Segment(" " * left)
        for n, (key, value) in enumerate(self.rows):
            if n in self.tails:
                lines = [_tail(value.plain, width)]
            else:
                lines = list(value.wrap(console, width, overflow="fold", no_wrap=False)) or [Text("")]
            for i, line in enumerate(lines):
                if i == 0:
                    yield Segment(key + " " * (left - cell_len(key)), KEY_STYLE)
                else:
                    yield blank
                segments = line.render(console)  # Text.render leaves out the text's own style without spans
                yield from Segment.apply_style(segments, console.get_style(line.style)) if line.style else segments
                yield new_line


__all__ = ["KeyValueRows", "Tail"]
