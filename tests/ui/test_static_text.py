"""show_text: an unchanged Static is left alone, a changed one is laid out only when its height may have changed."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Static

from hermit_tui.dashboard.widgets.static_text import same_text, show_text


class Lines(App):
    CSS = """
    #fixed { height: 1; }
    #auto-width { width: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text("one\ntwo", no_wrap=True), id="free")
        yield Static("x", id="fixed")
        yield Static(Text("w", no_wrap=True), id="auto-width")


def spy_layouts(widget: Static) -> list[bool]:
    """Every refresh of the widget that asks for a layout, from now on."""
    calls: list[bool] = []
    refresh = widget.refresh

    def recorded(*regions, layout: bool = False, **kwargs):
        if layout:
            calls.append(True)
        return refresh(*regions, layout=layout, **kwargs)

    widget.refresh = recorded  # type: ignore[method-assign]
    return calls


def spy(widget: Static) -> list[bool]:
    """The ``layout`` argument of every update the widget gets from now on."""
    calls: list[bool] = []
    update = widget.update

    def recorded(content="", *, layout: bool = True) -> None:
        calls.append(layout)
        update(content, layout=layout)

    widget.update = recorded  # type: ignore[method-assign]
    return calls


async def test_unchanged_text_is_left_alone_and_a_same_height_change_is_not_laid_out():
    app = Lines()
    async with app.run_test(size=(40, 10)) as pilot:
        free = app.query_one("#free", Static)
        layouts = spy_layouts(free)
        assert show_text(free, Text("one\ntwo", no_wrap=True)) is False
        assert show_text(free, Text("uno\ndos", no_wrap=True)) is True  # two lines as before: repainted only
        await pilot.pause()
        assert layouts == [] and str(free.render()) == "uno\ndos"
        assert show_text(free, Text("uno\ndos\ntres", no_wrap=True)) is True  # one more line: laid out
        await pilot.pause()
        assert layouts and free.size.height == 3
        assert show_text(free, Text("a sentence long enough to wrap at forty columns, twice")) is True
        await pilot.pause()
        assert free.size.height == 2
        layouts.clear()
        assert show_text(free, Text("another sentence long enough to wrap at forty columns")) is True
        await pilot.pause()
        assert free.size.height == 2 and layouts == []  # wraps to two lines as before


async def test_fixed_height_is_never_laid_out_and_auto_width_always_is():
    app = Lines()
    async with app.run_test(size=(40, 10)) as pilot:
        fixed, auto = app.query_one("#fixed", Static), app.query_one("#auto-width", Static)
        fixed_calls, auto_calls = spy(fixed), spy(auto)
        show_text(fixed, "a [b]markup[/b] line")
        show_text(auto, Text("wider", no_wrap=True))
        assert fixed_calls == [False] and auto_calls == [True]
        await pilot.pause()
        assert auto.size.width == 5


def test_same_text_compares_styles_not_only_characters():
    assert Text("a", style="red") == Text("a", style="blue")  # Rich's own equality: characters and spans only
    assert not same_text(Text("a", style="red"), Text("a", style="blue"))
    assert same_text(Text.assemble(("a", "red"), "b"), Text.assemble(("a", "red"), "b"))
    assert not same_text(Text.assemble(("a", "red"), "b"), Text.assemble(("a", "green"), "b"))
    assert Content.from_markup("[b]x[/b]") == Content("x")  # Textual's: characters only
    assert not same_text(Content.from_markup("[b]x[/b]"), Content("x"))
    assert same_text("[b]x[/b]", "[b]x[/b]") and not same_text("x", Text("x"))
