"""HermitScreen's first show: styled once (at mount, not again at the first ScreenResume), laid out once (the Resize
at the same size that follows a push is not a second full layout); later shows and real resizes as Textual does."""

from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Label, Static

from hermit_tui.dashboard.screens.base import HermitScreen, style_stamp


class Plain(HermitScreen[None]):
    def compose(self) -> ComposeResult:
        for i in range(20):
            yield Label(f"line {i}", id=f"l{i}")
        yield Static("last", id="last")


class Host(App):
    def __init__(self):
        super().__init__()
        self.restyled: list[int] = []  # sizes of the node sets restyled at once
        self.layouts: list[tuple[str, object]] = []

    def on_mount(self) -> None:
        update_nodes = self.stylesheet.update_nodes

        def counted(nodes, animate: bool = False) -> None:
            nodes = list(nodes)
            self.restyled.append(len(nodes))
            update_nodes(nodes, animate)

        self.stylesheet.update_nodes = counted  # type: ignore[method-assign]


def spy_layouts(app: Host, screen: Screen) -> None:
    refresh_layout = screen._refresh_layout

    def counted(size=None, scroll: bool = False) -> None:
        app.layouts.append((type(screen).__name__, size))
        refresh_layout(size, scroll)

    screen._refresh_layout = counted  # type: ignore[method-assign]


async def test_first_show_is_styled_and_laid_out_once_later_shows_are_restyled():
    app = Host()
    async with app.run_test(size=(60, 30)) as pilot:
        screen = Plain()
        spy_layouts(app, screen)
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.pause()
        nodes = len(list(screen.walk_children(with_self=True)))
        assert nodes > 20
        assert max(app.restyled, default=0) < nodes  # never the whole screen at once
        full = [size for name, size in app.layouts if size is not None]
        assert full == [app.size]  # one layout at the terminal's size (the ScreenResume's), not two
        assert str(screen.query_one("#last", Static).render()) == "last" and screen.query_one("#last").region
        # pushed again later: restyled whole, as Textual does on every push
        app.install_screen(screen, "plain")
        app.pop_screen()
        await pilot.pause()
        app.restyled.clear()
        await app.push_screen("plain")
        await pilot.pause()
        assert max(app.restyled, default=0) >= nodes


class Stale(Plain):
    def on_screen_resume(self) -> None:
        self._style_stamp_at_mount = ("a theme", "since changed")  # as if the theme changed after the mount


async def test_a_style_change_between_mount_and_first_show_restyles_and_real_resizes_lay_out():
    app = Host()
    async with app.run_test(size=(60, 30)) as pilot:
        before = style_stamp(app.screen)
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        assert style_stamp(app.screen) != before
        screen = Stale()
        await app.push_screen(screen)
        await pilot.pause()
        nodes = len(list(screen.walk_children(with_self=True)))
        assert max(app.restyled, default=0) >= nodes
        spy_layouts(app, screen)
        await pilot.resize_terminal(70, 25)
        await pilot.pause()
        assert ("Stale", app.size) in app.layouts and app.size == (70, 25)
        assert screen.query_one("#last").region.width == 70


class Split(Plain):
    SPLIT_FIRST_SHOW = True


async def _first_show_events(screen: HermitScreen) -> list[str]:
    """What happened, in order, from a push of ``screen``: its layouts, its paints, and the ticks of a 1 ms timer."""
    app = Host()
    events: list[str] = []
    async with app.run_test(size=(60, 30)) as pilot:
        display = app._display

        def painted(shown, update) -> None:
            if shown is screen and update is not None:
                events.append("paint")
            display(shown, update)

        app._display = painted  # type: ignore[method-assign,assignment]  # spied, in this test only
        refresh_layout = screen._refresh_layout

        def laid_out(size=None, scroll: bool = False) -> None:
            events.append("layout")
            refresh_layout(size, scroll)
            time.sleep(0.005)  # a layout as long as a real screen's: the timer falls due meanwhile

        screen._refresh_layout = laid_out  # type: ignore[method-assign]  # spied, in this test only
        await pilot.pause()
        timer = app.set_interval(0.001, lambda: events.append("tick"))
        await app.push_screen(screen)
        await pilot.pause(0.05)
        timer.stop()
    return events


async def test_a_split_first_show_lets_the_timers_run_between_its_layout_and_its_paint():
    split = await _first_show_events(Split())
    first_layout, first_paint = split.index("layout"), split.index("paint")
    assert first_layout < first_paint and "tick" in split[first_layout:first_paint], split
    plain = await _first_show_events(Plain())  # one step, as Textual does it: no timer runs in between
    first_layout, first_paint = plain.index("layout"), plain.index("paint")
    assert "tick" not in plain[first_layout:first_paint], plain
