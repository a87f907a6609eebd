"""SVG snapshots of the setup, live-run and help screens on fixed data (the demo workspace's config, the fixed
store), at 80x24 and 120x40."""

from __future__ import annotations

import pytest
from fixture_data import fixture_app
from waiting import wait_for

SIZES = [(80, 24), (120, 40)]


@pytest.fixture(scope="module")
def demo_yaml(tmp_path_factory):
    from hermit_tui.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("snap") / "demo")


@pytest.fixture(autouse=True)
def private_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))


async def versions_shown(pilot) -> None:
    """The setup screen lists the tree's versions from a worker: wait for them."""
    from textual.widgets import SelectionList

    def listed() -> bool:
        selections = pilot.app.screen.query(SelectionList)
        return bool(selections) and selections.first().option_count > 1

    await wait_for(pilot, listed, what="the setup screen's versions")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_setup_snapshot(snap_compare, demo_yaml, size):
    assert snap_compare(fixture_app(demo_yaml, "setup"), terminal_size=size, run_before=versions_shown)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_run_snapshot(snap_compare, size):
    assert snap_compare(fixture_app(None, "run"), terminal_size=size)


def test_help_snapshot(snap_compare):
    assert snap_compare(fixture_app(None, "help"), terminal_size=(100, 50))
