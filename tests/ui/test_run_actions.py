"""What the run screen asks of the app and the grid, through their public doors: cancel then abandon
(HermitApp.cancel_or_abandon), and a grid redrawn from scratch for another store (AttemptGrid.show)."""

from __future__ import annotations

from typing import cast

from fixture_data import fixed_store, fixture_app
from textual.app import App, ComposeResult
from textual.widgets import RichLog
from waiting import wait_for

from hermit_tui.core.run import events as ev
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.widgets.attempt_grid import ID_WIDTH, AttemptGrid


class FakeRun:
    """The part of EvalRun the app's cancel uses: cancel(force) and whether a cancel was asked for."""

    def __init__(self) -> None:
        self.calls: list[bool] = []
        self.cancel_requested = False

    def cancel(self, force: bool = False) -> None:
        self.calls.append(force)
        self.cancel_requested = True


async def test_cancel_then_cancel_again_abandons_the_attempts_in_flight():
    app = HermitApp(store=fixed_store(), live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.cancel_or_abandon()  # nothing running: said, nothing else
        await pilot.pause()
        assert [n.message for n in app._notifications][-1] == "Nothing is running"
        run = FakeRun()
        app.current_run = cast(EvalRun, run)  # what the app calls on a run, and no more
        app.cancel_or_abandon()
        assert run.calls == [False] and not app.abandoned
        app.cancel_or_abandon()
        assert run.calls == [False, True] and app.abandoned
        app.current_run = None


def store_of(task_ids: list[str]) -> EvalStore:
    store = EvalStore({t: {"id": t} for t in task_ids}, [])
    store.apply(ev.RunStarted(labels=["none"], task_ids=task_ids, repeats=1, concurrency=1, total=len(task_ids)))
    return store


async def test_a_grid_shown_another_store_of_the_same_shape_measures_its_task_ids_again():
    short = store_of(["t1", "t2"])
    long = store_of(["a-task-id-much-longer-than-the-column-" + n for n in "12"])

    class GridApp(App[None]):
        def compose(self) -> ComposeResult:
            yield AttemptGrid(short)

    app = GridApp()
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        grid = app.query_one(AttemptGrid)
        assert grid.id_width == ID_WIDTH
        grid.store = long  # swapped behind the grid's back: the same shape, so nothing is measured again
        grid.sync()
        assert grid.id_width == ID_WIDTH
        grid.show(long)
        grid.sync()
        assert grid.id_width == len(long.task_ids[0]) > ID_WIDTH


async def test_the_launch_log_shows_only_once_the_launch_has_logged_a_line(demo_config):
    app = fixture_app(demo_config, "run")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        log = app.screen.query_one("#run-log", RichLog)
        assert not log.display  # nothing logged: no empty box
        app.store.apply(ev.RunLog(level="warning", message="judge.py: a score outside [0, 1] was clipped"))
        app.screen.post_message(HermitApp.StoreUpdated())
        await wait_for(pilot, lambda: log.display and len(log.lines) == 1)
        assert log.lines[0].text == "! judge.py: a score outside [0, 1] was clipped"
        assert log.border_title == "launch log"
