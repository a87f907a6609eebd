"""The polish of issue 27 (finding 12), each a behaviour a test can see: ctrl+t says which theme it switched to; the
live run's bars name a selector whole up to 17 characters (``demo_ckpt-step-1``), and a longer one ends in an
ellipsis."""

from __future__ import annotations

from fixture_data import SEVEN_LABELS, fixed_store, fixture_app
from textual.widgets import Static

from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.widgets.selector_progress import SelectorProgress


async def test_ctrl_t_says_which_theme_it_switched_to():
    app = fixture_app(None, screen=None, store=fixed_store())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        before = app.theme
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme != before
        said = [n.message for n in app._notifications]
        assert said and said[-1].startswith("Theme: " + ("light" if "light" in app.theme else "dark"))


async def test_the_run_bars_name_each_selector_whole():
    app = fixture_app(None, screen=None, store=fixed_store(labels=SEVEN_LABELS))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.push_screen(RunScreen())
        await pilot.pause()
        await pilot.pause()
        names = [str(bar.query_one(".sp-label", Static).content) for bar in app.screen.query(SelectorProgress)]
        assert names == list(SEVEN_LABELS)  # demo_ckpt-step-1 was demo_ckpt-s
        long = SelectorProgress("a-selector-of-twenty-six-ch")
        await app.screen.mount(long)
        await pilot.pause()
        assert str(long.query_one(".sp-label", Static).content) == "a-selector-of-tw…"
