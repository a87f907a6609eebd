"""The command palette (ctrl+p): each listed action is found by its name and runs, on a demo with none, root and final
evaluated (resume, add, re-run, swap, filter, sort, baseline, outputs, export, publish, undo...)."""

from __future__ import annotations

from journey_kit import settle, setup_ready, type_text, wait_for
from textual.command import CommandInput, CommandList, CommandPalette

from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.palette import palette_commands
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.screens.dialogs.confirm import ConfirmScreen
from hermit_tui.dashboard.screens.errors import ConfirmRetry
from hermit_tui.dashboard.screens.review import ReviewScreen
from hermit_tui.dashboard.screens.setup import AddSelectorScreen, SetupScreen
from hermit_tui.dashboard.screens.tasks import TasksScreen

LISTED = [
    "Resume interrupted evaluations",
    "Add an adapter directory, tag or commit…",
    "Re-run failed attempts…",
    "Swap the compared selectors",
    "Filter the per-task table (next filter)",
    "Sort the per-task table (next column)",
    "Baseline: next selector",
    "Export the report",
    "Publish the final card…",
    "Undo the last publish…",
    "Triage: next unlabelled failure",
    "Triage: toggle a label on the chosen attempt…",
    "Triage: note and corrected score on the chosen attempt…",
    "Triage: clear the chosen attempt's labels and note",
    "Triage: edit the label set (keys 1-9)…",
    "Filter the per-task table by label…",
    "Per-task table: target the row's next attempt",
    "Compare: failure labels fixed and introduced",
    "Review: failure labels line on the card (on/off)",
]


async def run_command(pilot, name: str) -> None:
    """ctrl+p, type the name, find it among the first hits, Enter."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
    app.screen.query_one(CommandInput).value = name  # as if typed (one search instead of one per key)
    hits = app.screen.query_one(CommandList)

    def found() -> int | None:
        names = [hits.get_option_at_index(i).prompt.plain.split("\n")[0] for i in range(hits.option_count)]
        return names.index(name) if name in names else None

    def near_the_top() -> bool:  # the hits arrive in batches, and those of the empty query come first
        index = found()
        return index is not None and index < 3

    try:
        await wait_for(pilot, near_the_top, timeout=10)
    except AssertionError:
        raise AssertionError(f"{name!r} is not among the first hits: {found()}") from None
    index = found()
    assert index is not None and index < 3, f"{name!r} is hit number {index}"  # typing its name finds it near the top
    hits.highlighted = index
    await pilot.press("enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))
    await pilot.pause()


def test_every_listed_action_is_in_the_palette():
    app = HermitApp()
    names = [name for name, _, _ in palette_commands(app)]
    assert set(LISTED) <= set(names)
    assert len(names) == len(set(names))


async def test_walk_the_palette(monkeypatch, evaluated_copy):
    demo = evaluated_copy
    app = HermitApp(demo.config_path, overrides=["agent.params.latency_scale=0"])
    launches: list[LaunchOptions] = []
    monkeypatch.setattr(app, "launch", launches.append)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app) and len(app.store.columns) == 3)

        await run_command(pilot, "Resume interrupted evaluations")
        assert launches[-1].selectors == ["none", "root", "final"] and launches[-1].resume is True
        await run_command(pilot, "Launch the ticked selectors side by side")
        assert launches[-1].resume is False and len(launches) == 2

        await run_command(pilot, "Add an adapter directory, tag or commit…")
        assert isinstance(app.screen, AddSelectorScreen)
        await pilot.press("escape")

        await run_command(pilot, "Filter the per-task table (next filter)")
        tasks = app.screen
        assert isinstance(tasks, TasksScreen) and tasks.filter == "errors"
        await run_command(pilot, "Sort the per-task table (next column)")
        assert app.screen is tasks and tasks.sort == "mean:none"
        await run_command(pilot, "Baseline: next selector")
        assert app.store.baseline == "root"
        await run_command(pilot, "Outputs side by side per task")
        assert tasks.outputs

        await run_command(pilot, "Re-run failed attempts…")
        assert isinstance(app.screen, ConfirmRetry)
        await pilot.press("escape")
        await pilot.pause()

        await run_command(pilot, "Swap the compared selectors")
        compare = app.screen
        assert isinstance(compare, CompareScreen) and (compare.a, compare.b) == ("final", "none")

        reports = demo.root / "runs" / "demo" / "reports"
        await run_command(pilot, "Export the report")
        await wait_for(pilot, lambda: reports.is_dir() and any((d / "report.md").is_file() for d in reports.iterdir()))

        before = demo.tag()
        await run_command(pilot, "Publish the final card…")  # the confirmation follows once the review is ready
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=30)
        await type_text(pilot, "publish")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen) and demo.tag() != before)
        await settle(pilot)
        await run_command(pilot, "Undo the last publish…")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.word == "undo"
        await type_text(pilot, "undo")
        await pilot.press("enter")
        await wait_for(pilot, lambda: demo.tag() == before)

        await run_command(pilot, "Setup: choose selectors and launch")
        assert isinstance(app.screen, SetupScreen)
        assert len(app.screen_stack) == 2  # the setup screen already open was shown again, not opened twice


async def test_walk_the_triage_commands(evaluated_copy):
    """Every triage action by name: the walk, a label, a note, clearing, the label set, the label filter, the
    target, the compare view and the card line."""
    from textual.widgets import OptionList

    from hermit_tui.core.records.annotations import ANNOTATIONS, read_annotations
    from hermit_tui.dashboard.screens.annotate import LabelPickScreen, LabelSetScreen, NoteScreen
    from hermit_tui.dashboard.screens.attempt import AttemptScreen

    demo = evaluated_copy
    app = HermitApp(demo.config_path, overrides=["agent.params.latency_scale=0"])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app) and len(app.store.columns) == 3)
        first = app.store.next_unlabelled()
        await run_command(pilot, "Triage: next unlabelled failure")  # from setup: the drill-down opens on it
        assert isinstance(app.screen, AttemptScreen)
        assert first is not None
        assert app.screen.chosen_attempt() == (first.key, first.task_id, first.repeat)

        await run_command(pilot, "Triage: toggle a label on the chosen attempt…")
        assert isinstance(app.screen, LabelPickScreen)
        app.screen.query_one(OptionList).highlighted = 2  # the third label of the set: tool misuse
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: (
                app.annotations_pending == 0
                and app.store.annotation(first.key, first.task_id, first.repeat) is not None
            ),
        )
        assert app.store.annotation(first.key, first.task_id, first.repeat).labels == ["tool misuse"]
        on_disk = read_annotations(demo.eval / first.key).entries[(first.task_id, first.repeat)]
        assert on_disk.labels == ["tool misuse"]

        await run_command(pilot, "Triage: note and corrected score on the chosen attempt…")
        assert isinstance(app.screen, NoteScreen)
        await type_text(pilot, "checked")
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: (
                app.annotations_pending == 0
                and app.store.annotation(first.key, first.task_id, first.repeat).note == "checked"
            ),
        )

        await run_command(pilot, "Triage: clear the chosen attempt's labels and note")
        await wait_for(
            pilot,
            lambda: (
                app.annotations_pending == 0 and app.store.annotation(first.key, first.task_id, first.repeat) is None
            ),
        )
        assert len((demo.eval / first.key / ANNOTATIONS).read_text().splitlines()) == 3

        await run_command(pilot, "Triage: edit the label set (keys 1-9)…")
        assert isinstance(app.screen, LabelSetScreen)
        await pilot.press("escape")

        await run_command(pilot, "Filter the per-task table by label…")
        assert isinstance(app.screen, LabelPickScreen)
        await pilot.press("down", "down", "enter")  # unlabelled failures
        tasks = app.screen
        assert isinstance(tasks, TasksScreen) and tasks.label_filter is not None
        before = tasks.chosen_attempt()
        await run_command(pilot, "Per-task table: target the row's next attempt")
        assert tasks.chosen_attempt() != before and tasks.chosen_attempt()[1] == before[1]

        await run_command(pilot, "Compare: failure labels fixed and introduced")
        assert isinstance(app.screen, CompareScreen)
        assert app.screen.query_one("#compare-tabs").active == "tab-labels"

        await run_command(pilot, "Review: failure labels line on the card (on/off)")
        assert isinstance(app.screen, ReviewScreen) and app.screen.taxonomy


async def test_a_command_for_a_screen_shown_again_runs_once_the_screen_has_resumed(monkeypatch, evaluated_copy):
    """A palette command of a screen lower in the stack (HermitApp.run_on, called as the palette calls its
    commands) shows that screen again and runs its action only once the screen has handled its resume (the per-task
    table redraws from the store there): the resume is held until the screen above has been closed, and the action
    comes after it, not in the middle of it."""
    import asyncio
    import time
    from functools import partial

    from hermit_tui.dashboard.screens.errors import ErrorsScreen

    async def until(predicate) -> None:  # pilot.pause() waits for the screen, whose resume is held here: poll
        deadline = time.monotonic() + 60
        while not predicate():
            assert time.monotonic() < deadline, "waited 60 s"
            await asyncio.sleep(0.01)

    demo = evaluated_copy
    app = HermitApp(demo.config_path, overrides=["agent.params.latency_scale=0"])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app) and len(app.store.columns) == 3)
        await run_command(pilot, "Per-task table")
        tasks = await wait_for(pilot, lambda: app.screen if isinstance(app.screen, TasksScreen) else None)
        await wait_for(pilot, lambda: len(tasks.table.rows) > 0)
        await run_command(pilot, "Errors")
        errors = await wait_for(pilot, lambda: app.screen if isinstance(app.screen, ErrorsScreen) else None)
        before = tasks.chosen_attempt()

        order: list[str] = []
        held = asyncio.Event()
        resume, next_attempt = TasksScreen.on_screen_resume, TasksScreen.action_next_attempt

        async def held_resume(self) -> None:
            order.append("resume")
            await held.wait()
            await resume(self)
            order.append("resumed")

        def recorded(self) -> None:
            order.append("action")
            next_attempt(self)

        monkeypatch.setattr(TasksScreen, "on_screen_resume", held_resume)
        monkeypatch.setattr(TasksScreen, "action_next_attempt", recorded)
        app.call_later(partial(app.run_on, "tasks", "next_attempt"))  # as the palette runs a chosen command
        await until(lambda: order[:1] == ["resume"] and not errors.is_running)  # the errors screen is closed
        held.set()
        await until(lambda: "action" in order and "resumed" in order)
        assert order == ["resume", "resumed", "action"]
        assert app.screen is tasks and before is not None
        now = tasks.chosen_attempt()
        assert now is not None and now != before and now[1] == before[1]  # the same row's next attempt
