"""The errors screen: groups and counts, jumping to an attempt, re-running only the failed attempts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest
from fixture_data import FIXED_TASKS, fixed_store
from textual.widgets import Tree

from hermit_tui.core.records.results import AttemptRecord, Judged
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.workspace.config import Config
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.errors import AttemptRef, ConfirmRetry, ErrorsScreen, kind_of
from hermit_tui.dashboard.state.store import EvalStore

T05 = [("t05", 1), ("t05", 2), ("t05", 3)]


def stand_in_config(**fields: object) -> Config:
    """The part of a Config the errors screen reads (its run folder), where the app holds a Config."""
    return cast(Config, SimpleNamespace(**fields))


@pytest.fixture(autouse=True)
def private_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))


def lines_of(widget) -> list[str]:
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


async def open_errors(pilot) -> ErrorsScreen:
    await pilot.pause()
    pilot.app.push_screen(ErrorsScreen())
    await pilot.pause()
    return pilot.app.screen


def leaf(tree: Tree, ref: AttemptRef):
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if node.data == ref:
            return node
        stack.extend(node.children)
    raise AssertionError(ref)


def test_kind_is_status_and_exception_type():
    assert kind_of("error", "ValueError: no unit for 'parsec'") == "error · ValueError"
    assert kind_of("judge_error", "KeyError: 'expected'") == "judge_error · KeyError"
    assert kind_of("error", "timed out after 30 s") == "error"


async def test_groups_and_counts_per_selector_are_on_screen():
    app = HermitApp(store=fixed_store(), live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_errors(pilot)
        # 12 tasks x 3 repeats x 3 selectors = 108 attempts; t05 fails 9 times, final's t09 repeat 2 once
        summary = lines_of(screen.query_one("#errors-summary"))[0]
        # "ended in an error": "failure" is triage's word (an error, or a score below the threshold)
        assert summary.startswith("10 of 108 attempts ended in an error (9 pipeline, 1 judge)")
        assert "none 3 · root 3 · final 4" in summary
        shown = [line.strip(" │├└─▼▶") for line in lines_of(screen.query_one(Tree)) if line.strip(" │")]
        shown = [" ".join(line.split()) for line in shown if line]
        assert shown[:2] == [
            "error · ValueError 9 attempts",
            "ValueError: no unit for 'parsec' 9: none 3 · root 3 · final 3",
        ]
        assert shown[2:11] == [f"{key} t05 repeat {r}" for key in ("none", "root", "final") for r in (1, 2, 3)]
        assert shown[11:] == [
            "judge_error · KeyError 1 attempt",
            "KeyError: 'expected' 1: none 0 · root 0 · final 1",
            "final t09 repeat 2",
        ]
        assert not screen.query_one("#errors-empty").display
        assert not screen.query_one("#errors-retries").display


async def test_enter_on_an_attempt_jumps_to_it(monkeypatch):
    app = HermitApp(store=fixed_store(), live_updates=False)
    calls = []
    monkeypatch.setattr(app, "goto", lambda name, **kw: calls.append((name, kw)))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_errors(pilot)
        tree = screen.query_one(Tree)
        tree.move_cursor(leaf(tree, AttemptRef("final", "t09", 2)))
        await pilot.pause()
        assert "final · t09 · repeat 2" in lines_of(screen.query_one("#errors-detail"))[0]
        await pilot.press("enter")
        assert calls == [("attempt", {"task_id": "t09", "key": "final", "repeat": 2})]
        tree.move_cursor(tree.root.children[0])  # a kind: enter folds it, jumps nowhere
        await pilot.press("enter")
        assert len(calls) == 1 and not tree.root.children[0].is_expanded


async def test_rerun_asks_first_then_launches_exactly_the_failed_attempts(monkeypatch):
    app = HermitApp(store=fixed_store(), live_updates=False)
    launches: list[LaunchOptions] = []
    monkeypatch.setattr(app, "launch", launches.append)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_errors(pilot)
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmRetry)
        warning = " ".join(lines_of(app.screen.query_one("#retry-warning")))
        assert "Re-running only the failed attempts can bias the mean: the summary will record 10" in warning
        await pilot.click("#retry-cancel")
        await pilot.pause()
        assert app.screen is screen and launches == []

        await pilot.press("R")
        await pilot.pause()
        await pilot.click("#retry-confirm")
        await pilot.pause()
        assert app.screen is screen
        assert launches == [LaunchOptions(retry={"none": T05, "root": T05, "final": T05 + [("t09", 2)]})]


async def test_rerun_leaves_out_columns_not_stored_under_this_run(monkeypatch, tmp_path):
    store = fixed_store()
    store.columns["root"].source = "disk"  # read from disk, stored under this run's eval folder
    store.columns["final"].source = "disk"  # read from disk somewhere else (an archive): not retried
    (tmp_path / "run" / "eval" / "root").mkdir(parents=True)
    app = HermitApp(store=store, live_updates=False)
    app.config = stand_in_config(run_dir=tmp_path / "run")
    launches: list[LaunchOptions] = []
    monkeypatch.setattr(app, "launch", launches.append)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_errors(pilot)
        await pilot.press("R")
        await pilot.pause()
        assert "Re-run 6 failed attempts?" in lines_of(app.screen.query_one("#retry-title"))[0]
        await pilot.click("#retry-confirm")
        await pilot.pause()
        assert launches == [LaunchOptions(retry={"none": T05, "root": T05})]


async def test_retried_columns_carry_a_banner_and_updates_refresh():
    store = fixed_store()
    final = store.columns["final"]
    assert final.summary is not None
    final.summary = final.summary.model_copy(update={"retries": 4})
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_errors(pilot)
        banner = lines_of(screen.query_one("#errors-retries"))
        assert banner == ["final: 4 attempts re-run after failing: re-running only failures can bias the mean"]
        tree = screen.query_one(Tree)
        tree.root.children[0].collapse()  # folded by the user: stays folded when the tree is rebuilt
        store.apply(
            ev.AttemptFinished(
                label="root",
                record=AttemptRecord(
                    repeat=1, id="t01", status="error", error="TimeoutError: 30 s", judge=Judged(score=0.0)
                ),
            )
        )
        screen.post_message(HermitApp.StoreUpdated())
        await pilot.pause()
        kinds = [(str(n.label).split("   ")[0], n.is_expanded) for n in tree.root.children]
        assert kinds == [
            ("error · ValueError", False),
            ("error · TimeoutError", True),
            ("judge_error · KeyError", True),
        ]
        assert lines_of(screen.query_one("#errors-summary"))[0].startswith("11 of 108 attempts ended in an error")


async def test_no_errors():
    store = EvalStore({t["id"]: t for t in FIXED_TASKS}, [])
    store.apply(ev.SelectorStarted(label="none", selector="none", commit=None, total=1))
    store.apply(
        ev.AttemptFinished(label="none", record=AttemptRecord(repeat=1, id="t01", status="ok", judge=Judged(score=1.0)))
    )
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_errors(pilot)
        assert screen.query_one("#errors-empty").display
        assert lines_of(screen.query_one("#errors-empty")) == ["No errors"]
        assert not screen.query_one(Tree).display


def _snap_app(retries: int | None = None):
    store = fixed_store()
    if retries:
        assert store.columns["final"].summary is not None
        store.columns["final"].summary = store.columns["final"].summary.model_copy(update={"retries": retries})
    app = HermitApp(store=store, live_updates=False)

    async def run_before(pilot) -> None:
        app.push_screen(ErrorsScreen())
        await pilot.pause()

    return app, run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_errors(snap_compare, size, private_settings):
    app, run_before = _snap_app(retries=4 if size == (120, 40) else None)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_rerun_never_touches_an_archived_evaluation(monkeypatch, tmp_path):
    store = fixed_store()
    root_dir = tmp_path / "run" / "eval" / "root"
    (root_dir / "archive" / "20260101T000000Z").mkdir(parents=True)
    store.columns["root"].source = "disk"
    store.columns["root"].folder = root_dir / "archive" / "20260101T000000Z"  # an archived root, named "root"
    store.columns["root"].archived = True
    store.columns["final"].source = "disk"
    store.columns["final"].folder = tmp_path / "run" / "eval" / "final"  # the current final
    (tmp_path / "run" / "eval" / "final").mkdir(parents=True)
    app = HermitApp(store=store, live_updates=False)
    app.config = stand_in_config(run_dir=tmp_path / "run")
    launches: list[LaunchOptions] = []
    monkeypatch.setattr(app, "launch", launches.append)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_errors(pilot)
        plan, skipped = screen.retry_plan()
        assert skipped == ["root"]
        assert sorted(plan) == ["final", "none"]
        assert plan["final"] == sorted(T05 + [("t09", 2)])


async def test_rerun_never_retries_a_smoke_check_into_the_evaluation(tmp_path):
    """A smoke launch's live column writes eval/<label>/smoke/; a retry re-runs attempts of eval/<label>/, so the
    smoke check's failures are left out (launch the smoke check again instead)."""
    store = fixed_store()
    run = tmp_path / "run"
    store.columns["final"].source = "live"
    store.columns["final"].folder = run / "eval" / "final" / "smoke"
    store.columns["root"].source = "disk"
    store.columns["root"].folder = run / "eval" / "root" / "smoke"  # opened from History
    app = HermitApp(store=store, live_updates=False)
    app.config = stand_in_config(run_dir=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_errors(pilot)
        plan, skipped = screen.retry_plan()
        assert sorted(skipped) == ["final", "root"] and sorted(plan) == ["none"]
