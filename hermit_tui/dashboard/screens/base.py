"""The dashboard's screens know their app: ``self.app`` is a :class:`~hermit_tui.dashboard.app.HermitApp` to the type
checker (Textual's ``getters.app``, declared for mypy only: nothing changes at run time, and the app module, which
imports the screens, is not imported back)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import events
from textual.geometry import Size
from textual.screen import ModalScreen, Screen

if TYPE_CHECKING:
    from textual import getters

    from hermit_tui.core.workspace.config import Config
    from hermit_tui.core.workspace.tasks import TaskSet
    from hermit_tui.dashboard.app import HermitApp

ResultType = TypeVar("ResultType")
GIVE_WAY_S = 0.001  # between a screen's first layout and its first render, the loop's timers run (HermitScreen)
SHOWN_WITHIN_S = 10.0  # the longest until_shown waits: a screen closed meanwhile never answers


def style_stamp(screen: Screen[Any]) -> tuple[object, ...]:
    """What the styles of a screen's nodes depend on beyond the nodes themselves: the theme, the colour mode, the
    app's classes and Textual's count of style invalidations."""
    app = screen.app
    return app.theme, app.ansi_color, frozenset(app.classes), getattr(app, "_css_update_count", None)


class HermitScreen(Screen[ResultType]):
    """A full screen of the dashboard.

    On its first show a screen is not styled again: Textual restyles every node of a screen at each ScreenResume, and
    on the first one its nodes were styled when they were mounted a moment before (on the setup screen that is ~1 ms
    per node, ~50-90 ms at once on the event loop). Should the theme or the app's classes have changed in between,
    the restyle happens as before; later shows always restyle."""

    if TYPE_CHECKING:
        app = getters.app(HermitApp)

    SPLIT_FIRST_SHOW: ClassVar[bool] = False  # the first show's layout and render in two steps (below)
    _style_stamp_at_mount: tuple[object, ...] | None = None
    _resumed_once = False
    _laid_out_at: Size | None = None

    def _on_mount(self, event: events.Mount) -> None:
        self._style_stamp_at_mount = style_stamp(self)

    async def _on_screen_resume(self, event: events.ScreenResume) -> None:  # type: ignore[override]  # Textual awaits either
        first, self._resumed_once = not self._resumed_once, True
        if first and self._style_stamp_at_mount is not None and self._style_stamp_at_mount == style_stamp(self):
            event.refresh_styles = False
        # Textual's own handling (restyle when asked, layout, a full render), then a step of the loop for whatever
        # waits in the screen's queue: the Resize that follows a push is another layout and render, and a screen
        # handles its queued messages in one step without giving way (two full renders back to back: ~70 ms).
        # A screen that asks for it (SPLIT_FIRST_SHOW) has the layout and the first full render of its first show
        # in two steps with the loop's timers between them (the setup screen: ~12 ms of layout, ~15 ms of
        # painting, where they were one step of ~30 ms, the longest of opening a config). Inside a
        # batch Textual lays out now and leaves the render to a callback it queues on the screen; the callback
        # queued before it gives way for a millisecond: a step of the loop alone is not enough for its timers (the
        # Pacer's beat, the cursor's blink), since a timer that fell due meanwhile runs an iteration later, behind
        # the render. This screen's own handlers of the resume still run first, as before.
        if first and self.SPLIT_FIRST_SHOW:
            self.call_later(self._give_way)
            with self.app.batch_update():
                Screen._on_screen_resume(self, event)
        else:
            Screen._on_screen_resume(self, event)
        event.prevent_default()
        if first:
            self._laid_out_at = self.app.size
        await asyncio.sleep(0)

    async def _give_way(self) -> None:
        await asyncio.sleep(GIVE_WAY_S)

    async def _on_resize(self, event: events.Resize) -> None:
        """The Resize a screen gets on its first show, at the size its ScreenResume has just laid it out at, would
        lay it out and render it whole once more (~30-50 ms on the per-task table, on the event loop), and lay out
        the screens below it again at the size they have: skipped. Whatever changed meanwhile asked for its own
        layout or repaint, which the screen's update timer does; a real resize has another size."""
        expected, self._laid_out_at = self._laid_out_at, None
        if expected is not None and event.size == expected:
            event.stop()
            event.prevent_default()


async def until_shown(screen: Screen[Any]) -> None:
    """Return once ``screen`` has handled what it was sent before this call (its ScreenResume, when pushed or shown
    again) and what those handlers left for after the next paint (the per-task table's first rows): an action run
    on it then acts on what it shows (HermitApp.run_on). From another task than the screen's; each step is bounded
    by SHOWN_WITHIN_S."""
    for schedule in (screen.call_later, screen.call_after_refresh):  # its queue in order, then its next paint
        done = asyncio.Event()
        if not schedule(done.set):
            return  # closing: nothing to wait for
        try:
            await asyncio.wait_for(done.wait(), SHOWN_WITHIN_S)
        except TimeoutError:
            return


class HermitModal(ModalScreen[ResultType]):
    """A dialog of the dashboard."""

    if TYPE_CHECKING:
        app = getters.app(HermitApp)


def opened(app: HermitApp) -> tuple[Config, TaskSet]:
    """The config the dashboard opened and its tasks: every screen past the picker has them."""
    if app.config is None or app.taskset is None:
        raise RuntimeError("no config is open (the picker comes first)")
    return app.config, app.taskset


def shown_pair(app: HermitApp, a: str | None, b: str | None, needs: str) -> tuple[str, str]:
    """The pair (a, b) of evaluations in the view a pair screen shows: the ones asked for when they are there, else
    the first and the last other one. An InputError (``needs``: the screen's name and verb, e.g. "Slices need")
    with fewer than two evaluations."""
    from hermit_tui.core.errors import InputError

    keys = app.store.keys
    if len(keys) < 2:
        raise InputError(f"{needs} two evaluations: evaluate at least two selectors first")
    first = a if a in keys else keys[0]
    second = b if b in keys and b != first else next(k for k in reversed(keys) if k != first)
    return first, second
