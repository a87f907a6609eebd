"""The polish of issue 27 (finding 12), each a behaviour a test can see: ctrl+t says which theme it switched to; the
live run's bars name a selector whole up to 17 characters (``demo_ckpt-step-1``), and a longer one ends in an
ellipsis."""

from __future__ import annotations

import pytest
from fixture_data import SEVEN_LABELS, fixed_store, fixture_app
from textual.widgets import Static
from waiting import wait_for

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


async def test_warnings_expanded_with_bang_are_read_whole_not_cut(demo_config, tmp_path, monkeypatch):
    """Issue 27 (finding 9): ``!`` expanded the warnings, each still cut to one line at 80 columns."""
    from hermit_tui.dashboard.widgets.banners import Banners

    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    app = fixture_app(demo_config, "setup")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        banners = app.screen.query_one(Banners)
        lines = banners._lines
        assert len(lines) >= 2 and banners.size.height == 1  # collapsed to one line that counts them
        longest = max(len(line) for _, line in lines)
        assert longest > 80  # a warning longer than the terminal is wide
        await pilot.press("exclamation_mark")
        await pilot.pause()
        # every warning whole: more lines than warnings (a long one wraps), none ending in an ellipsis
        assert banners.size.height > len(lines)
        shown = [str(line.text).rstrip() for line in banners.render_lines(banners.region.reset_offset)]
        assert not any(row.endswith("…") for row in shown)
        await pilot.press("exclamation_mark")
        await pilot.pause()
        assert banners.size.height == 1


# (screen shown, its arguments, key, the screen it must lead to): the same key, the same screen, everywhere it fits
SAME_KEYS = [
    ("errors", {}, "t", "TasksScreen"),
    ("errors", {}, "v", "CompareScreen"),
    ("errors", {}, "h", "HistoryScreen"),
    ("compare", {}, "t", "TasksScreen"),
    ("compare", {}, "e", "ErrorsScreen"),
    ("history", {}, "t", "TasksScreen"),
    ("history", {}, "e", "ErrorsScreen"),
    ("history", {}, "v", "CompareScreen"),
    ("attempt", {"task_id": "t05", "key": "final", "repeat": 1}, "t", "TasksScreen"),
    ("attempt", {"task_id": "t05", "key": "final", "repeat": 1}, "e", "ErrorsScreen"),
    ("attempt", {"task_id": "t05", "key": "final", "repeat": 1}, "h", "HistoryScreen"),
    ("setup", {}, "e", "ErrorsScreen"),
    ("run", {}, "h", "HistoryScreen"),
    ("tasks", {}, "v", "CompareScreen"),
]


@pytest.mark.parametrize("screen,kwargs,key,expected", SAME_KEYS, ids=[f"{s}-{k}" for s, _, k, _ in SAME_KEYS])
async def test_the_same_key_shows_the_same_screen_everywhere(
    demo_config, tmp_path, monkeypatch, screen, kwargs, key, expected
):
    """Issue 27 (finding 11): h did nothing on the run screen, v nothing on the per-task table; the errors, compare,
    history and drill-down screens had none of t, e, v, h."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    app = fixture_app(demo_config, screen, **kwargs)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        shown = type(app.screen).__name__
        await pilot.press(key)
        await wait_for(
            pilot, lambda: type(app.screen).__name__ == expected, what=f"{key} on {shown} to show {expected}"
        )
        assert (shown, type(app.screen).__name__) == (shown, expected)


async def test_the_finished_toast_does_not_cover_the_run_screen_s_log(demo_config, tmp_path, monkeypatch):
    """Issue 27 (finding 12): at 80 columns the 'Evaluation finished' toast covered the log; the run screen says
    'finished' on its status line, so it gets no toast."""
    from journey_kit import setup_ready

    from hermit_tui.core.run.launch import LaunchOptions
    from hermit_tui.dashboard.app import HermitApp

    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    app = HermitApp(demo_config, overrides=["agent.params.latency_scale=0"])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        app.launch(LaunchOptions(selectors=["none"], repeats=1, limit=2))
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(pilot, lambda: not app.running and app.store.columns and not app.store.columns["none"].running)
        status = app.screen.query_one("#run-status", Static)
        await wait_for(pilot, lambda: "finished" in str(status.render()))
        assert not any("Evaluation finished" in n.message for n in app._notifications)
