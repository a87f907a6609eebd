"""Triage in the dashboard: label attempts by key on the drill-down, the per-task table and the errors screen; the
counts move on the errors and compare screens; the walk over unlabelled failures; the note, label-set and
label-filter dialogs; the files on disk. Expected values are worked out by hand from tests/fixture_data.py (see
tests/ui/test_tasks_screen.py's table and tests/test_annotations.py's walk)."""

from __future__ import annotations

import io
import json
from typing import TypeVar

import pytest
from fixture_data import annotate_fixed, fixed_store, fixture_app
from journey_kit import setup_ready, type_text, wait_for
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static, Tree

from hermit_tui.core.records.annotations import ANNOTATIONS, JUDGE_DISAGREES, read_annotations
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.annotate import LabelPickScreen, LabelSetScreen, NoteScreen
from hermit_tui.dashboard.screens.attempt import AttemptScreen
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.screens.errors import AttemptRef, ErrorsScreen
from hermit_tui.dashboard.screens.tasks import TasksScreen
from hermit_tui.dashboard.widgets.attempt_card import AttemptCard
from hermit_tui.dashboard.widgets.virtual_table import VirtualTable

SIZES = [(80, 24), (200, 50)]

S = TypeVar("S", bound=Screen)


def make_app(store=None) -> HermitApp:
    return fixture_app(None, screen=None, store=store)


async def push(pilot, screen: S) -> S:
    await pilot.pause()
    pilot.app.push_screen(screen)
    await pilot.pause()
    await pilot.pause()
    shown = pilot.app.screen
    assert isinstance(shown, type(screen))
    return shown


def labels(app, key: str, task: str, repeat: int) -> list[str]:
    ann = app.store.annotation(key, task, repeat)
    return ann.labels if ann else []


def text_of(widget: Static) -> str:
    """What a Static shows, as plain text (its Text, or its Rich renderables rendered 200 columns wide)."""
    from rich.console import Console

    content = widget.content
    if isinstance(content, str):
        return content
    if hasattr(content, "plain"):
        return content.plain
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(content)
    return console.export_text()


def taxonomy_rows(screen: ErrorsScreen) -> dict[str, list[str]]:
    """The errors screen's taxonomy as {first cell: the other cells}."""
    out = {}
    for line in text_of(screen.query_one("#errors-taxonomy", Static)).splitlines():
        cells = line.split("  ")
        cells = [c.strip() for c in cells if c.strip()]
        if cells:
            out[cells[0]] = cells[1:]
    return out


def pair_rows(screen: CompareScreen) -> dict[str, tuple]:
    table = screen.query_one("#labels-table", VirtualTable)
    return {c.label: (c.a_tasks, c.b_tasks, c.fixed, c.introduced, c.untriaged) for c in table.rows}


# ---------------------------------------------------------------------------------------------------- the keys


async def test_keys_label_the_focused_attempt_and_the_counts_move_on_errors_and_compare():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await push(pilot, AttemptScreen("t05", "final", 1))
        assert screen.chosen_attempt() == ("final", "t05", 1)
        await pilot.press("2")  # format error
        assert labels(app, "final", "t05", 1) == ["format error"]
        await pilot.press("7", "2")  # timeout on, format error off: several per attempt, toggles
        assert labels(app, "final", "t05", 1) == ["timeout"]
        await pilot.press("2")
        card = next(c for c in screen.query(AttemptCard) if (c.key, c.record.repeat) == ("final", 1))
        await pilot.pause()
        assert "labels [timeout] · [format error]" in card.annotation.plain
        assert "1 of 54 failures labelled" in text_of(screen.query_one("#attempt-title", Static))

        errors = await push(pilot, ErrorsScreen())
        rows = taxonomy_rows(errors)
        assert rows["label"] == ["none", "root", "final"]
        assert rows["timeout"] == ["0", "0", "1"] and rows["format error"] == ["0", "0", "1"]
        # unlabelled failures: none 27, root 17, final 10 - 1
        assert rows["unlabelled failures"] == ["27", "17", "9"]
        # label root's t05 repeat 2 from the errors tree: the counts move
        tree = errors.query_one(Tree)
        leaf = next(n for n in _walk(tree.root) if n.data == AttemptRef("root", "t05", 2))
        tree.move_cursor(leaf)
        await pilot.pause()
        await pilot.press("6")  # flaky infrastructure
        await pilot.pause()
        assert labels(app, "root", "t05", 2) == ["flaky infrastructure"]
        rows = taxonomy_rows(errors)
        assert rows["flaky infrastructure"] == ["0", "1", "0"] and rows["unlabelled failures"] == ["27", "16", "9"]
        assert tree.cursor_node is not None and "[flaky infrastructure]" in str(
            tree.cursor_node.label
        )  # the leaf shows its labels

        compare = await push(pilot, CompareScreen("none", "final"))
        compare.action_show_labels()
        await pilot.pause()
        pairs = pair_rows(compare)
        # none's failures on t05 carry no label yet: not "introduced", "not triaged"
        assert pairs["timeout"] == (0, 1, [], [], ["t05"]) and pairs["format error"] == (0, 1, [], [], ["t05"])
        app.pop_screen()
        await pilot.pause()
        app.pop_screen()  # back to the drill-down: label none's t05 too, the pair view follows
        await pilot.pause()
        app.screen.query_one("#sel-0-r1", AttemptCard).focus()  # none's first attempt
        await pilot.press("2")
        assert labels(app, "none", "t05", 1) == ["format error"]
        compare = await push(pilot, CompareScreen("none", "final"))
        compare.action_show_labels()
        await pilot.pause()
        assert pair_rows(compare)["format error"] == (1, 1, [], [], [])
        assert pair_rows(compare)["timeout"] == (0, 1, [], [], ["t05"])  # none's repeats 2 and 3 still unlabelled
        counts = text_of(compare.query_one("#labels-counts", Static))
        assert "3 of 54 failures labelled" in counts


def _walk(node):
    for child in node.children:
        yield child
        yield from _walk(child)


async def test_zero_clears_and_a_key_beyond_the_set_says_so():
    app = make_app(annotate_fixed(fixed_store()))
    async with app.run_test(size=(120, 40)) as pilot:
        await push(pilot, AttemptScreen("t04", "final", 2))
        assert labels(app, "final", "t04", 2) == ["wrong reasoning", "format error"]
        await pilot.press("0")
        assert app.store.annotation("final", "t04", 2) is None
        await pilot.press("9")  # the default set has 7 labels
        assert app.store.annotation("final", "t04", 2) is None
        assert any("no label 9" in n.message for n in app._notifications)


# ---------------------------------------------------------------------------------------------------- the walk


async def test_u_walks_the_unlabelled_failures_regressions_first_on_the_table():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await push(pilot, TasksScreen())
        assert screen.chosen_attempt() == ("none", "t01", 1)  # the first row's first failure in walk order
        await pilot.press("u")
        cursor = screen.table.cursor_value
        assert screen.chosen_attempt() == ("final", "t04", 1) and cursor is not None and cursor.task_id == "t04"
        strip = text_of(screen.query_one("#tasks-triage", Static))
        assert "final · t04 · repeat 1" in strip and "0 of 54 failures labelled" in strip
        await pilot.press("4")  # wrong reasoning, on the target
        assert labels(app, "final", "t04", 1) == ["wrong reasoning"]
        await pilot.press("u")
        assert screen.chosen_attempt() == ("final", "t04", 2)
        await pilot.press("u", "u")  # skipped, unlabelled: t04 r3, then t10 r1
        cursor = screen.table.cursor_value
        assert screen.chosen_attempt() == ("final", "t10", 1) and cursor is not None and cursor.task_id == "t10"
        await pilot.press("a")  # the row's next attempt: t10's failures in walk order, then the passes
        assert screen.chosen_attempt() == ("final", "t10", 2)
        assert "1 of 54 failures labelled" in text_of(screen.query_one("#tasks-triage", Static))


async def test_u_on_the_drill_down_goes_to_the_next_card_then_the_next_task():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await push(pilot, AttemptScreen("t04", "final", 1))
        await pilot.press("4")
        await pilot.press("u")
        await pilot.pause()
        assert app.screen is screen and screen.chosen_attempt() == ("final", "t04", 2)
        await pilot.press("u")
        await pilot.pause()
        assert screen.chosen_attempt() == ("final", "t04", 3)
        await pilot.press("u")  # the next regression is t10's: the drill-down shows that task instead
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, AttemptScreen)
                and app.screen.task_id == "t10"
                and app.screen.chosen_attempt() == ("final", "t10", 1)
            ),
        )
        assert len(app.screen_stack) == 2  # replaced, not stacked


async def test_every_failure_labelled_says_so():
    store = fixed_store()
    from hermit_tui.core.records.annotations import Annotation

    for f in store.failure_walk():
        store.put_annotation(f.key, Annotation(repeat=f.repeat, id=f.task_id, labels=["timeout"]))
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await push(pilot, TasksScreen())
        await pilot.press("u")
        assert any("Every one of the 54 failures carries a label" in n.message for n in app._notifications)


# ---------------------------------------------------------------------------------------------------- dialogs


async def test_note_and_corrected_score_keep_the_judge_score_apart():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await push(pilot, AttemptScreen("t10", "final", 1))
        before = app.store.columns["final"].records[("t10", 1)].judge.score
        await pilot.press("n")
        assert isinstance(app.screen, NoteScreen)
        await type_text(pilot, "half right")
        app.screen.query_one("#note-score", Input).value = "high"
        await pilot.press("enter")
        assert isinstance(app.screen, NoteScreen)  # a bad score: said in the dialog, nothing saved
        assert "not a number" in text_of(app.screen.query_one("#note-error", Static))
        app.screen.query_one("#note-score", Input).value = "1"
        await pilot.press("enter")
        await pilot.pause()
        ann = app.store.annotation("final", "t10", 1)
        assert ann is not None
        assert (ann.note, ann.corrected_score, ann.labels) == ("half right", 1.0, [JUDGE_DISAGREES])
        assert app.store.columns["final"].records[("t10", 1)].judge.score == before == 0.5
        card = next(c for c in screen.query(AttemptCard) if (c.key, c.record.repeat) == ("final", 1))
        assert "corrected score 1.000 (the judge's 0.500 stays recorded)" in card.annotation.plain
        assert "note half right" in card.annotation.plain
        await pilot.press("1")  # judge disagrees off: the corrected score goes with it
        note = app.store.annotation("final", "t10", 1)
        assert note is not None and note.corrected_score is None


async def test_the_label_set_dialog_changes_keys_1_to_9():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(pilot, AttemptScreen("t05", "final", 1))
        await pilot.press("L")
        assert isinstance(app.screen, LabelSetScreen)
        app.screen.query_one("#labelset-8", Input).value = "off by one"
        app.screen.query_one("#labelset-9", Input).value = "format error"  # already number 2
        await pilot.click("#labelset-ok")
        assert isinstance(app.screen, LabelSetScreen)
        assert "'format error' is in the set twice" in text_of(app.screen.query_one("#labelset-error", Static))
        app.screen.query_one("#labelset-9", Input).value = ""
        # a button ignores presses during its "active" effect after a click: wait for the effect to end
        await wait_for(pilot, lambda: not app.screen.query_one("#labelset-ok").has_class("-active"))
        await pilot.press("enter")  # on the Save button, focused by the click
        await pilot.pause()
        assert app.store.label_set[7] == "off by one" and len(app.store.label_set) == 8
        await pilot.press("8")
        assert labels(app, "final", "t05", 1) == ["off by one"]


async def test_the_table_filters_by_label_from_a_picker():
    app = make_app(annotate_fixed(fixed_store()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await push(pilot, TasksScreen())
        await pilot.press("F")
        assert isinstance(app.screen, LabelPickScreen)
        options = app.screen.query_one(OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert prompts[:3] == [
            "no label filter (every task)",
            "any label (8 attempts)",
            "unlabelled failures (47 attempts)",
        ]
        assert "format error (2 attempts)" in prompts
        options.highlighted = prompts.index("format error (2 attempts)")
        await pilot.press("enter")
        await pilot.pause()
        assert [r.task_id for r in screen.table.rows] == ["t04", "t05"]
        assert text_of(screen.query_one("#tasks-count", Static)) == "2 of 12 tasks · all tasks · label: format error"
        await pilot.press("f")  # combines with the other filters: errors only
        assert [r.task_id for r in screen.table.rows] == ["t05"]
        screen.set_label_filter(None)
        await pilot.pause()
        assert len(screen.table.rows) == 2


# ---------------------------------------------------------------------------------------------------- on disk


async def test_labels_reach_the_evaluation_folder_and_the_label_set_the_settings(evaluated_copy):
    demo = evaluated_copy
    app = HermitApp(demo.config_path, overrides=["agent.params.latency_scale=0"])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app) and len(app.store.columns) == 3)
        app.goto("tasks")
        await pilot.pause()
        await pilot.press("u")
        assert isinstance(app.screen, TasksScreen)  # u in the table moves the table's cursor
        chosen = app.screen.chosen_attempt()
        assert chosen is not None
        key, task, repeat = chosen
        await pilot.press("2", "4")
        await wait_for(
            pilot,
            lambda: (
                app.annotations_pending == 0 and labels(app, key, task, repeat) == ["format error", "wrong reasoning"]
            ),
        )
        written = [json.loads(line) for line in (demo.eval / key / ANNOTATIONS).read_text().splitlines()]
        assert [(w["id"], w["repeat"], w["labels"]) for w in written] == [
            (task, repeat, ["format error"]),
            (task, repeat, ["format error", "wrong reasoning"]),
        ]
        assert app.store.triage_progress()[0] == 1

        await pilot.press("L")
        app.screen.query_one("#labelset-8", Input).value = "units"
        await pilot.click("#labelset-ok")
        await pilot.pause()
        settings = json.loads((demo.root.parent / "settings" / "settings.json").read_text())
        assert settings["labels"][str(demo.root.resolve() / "runs" / "demo")][7] == "units"
        assert b"units" not in demo.config_path.read_bytes()

    # a second dashboard reads them back
    app = HermitApp(demo.config_path, overrides=["agent.params.latency_scale=0"])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app) and len(app.store.columns) == 3)
        assert labels(app, key, task, repeat) == ["format error", "wrong reasoning"]
        assert app.store.label_set[7] == "units"
    assert read_annotations(demo.eval / key).entries[(task, repeat)].labels == ["format error", "wrong reasoning"]


# ---------------------------------------------------------------------------------------------------- snapshots


def _push(factory, *keys):
    async def run(pilot) -> None:
        await pilot.pause()
        pilot.app.push_screen(factory())
        await pilot.pause()
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()
        pilot.app.clear_notifications()  # a toast would hide what the view shows
        await pilot.pause()

    return run


async def _compare_labels(pilot) -> None:
    await pilot.pause()
    pilot.app.push_screen(CompareScreen("none", "final"))
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "paired", None) is not None)
    pilot.app.screen.action_show_labels()
    await wait_for(pilot, lambda: pilot.app.screen.query_one("#tab-labels").display)
    await pilot.pause()


VIEWS = [
    ("note", _push(lambda: AttemptScreen("t10", "final", 3), "n")),
    ("labelset", _push(lambda: AttemptScreen("t04", "final", 1), "L")),
    ("label-filter", _push(TasksScreen, "F")),
    ("attempt-labelled", _push(lambda: AttemptScreen("t04", "final", 2))),
    ("tasks-triage", _push(TasksScreen, "u")),
    ("errors-labelled", _push(ErrorsScreen)),
    ("compare-labels", _compare_labels),
]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("name,before", VIEWS, ids=[v[0] for v in VIEWS])
def test_snapshot(snap_compare, name, before, size):
    assert snap_compare(make_app(annotate_fixed(fixed_store())), terminal_size=size, run_before=before)


async def test_on_a_large_store_the_walk_is_computed_in_a_worker(monkeypatch):
    import hermit_tui.dashboard.annotating as annotating

    monkeypatch.setattr(annotating, "WALK_WORKER_THRESHOLD", 0)  # every store is "large"
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await push(pilot, TasksScreen())
        assert not app.store.walk_ready()
        await pilot.press("u")
        await wait_for(pilot, lambda: screen.chosen_attempt() == ("final", "t04", 1))
        assert app.store.walk_ready()
        assert any(w.name == "triage-walk" for w in app.workers) or app.store.walk_ready()
        await pilot.press("u")  # the walk is ready: at once
        assert screen.chosen_attempt() == ("final", "t04", 2)


def test_the_store_taxonomy_agrees_with_the_engine():
    """The store keeps running counts; the report computes from the records: the figures must be the same."""
    from hermit_tui.core.records.annotations import pair_taxonomy, selector_taxonomy

    store = annotate_fixed(fixed_store())
    for key, col in store.columns.items():
        fast = store.taxonomy()[key]
        slow = selector_taxonomy(key, col.records, col.annotations, store.threshold, store.label_set)
        assert fast == slow, key
    ca, cb = store.columns["none"], store.columns["final"]
    assert store.pair_taxonomy("none", "final") == pair_taxonomy(
        "none", ca.records, ca.annotations, "final", cb.records, cb.annotations, store.label_set, store.task_ids
    )
    assert store.triage_progress() == (7, 54)
