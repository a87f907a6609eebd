"""The Changes screen (from compare) and the aligned trajectories (from Changes and from the drill-down), on the
project why_project makes: a real git tree, evaluations with hermit-format trajectories. The expected tasks,
divergences and rows are worked out in why_project's docstring and comments, not by the code under test. Pilot
tests wait for the state they assert; snapshots at 80x24 and 200x50."""

from __future__ import annotations

import pytest
import why_project as wp
from journey_kit import wait_for
from textual.widgets import Input, Static

from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.attempt import AttemptScreen
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.screens.why.aligned import AlignedScreen
from hermit_tui.dashboard.screens.why.changes import ChangesScreen
from hermit_tui.dashboard.widgets.virtual_table import VirtualTable

SIZES = [(80, 24), (200, 50)]


@pytest.fixture
def run_yaml(tmp_path):
    return wp.build(tmp_path / "p")


def loaded(app) -> bool:
    return app.config is not None and {"v1", "v2"} <= set(app.store.keys)


async def open_changes(pilot) -> ChangesScreen:
    app = pilot.app
    await wait_for(pilot, lambda: loaded(app))
    app.push_screen(CompareScreen(a="v1", b="v2"))
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
    await pilot.press("w")
    await wait_for(pilot, lambda: isinstance(app.screen, ChangesScreen) and app.screen.ready)
    await pilot.pause()
    return app.screen


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_changes_lists_the_flips_beside_the_adapters_diff(run_yaml):
    app = HermitApp(run_yaml)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_changes(pilot)
        assert screen.problem is None
        assert screen.rows == [("fixed", "t1"), ("flaky", "t3"), ("flaky", "t4")]
        table = screen.query_one("#changes-tasks", VirtualTable)
        assert table.has_focus and table.row_count == 3
        title = text_of(screen, "#changes-title")
        assert "v1 → v2" in title and "fixed 1 · broken 0 · flaky 2 · 9 files changed" in title
        body = text_of(screen, "#changes-text")
        assert "- added: tool new_tool, skill plan, subagent critic" in body
        assert "+- three" in body and "not a causal effect" in body
        # the divergence column: t1 parts at step 1 in both repeats, t3 at step 3 in repeat 1, t4 never
        assert screen.pair is not None
        assert screen.pair.divergence_by_task["t3"] == [3, None]
        await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, AlignedScreen) and app.screen.ready)
        aligned = app.screen
        assert isinstance(aligned, AlignedScreen)
        assert (aligned.task_id, aligned.keys) == ("t3", ["v1", "v2"])
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)


async def test_aligned_trajectories_keys(run_yaml):
    app = HermitApp(run_yaml)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: loaded(app))
        app.push_screen(AlignedScreen("t3", ["v1", "v2"]))
        await wait_for(pilot, lambda: isinstance(app.screen, AlignedScreen) and app.screen.ready)
        screen = app.screen
        assert isinstance(screen, AlignedScreen)
        table = screen.query_one("#aligned-rows", VirtualTable)
        # t3 repeat 1: system, user, search call, its result, then v2's new_tool call and result (inserted), answer
        await wait_for(pilot, lambda: table.cursor_row == 4)
        assert screen.alignment.divergence_step == 3
        assert "first divergence: agent step 3" in text_of(screen, "#aligned-title")
        detail = text_of(screen, "#aligned-step")
        assert "[v2] call new_tool" in detail
        await pilot.press("n")
        assert table.cursor_row == 5 and "Error: ValueError: bad" in text_of(screen, "#aligned-step")
        await pilot.press("n")
        assert table.cursor_row == 5  # no further difference
        await pilot.press("p")
        assert table.cursor_row == 4
        await pilot.press("up", "up")
        await pilot.press("d")
        assert table.cursor_row == 4
        # search: the first row holding the text after the cursor, wrapping round
        await pilot.press("slash")
        field = screen.query_one("#aligned-search", Input)
        await wait_for(pilot, lambda: field.has_focus)
        await pilot.press(*"search", "enter")
        assert table.cursor_row == 2  # the search call (no match after row 4 but the rows' wrap)
        await pilot.press("escape")
        assert table.has_focus
        # the other repeat: the agents did the same
        await pilot.press("right_square_bracket")
        assert screen.aligned is not None and screen.aligned.repeats[screen.shown] == 2
        assert "the agents' steps are the same" in text_of(screen, "#aligned-title")


async def test_the_drill_down_opens_the_aligned_trajectories(run_yaml):
    app = HermitApp(run_yaml)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: loaded(app))
        app.push_screen(AttemptScreen("t1", "v2", 1))
        await wait_for(pilot, lambda: isinstance(app.screen, AttemptScreen))
        await pilot.pause()
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, AlignedScreen) and app.screen.ready)
        screen = app.screen
        assert isinstance(screen, AlignedScreen)
        assert set(screen.keys) == {"v1", "v2"} and screen.problem is None
        assert screen.alignment.divergence_step == 1


async def test_the_drill_down_opens_the_pairs_changes(run_yaml):
    app = HermitApp(run_yaml)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: loaded(app))
        app.push_screen(AttemptScreen("t1", "v2", 1))
        await wait_for(pilot, lambda: isinstance(app.screen, AttemptScreen))
        await pilot.pause()
        await pilot.press("W")
        await wait_for(pilot, lambda: isinstance(app.screen, ChangesScreen) and app.screen.ready)
        screen = app.screen
        assert isinstance(screen, ChangesScreen)
        assert {screen.a, screen.b} == {"v1", "v2"} and screen.problem is None
        assert ("fixed", "t1") in screen.rows  # as in the test above: t1 is the task v2 fixed


async def test_changes_with_one_evaluation_says_why_not(tmp_path):
    run_yaml = wp.build(tmp_path / "p")
    import shutil

    shutil.rmtree(run_yaml.parent / "runs" / "r" / "eval" / "v1")
    app = HermitApp(run_yaml)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.config is not None and "v2" in app.store.keys)
        app.push_screen(ChangesScreen())
        changes = await wait_for(
            pilot, lambda: app.screen if isinstance(app.screen, ChangesScreen) and app.screen.ready else None
        )
        assert changes.problem is not None and "two evaluations" in changes.problem


# -- snapshots ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_changes_snapshot(snap_compare, run_yaml, size):
    async def before(pilot):
        await open_changes(pilot)

    assert snap_compare(HermitApp(run_yaml), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_aligned_snapshot(snap_compare, run_yaml, size):
    async def before(pilot):
        app = pilot.app
        await wait_for(pilot, lambda: loaded(app))
        app.push_screen(AlignedScreen("t3", ["v1", "v2"]))
        await wait_for(pilot, lambda: isinstance(app.screen, AlignedScreen) and app.screen.ready)
        table = app.screen.query_one("#aligned-rows", VirtualTable)
        await wait_for(pilot, lambda: table.cursor_row == 4)
        await pilot.pause()

    assert snap_compare(HermitApp(run_yaml), terminal_size=size, run_before=before)
