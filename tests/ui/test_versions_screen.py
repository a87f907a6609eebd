"""One task through every version, in the dashboard: opened with shift+v from the per-task table (on the highlighted
task) and from the drill-down, on evaluations written by hand (versions_project.py), whose marks and means are
computed here from the scores written. Pilot tests wait for the state they assert; snapshots at 80x24 and 200x50."""

from __future__ import annotations

from statistics import mean

import pytest
import versions_project as vp
from journey_kit import wait_for
from textual.widgets import Static

from hermit_tui.core.why.versions import CURVE_NOTE
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.attempt import AttemptScreen
from hermit_tui.dashboard.screens.tasks import TasksScreen
from hermit_tui.dashboard.screens.why.versions import VersionsScreen
from hermit_tui.dashboard.widgets.virtual_table import VirtualTable

SIZES = [(80, 24), (200, 50)]


@pytest.fixture
def run_yaml(demo_config):
    vp.write_all(demo_config)
    return demo_config


def loaded(app) -> bool:
    return app.config is not None and {"none", "root", "final"} <= set(app.store.keys)


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def table_rows(screen: TasksScreen) -> int:
    found = screen.query("#tasks-table")
    return found.first(VirtualTable).row_count if found else 0


async def open_from_tasks(pilot) -> VersionsScreen:
    app = pilot.app
    await wait_for(pilot, lambda: loaded(app))
    app.goto("tasks")
    await wait_for(pilot, lambda: isinstance(app.screen, TasksScreen) and table_rows(app.screen) > 0)
    table = app.screen.table
    table.cursor_row = next(i for i, r in enumerate(table.rows) if r.task_id == vp.TASK)
    await wait_for(pilot, lambda: table.cursor_value.task_id == vp.TASK)
    await pilot.press("V")
    await wait_for(pilot, lambda: isinstance(app.screen, VersionsScreen) and app.screen.ready)
    await pilot.pause()
    return app.screen


async def test_the_per_task_table_opens_the_task_through_every_version(run_yaml):
    app = HermitApp(run_yaml)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_from_tasks(pilot)
        assert screen.problem is None and screen.task_id == vp.TASK
        rows = screen.query_one("#versions-rows", VirtualTable)
        assert rows.has_focus and rows.row_count == len(vp.EVALS)
        # the row of marks: every evaluation on this split, in a launch's order, with the task's mean
        strip = text_of(screen, "#versions-strip")
        expected = [("none", "○○", "none"), ("root", "✓✗", "root"), ("demo_ckpt-step-2", "J✓", "s2")]
        expected += [("demo_ckpt-step-10", "✓✓", "s10"), ("final", "✓○", "final")]
        expected += [("final @ 20260101T000000Z", "○○", "final-old")]
        assert strip == " │ ".join(f"{n} {g} {mean(vp.scores(k, vp.TASK)):.2f}" for n, g, k in expected)
        assert "variant" not in strip  # another split
        note = text_of(screen, "#versions-note")
        assert CURVE_NOTE in note
        assert screen.versions is not None
        assert screen.versions.curve.same_as == {"final": "demo/ckpt-step-10"}
        assert [p.step for p in screen.versions.curve.points] == [0, 2, 10, None]
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, TasksScreen))


async def test_the_drill_down_opens_it_too(run_yaml):
    app = HermitApp(run_yaml)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: loaded(app))
        app.push_screen(AttemptScreen(vp.OTHER, "root", 1))
        await wait_for(pilot, lambda: isinstance(app.screen, AttemptScreen))
        await pilot.pause()
        await pilot.press("V")
        await wait_for(pilot, lambda: isinstance(app.screen, VersionsScreen) and app.screen.ready)
        screen = app.screen
        assert isinstance(screen, VersionsScreen) and screen.versions is not None
        assert screen.task_id == vp.OTHER and screen.problem is None
        final = next(r for r in screen.versions.rows if r.name == "final")
        assert final.task_mean == mean(vp.scores("final", vp.OTHER))


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_versions_snapshot(snap_compare, run_yaml, size):
    async def before(pilot):
        await open_from_tasks(pilot)

    assert snap_compare(HermitApp(run_yaml), terminal_size=size, run_before=before)
