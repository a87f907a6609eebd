"""The footer: one widget, the screen's shown keys as one line, updated when the bindings change (no widget per key),
compact below 110 columns, the palette's key on the right, hover, click, disabled keys."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget

from hermit_tui.dashboard.widgets.footer import COMPACT_BELOW, Footer


class KeysApp(App):
    BINDINGS: ClassVar = [
        Binding("a", "alpha", "Alpha"),
        Binding("b", "beta", "Beta"),
        Binding("x", "alpha", "Alpha again"),  # a second key for the same action: shown once
        Binding("h", "hidden", "Hidden", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(self):
        super().__init__()
        self.pressed: list[str] = []
        self.beta_enabled = True
        self.bells = 0

    def compose(self) -> ComposeResult:
        yield Footer()

    def action_alpha(self) -> None:
        self.pressed.append("alpha")

    def action_beta(self) -> None:
        self.pressed.append("beta")

    def action_help(self) -> None:
        self.pressed.append("help")

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "beta" and not self.beta_enabled:
            return None  # shown, disabled
        return True

    def bell(self) -> None:
        self.bells += 1


def line(footer: Footer) -> str:
    return footer.render().plain


async def test_keys_are_one_line_in_one_widget_once_per_action_with_the_palette_on_the_right():
    app = KeysApp()
    async with app.run_test(size=(120, 10)) as pilot:
        await pilot.pause()
        footer = app.query_one(Footer)
        assert list(footer.children) == []  # no widget per key
        text = line(footer)
        assert len(text) == 120
        assert text.startswith(" a Alpha  b Beta  ? Help ")  # wide: a blank either side of each key
        assert "Alpha again" not in text and "Hidden" not in text
        assert text.endswith("▏ ^p palette  ")  # as wide as Textual's key: a blank either side, one more on the right
        assert [item.description for item in footer.items] == ["Alpha", "Beta", "Help", "palette"]


async def test_compact_below_110_columns_and_the_palette_stays_visible_when_keys_overflow():
    app = KeysApp()
    async with app.run_test(size=(COMPACT_BELOW - 1, 10)) as pilot:
        await pilot.pause()
        text = line(app.query_one(Footer))
        assert text.startswith("a Alpha b Beta ? Help ")
        assert text.endswith("▏^p palette")
    async with KeysApp().run_test(size=(30, 10)) as pilot:
        await pilot.pause()
        text = line(pilot.app.query_one(Footer))
        assert len(text) == 30 and text.endswith("▏^p palette") and text.startswith("a Alpha b Beta ?")


async def test_a_click_presses_the_key_a_disabled_key_rings_the_bell_and_hover_shows_the_tooltip():
    app = KeysApp()
    async with app.run_test(size=(120, 10)) as pilot:
        await pilot.pause()
        footer = app.query_one(Footer)
        text = line(footer)
        await pilot.click(Footer, offset=(text.index("Alpha"), 0))
        await pilot.pause()
        await pilot.click(Footer, offset=(text.index("Help"), 0))
        await pilot.pause()
        assert app.pressed == ["alpha", "help"]
        app.beta_enabled = False
        app.screen.refresh_bindings()
        await pilot.pause()
        assert [item.enabled for item in footer.items] == [True, False, True, True]
        beta = text.index("Beta")
        assert footer.render()[beta : beta + 4].get_style_at_offset(app.console, 0).dim
        await pilot.click(Footer, offset=(beta, 0))
        await pilot.pause()
        assert app.pressed == ["alpha", "help"] and app.bells == 1
        await pilot.hover(Footer, offset=(text.index("palette"), 0))
        await pilot.pause()
        hover = footer.get_component_rich_style("footer--hover").bgcolor
        rendered = footer.render()
        assert rendered.get_style_at_offset(app.console, text.index("palette")).bgcolor == hover
        assert rendered.get_style_at_offset(app.console, text.index("Alpha")).bgcolor != hover
        assert footer.tooltip


async def test_the_line_follows_the_bindings_as_focus_moves_without_mounting_anything():
    class Zed(Widget, can_focus=True):
        BINDINGS: ClassVar = [Binding("z", "zed", "Zed")]

    class Other(Widget, can_focus=True):
        pass

    class Focusing(KeysApp):
        def compose(self) -> ComposeResult:
            yield Zed(id="zed")
            yield Other(id="other")
            yield Footer()

    app = Focusing()
    async with app.run_test(size=(120, 10)) as pilot:
        app.query_one(Zed).focus()
        await pilot.pause()
        footer = app.query_one(Footer)
        assert "z Zed" in line(footer) and "a Alpha" in line(footer)
        app.query_one(Other).focus()
        await pilot.pause()
        assert "z Zed" not in line(footer) and "a Alpha" in line(footer)
        assert list(footer.children) == []
