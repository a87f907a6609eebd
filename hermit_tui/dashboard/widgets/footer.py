"""The footer with the screen's keys: one widget drawing one line, compact (less space between keys) on a narrow
terminal so that they all fit 80 columns, help (?) and quit (q) included.

Textual's own Footer mounts a widget per key and mounts them all again whenever the screen's bindings change (each
focus change does): every new key widget is styled and laid out on the event loop, ~1.5 ms each here, 25-40 ms per
change on a screen with a dozen keys, and on a screen's first show several changes come in a row. This footer keeps
the keys as data and repaints one line when they differ; hovering a key highlights it and shows its tooltip, a click
presses it (a disabled key rings the bell), the command palette's key stays on the right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

COMPACT_BELOW = 110  # columns


@dataclass(frozen=True, slots=True)
class FooterItem:
    """One key as the footer shows it."""

    key: str
    display: str
    description: str
    enabled: bool
    tooltip: str
    palette: bool = False  # the command palette's key, drawn on the right


def footer_items(screen: Screen) -> tuple[FooterItem, ...]:
    """The screen's shown keys, one per action (the first key bound to it), then the command palette's key."""
    app = screen.app
    active = screen.active_bindings
    items: list[FooterItem] = []
    seen: set[str] = set()
    for _node, binding, enabled, tooltip in active.values():
        if not binding.show or binding.action in seen:
            continue
        seen.add(binding.action)
        items.append(FooterItem(binding.key, app.get_key_display(binding), binding.description, enabled, tooltip or ""))
    palette = active.get(app.COMMAND_PALETTE_BINDING) if app.ENABLE_COMMAND_PALETTE else None
    if palette is not None:
        _node, binding, enabled, tooltip = palette
        items.append(
            FooterItem(
                binding.key,
                app.get_key_display(binding),
                binding.description,
                enabled,
                binding.tooltip or binding.description,
                palette=True,
            )
        )
    return tuple(items)


class Footer(Widget, can_focus=False):
    """The keys of the screen it is on, as one line."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {"footer--key", "footer--description", "footer--hover", "footer--separator"}
    DEFAULT_CSS = """
    Footer {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        & > .footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .footer--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        & > .footer--separator {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self._items: tuple[FooterItem, ...] = ()
        self._spans: list[tuple[int, int, int]] = []  # (start, end, item index) as last drawn
        self._hover: int | None = None

    @property
    def items(self) -> tuple[FooterItem, ...]:
        return self._items

    @property
    def compact(self) -> bool:
        return self.app.size.width < COMPACT_BELOW

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if not self.is_attached or screen is not self.screen:
            return
        items = footer_items(screen)
        if items != self._items:
            self._items = items
            self._hover = None
            self.refresh()

    # -- drawing --------------------------------------------------------------------------------------------------
    def _item_text(self, item: FooterItem, index: int, compact: bool) -> Text:
        key_style = self.get_component_rich_style("footer--key")
        description_style = self.get_component_rich_style("footer--description")
        if index == self._hover:
            hover = self.get_component_rich_style("footer--hover")
            key_style, description_style = key_style + hover, description_style + hover
        key = item.display if compact else f" {item.display} "
        description = (f" {item.description}" if compact else f"{item.description} ") if item.description else ""
        text = Text.assemble((key, key_style), (description, description_style))
        if not item.enabled:
            text.stylize(Style(dim=True))
        return text

    def render(self) -> Text:
        width = self.size.width
        compact = self.compact
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, int]] = []
        palette: tuple[int, Text] | None = None
        for index, item in enumerate(self._items):
            if item.palette:
                palette = index, self._item_text(item, index, compact)
                continue
            text = self._item_text(item, index, compact)
            start = line.cell_len
            spans.append((start, start + text.cell_len, index))
            line.append_text(text)
            if compact:
                line.append(" ")
        if palette is not None:
            index, text = palette
            right = Text.assemble(
                ("▏", self.get_component_rich_style("footer--separator")), text, " " if not compact else ""
            )
            room = width - right.cell_len
            if line.cell_len > room:
                line.truncate(max(room, 0))
                spans = [(s, min(e, room), i) for s, e, i in spans if s < room]
            line.pad_right(max(room - line.cell_len, 0))
            spans.append((room + 1, room + 1 + text.cell_len, index))
            line.append_text(right)
        self._spans = spans
        return line

    # -- the mouse ------------------------------------------------------------------------------------------------
    def item_at(self, x: int) -> int | None:
        """The index of the item drawn at column ``x``, if any."""
        for start, end, index in self._spans:
            if start <= x < end:
                return index
        return None

    def _set_hover(self, index: int | None) -> None:
        if index != self._hover:
            self._hover = index
            item = self._items[index] if index is not None else None
            self.tooltip = (item.tooltip or None) if item is not None else None
            self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self.item_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        index = self.item_at(event.x)
        if index is None:
            return
        event.stop()
        item = self._items[index]
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()

    def on_resize(self) -> None:
        self.refresh()
