"""Seven selectors at 80x24 and 200x50 (issue 27, findings 9-10), on fixed data (tests/fixture_data.py's
SEVEN_LABELS): the live run, the per-task table (the selectors on one header line on a short terminal, one line each
on a tall one; the table scrolled a column at a time) and the outputs; setup with its protocol checks scrolled into
view (c) and the focus drawn without colour."""

from __future__ import annotations

import shutil

import pytest
from fixture_data import SEVEN_LABELS, fixed_store, fixture_app
from test_snapshots_every_screen import versions_shown, wait_workers
from waiting import wait_for

from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.screens.tasks import TasksScreen

SIZES = [(80, 24), (200, 50)]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The demo workspace (fixed names: the snapshots show paths relative to it)."""
    from hermit_tui.demo import build_demo

    config = build_demo(tmp_path_factory.mktemp("snapshots-seven", numbered=False) / "demo")
    shutil.copytree(config.parent / "template", config.parent / "adapters" / "shouty")  # a seventh: a directory
    return config


SEVEN_PICKS = ["none", "root", "demo/ckpt-step-1", "demo/ckpt-step-2", "demo/ckpt-step-3", "final", "adapters/shouty"]


@pytest.fixture(autouse=True)
def in_workspace(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    monkeypatch.chdir(workspace.parent)


def showing(factory, *keys: str):
    async def run(pilot) -> None:
        await pilot.pause()
        pilot.app.push_screen(factory())
        await pilot.pause()
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
        await wait_workers(pilot)  # the table's rows are filled in a worker
        await pilot.wait_for_scheduled_animations()

    return run


VIEWS = [
    ("run", showing(RunScreen)),
    ("tasks", showing(TasksScreen)),
    ("tasks-scrolled", showing(TasksScreen, "right", "right", "right")),
    ("outputs", showing(TasksScreen, "o", "right")),
]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("name,before", VIEWS, ids=[v[0] for v in VIEWS])
def test_seven_selectors(snap_compare, name, before, size):
    app = fixture_app(None, screen=None, store=fixed_store(labels=SEVEN_LABELS))
    assert snap_compare(app, terminal_size=size, run_before=before)


async def scrolled_to_the_checks(pilot) -> None:
    """c focuses the protocol panel and scrolls it to its end, the checks (on a tall terminal nothing scrolls):
    wait until it is there."""
    panel = pilot.app.screen.query_one("#setup-protocol")
    await wait_for(pilot, lambda: pilot.app.focused is panel and panel.scroll_y == panel.max_scroll_y)
    await pilot.pause()


async def checks_shown(pilot) -> None:
    await versions_shown(pilot)
    await pilot.press("c")
    await scrolled_to_the_checks(pilot)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_setup_checks_and_focus_without_colour(snap_compare, workspace, monkeypatch, size):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(fixture_app(workspace, "setup"), terminal_size=size, run_before=checks_shown)


async def test_setup_s_reaches_the_launch_settings_and_c_scrolls_the_protocol_checks(workspace):
    """Issue 27 (finding 9): 8 Tabs to reach repeats, and a protocol panel that did not scroll."""
    app = fixture_app(workspace, "setup")
    async with app.run_test(size=(80, 24)) as pilot:
        await versions_shown(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "repeats"
        await pilot.press("escape", "c")
        await scrolled_to_the_checks(pilot)
        panel = app.screen.query_one("#setup-protocol")
        assert app.focused is panel
        assert panel.max_scroll_y > 0 and panel.scroll_y == panel.max_scroll_y  # it scrolls, and shows the checks
        await pilot.press("up")
        await pilot.pause()
        assert panel.scroll_y == panel.max_scroll_y - 1


async def seven_ticked(pilot) -> None:
    await versions_shown(pilot)
    await wait_for(pilot, lambda: "Launch 7" in str(pilot.app.screen.query_one("#launch").label), what="Launch 7")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_setup_with_seven_ticked(snap_compare, workspace, size):
    app = fixture_app(workspace, "setup")
    app.launch_settings = {"picks": SEVEN_PICKS, "added": ["adapters/shouty"]}
    assert snap_compare(app, terminal_size=size, run_before=seven_ticked)
