"""On/off that reads without colour: ``[x]`` and ``[ ]`` instead of Textual's ``▐X▌`` drawn in two colours (which
look the same with ``NO_COLOR`` or on a monochrome terminal)."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.content import Content
from textual.strip import Strip
from textual.widgets import Checkbox, OptionList, SelectionList
from textual.widgets.option_list import OptionDoesNotExist

ON, OFF = "[x]", "[ ]"
MARK = "›"  # before the highlighted row's box while the list has the focus: the cursor reads without colour


class CheckList(SelectionList):
    """A SelectionList whose boxes are ``[x]`` (ticked, bold) and ``[ ]`` (not ticked), the highlighted row marked
    ``›`` while the list has the focus."""

    DEFAULT_CSS = """
    CheckList > .selection-list--button-selected, CheckList > .selection-list--button-selected-highlighted {
        color: $success; text-style: bold; background: transparent;
    }
    CheckList > .selection-list--button, CheckList > .selection-list--button-highlighted {
        color: $text-muted; background: transparent;
    }
    """

    def _get_left_gutter_width(self) -> int:
        return len(MARK) + len(ON) + 1

    def render_line(self, y: int) -> Strip:
        line = OptionList.render_line(self, y)
        index = self.scroll_offset.y + y
        try:
            selection = self.get_option_at_index(index)
        except OptionDoesNotExist:
            return line
        ticked = selection.value in self._selected
        component = "selection-list--button" + ("-selected" if ticked else "")
        if self.highlighted == index:
            component += "-highlighted"
        underlying = next(iter(line)).style or self.rich_style
        box = self.get_component_rich_style(component) + Style(bgcolor=underlying.bgcolor, meta={"option": index})
        mark = MARK if self.highlighted == index and self.has_focus else " "
        return Strip([Segment(mark, underlying), Segment(ON if ticked else OFF, box), Segment(" ", underlying), *line])


class TickBox(Checkbox):
    """A Checkbox drawn as ``[x] label`` / ``[ ] label``."""

    @property
    def _button(self) -> Content:
        style = self.get_visual_style("toggle--button")
        return Content.styled(ON if self.value else OFF, style if self.value else "")
