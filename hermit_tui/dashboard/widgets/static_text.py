"""Putting new text in a Static without a needless layout.

``Static.update`` repaints the widget and, by default, lays out the whole screen again, in case its height changed.
The per-task table's header lines are updated on every store change (each evaluation read, each live batch): the
same text most of the time, the same number of lines nearly always. :func:`show_text` leaves an unchanged widget
alone and repaints a changed one without a layout when its height has not changed (a fixed height, or text that
wraps to as many lines as before at the widget's width: measured, as a layout would).
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

ShownText = Text | Content | str


def same_text(a: object, b: ShownText) -> bool:
    """Whether ``a`` draws exactly as ``b`` does (characters and styles; Rich's and Textual's own ``==`` compare the
    characters only)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return (
            a.plain == b.plain
            and a.spans == b.spans
            and a.style == b.style
            and a.justify == b.justify
            and a.overflow == b.overflow
            and a.no_wrap == b.no_wrap
            and a.end == b.end
        )
    if isinstance(a, Content) and isinstance(b, Content):
        return a.plain == b.plain and a.spans == b.spans
    return isinstance(a, str) and isinstance(b, str) and a == b


def show_text(widget: Static, text: ShownText) -> bool:
    """Show ``text`` in ``widget``; False when it was already shown."""
    if same_text(widget.content, text):
        return False
    width, height = widget.styles.width, widget.styles.height
    if height is not None and height.is_cells and not (width is not None and width.is_auto):
        widget.update(text, layout=False)  # a fixed box: only its inside changes
        return True
    region = widget.content_region
    if not region or (width is not None and width.is_auto):  # not laid out yet, or as wide as its text
        widget.update(text)
        return True
    widget.update(text, layout=False)
    widget.clear_cached_dimensions()
    parent = widget.parent
    container = parent.size if isinstance(parent, Widget) else widget.app.size
    if widget.get_content_height(container, widget.app.size, region.width) != region.height:
        widget.refresh(layout=True)  # the text wraps to another number of lines
    return True
