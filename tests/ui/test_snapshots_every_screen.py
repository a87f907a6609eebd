"""Every screen (and the dialogs a user meets) at 80x24 and at 200x50, on fixed data: the demo workspace with the
evaluations hermit-harness itself wrote (tests/fixtures/hermit_eval), one of them archived, and the fixed store of
tests/fixture_data.py. Plus the setup screen with NO_COLOR: ticked and unticked must read apart without colour."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixture_data import fixture_app
from textual.widgets import DirectoryTree, SelectionList
from waiting import wait_for

from hermit_tui.dashboard.screens.dialogs.quit import QuitScreen, StoppingScreen
from hermit_tui.dashboard.screens.setup import AddSelectorScreen

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hermit_eval"
SIZES = [(80, 24), (200, 50)]
ARCHIVED = "20260102T030405Z"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """The demo, with hermit's own none/root/final evaluations and an archived none (fixed data, fixed names)."""
    from hermit_tui.demo import build_demo

    config = build_demo(tmp_path_factory.mktemp("snapshots", numbered=False) / "demo")
    eval_dir = config.parent / "runs" / "demo" / "eval"
    for label in ("none", "root", "final"):
        shutil.copytree(FIXTURES / label, eval_dir / label)
    shutil.copytree(FIXTURES / "none", eval_dir / "none" / "archive" / ARCHIVED)
    return config


@pytest.fixture(autouse=True)
def in_workspace(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    monkeypatch.chdir(workspace.parent)  # paths on screen are relative to here; the picker browses here


async def wait_workers(pilot, *groups: str) -> None:
    await pilot.pause()
    for _ in range(3):
        for worker in list(pilot.app.workers):
            if (not groups or worker.group in groups) and not worker.is_finished and worker.group != "default":
                try:
                    await worker.wait()
                except Exception:
                    pass
        await pilot.pause()


async def versions_shown(pilot) -> None:
    def listed() -> bool:
        lists = pilot.app.screen.query(SelectionList)
        return bool(lists) and lists.first().option_count > 1

    await wait_for(pilot, listed, what="the setup screen's versions")
    await pilot.pause()


async def compare_ready(pilot) -> None:
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "paired", None) is not None)
    await wait_for(pilot, lambda: pilot.app.screen.up_to_date, what="the figures of the store as it is now")
    await wait_workers(pilot)


async def review_ready(pilot) -> None:
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "ready", False))
    await wait_workers(pilot, "review-card")


def pushing(screen_factory):
    async def run(pilot) -> None:
        await pilot.pause()
        pilot.app.push_screen(screen_factory())
        await pilot.pause()
        await pilot.pause()

    return run


def pressing(*keys: str):
    async def run(pilot) -> None:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()

    return run


async def history_listed(pilot) -> None:
    await wait_workers(pilot, "history-list")


async def picker_listed(pilot) -> None:
    # the file tree loads its folder in a worker, and adds the entries at once: wait for them
    tree = pilot.app.screen.query_one(DirectoryTree)
    await wait_for(pilot, lambda: len(tree.root.children) > 0, what="the picker's folder")
    await pilot.pause()


# (id, screen shown first, its arguments, what to do before the shot)
SCREENS = [
    ("picker", "picker", {}, picker_listed),
    ("setup", "setup", {}, versions_shown),
    ("add-selector", "setup", {}, pushing(AddSelectorScreen)),
    ("run", "run", {}, None),
    ("quit", "run", {}, pushing(QuitScreen)),
    ("stopping", "run", {}, pushing(StoppingScreen)),
    ("tasks", "tasks", {}, None),
    ("tasks-outputs", "tasks", {}, pressing("o")),
    ("attempt", "attempt", {"task_id": "t09", "key": "final", "repeat": 2}, None),
    ("attempt-side", "attempt", {"task_id": "t04", "tab": "side"}, None),
    ("errors", "errors", {}, None),
    ("history", "history", {}, history_listed),
    ("compare", "compare", {}, compare_ready),
    ("review", "review", {}, review_ready),
    ("help", "help", {}, None),
]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("name,screen,kwargs,before", SCREENS, ids=[s[0] for s in SCREENS])
def test_every_screen(snap_compare, workspace, name, screen, kwargs, before, size):
    app = fixture_app(workspace, screen, **kwargs)
    assert snap_compare(app, terminal_size=size, run_before=before)


def test_setup_without_colour(snap_compare, workspace, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(fixture_app(workspace, "setup"), terminal_size=(80, 24), run_before=versions_shown)


async def test_on_and_off_read_apart_without_colour(workspace, monkeypatch):
    """With NO_COLOR the boxes differ in their characters, not only in colour."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = fixture_app(workspace, "setup")
    async with app.run_test(size=(80, 24)) as pilot:
        await versions_shown(pilot)
        assert app.no_color
        ticked = set(app.screen.query_one("#versions", SelectionList).selected)
        assert ticked == {"none", "root", "final"}
        # what the terminal shows: three boxes ticked with an x, three left blank (the SVG writes a space as &#160;)
        shown = app.export_screenshot().replace("&#160;", " ")
        assert shown.count("[x]") == 3 and shown.count("[ ]") == 3
