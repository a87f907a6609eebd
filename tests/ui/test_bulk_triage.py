"""Bulk triage (issue 27, finding 8): a label key on an error group labels every attempt of it; shift+a labels every
failure of the per-task table's rows shown (a filter, a search); shift+u puts every attempt back as it was. The
expected attempts are worked out from the fixture's records (tests/fixture_data.py) or from the files hermit wrote
(read with json), never from the screens under test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_data import FIXED_LABELS, annotate_fixed, fixed_records, fixed_store, fixture_app
from journey_kit import wait_for
from textual.widgets import Tree
from trained_project import RUN_DIR, copy_trained_project

from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.annotate import BulkLabelScreen
from hermit_tui.dashboard.screens.errors import ErrorGroup, ErrorsScreen
from hermit_tui.dashboard.screens.tasks import TasksScreen


def labels(app, key: str, task: str, repeat: int) -> list[str]:
    ann = app.store.annotation(key, task, repeat)
    return ann.labels if ann else []


def every_label(app) -> dict[tuple[str, str, int], list[str]]:
    out = {}
    for key, col in app.store.columns.items():
        for (task, repeat), ann in col.annotations.items():
            if ann.labels:
                out[(key, task, repeat)] = list(ann.labels)
    return out


def nodes(node):
    for child in node.children:
        yield child
        yield from nodes(child)


def failures_by_hand(tasks: set[str]) -> set[tuple[str, str, int]]:
    """The fixture's failed attempts of ``tasks``: an error or judge error, or a score below 1."""
    return {
        (label, r.id, r.repeat)
        for label in FIXED_LABELS
        for r in fixed_records(label)
        if r.id in tasks and (r.status != "ok" or r.judge.score < 1.0)
    }


async def open_screen(pilot, screen):
    await pilot.pause()
    pilot.app.push_screen(screen)
    await pilot.pause()
    await pilot.pause()
    return pilot.app.screen


async def test_a_label_key_on_an_error_group_labels_every_attempt_of_it_and_shift_u_undoes():
    app = fixture_app(None, screen=None, store=annotate_fixed(fixed_store()))
    async with app.run_test(size=(80, 24)) as pilot:
        before = every_label(app)
        errors = await open_screen(pilot, ErrorsScreen())
        tree = errors.query_one(Tree)
        group = next(n for n in nodes(tree.root) if isinstance(n.data, ErrorGroup) and "parsec" in n.data.error)
        tree.move_cursor(group)
        await pilot.pause()
        # t05 fails in the pipeline on every repeat of every selector: 3 x 3 attempts
        expected = {(label, "t05", r) for label in FIXED_LABELS for r in (1, 2, 3)}
        assert expected == failures_by_hand({"t05"})
        await pilot.press("3")  # tool misuse, on the group row
        await pilot.pause()
        after = every_label(app)
        assert {k for k, v in after.items() if "tool misuse" in v} == expected
        # labels the attempts had stay beside the new one
        assert after[("root", "t05", 1)] == ["flaky infrastructure", "tool misuse"]
        assert after[("final", "t05", 1)] == ["format error", "tool misuse"]
        assert app.bulk_undo is not None
        await pilot.press("U")
        await pilot.pause()
        assert every_label(app) == before
        # a label every attempt of the group already carries comes off all of them (not toggled one by one)
        await pilot.press("3", "3")
        await pilot.pause()
        assert every_label(app) == before


async def test_shift_a_labels_every_failure_of_the_rows_a_filter_or_a_search_shows():
    app = fixture_app(None, screen=None, store=fixed_store())
    async with app.run_test(size=(80, 24)) as pilot:
        tasks = await open_screen(pilot, TasksScreen())
        await pilot.press("f")  # errors only: t05 (pipeline errors) and t09 (final's judge error)
        await wait_for(pilot, lambda: {r.task_id for r in tasks.table.rows} == {"t05", "t09"})
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, BulkLabelScreen))
        await pilot.press("4")  # wrong reasoning
        await pilot.pause()
        expected = failures_by_hand({"t05", "t09"})
        assert len(expected) == 13  # t05: 9 errors; t09: none's three 0.5 scores and final's judge error
        assert {k for k, v in every_label(app).items() if "wrong reasoning" in v} == expected

        await pilot.press("f", "f", "f", "f", "f")  # back to all tasks
        tasks.query_one("#tasks-search").value = "t10"
        await wait_for(pilot, lambda: [r.task_id for r in tasks.table.rows] == ["t10"])
        tasks.table.focus()
        await pilot.press("A", "6")  # flaky infrastructure
        await pilot.pause()
        assert {k for k, v in every_label(app).items() if "flaky infrastructure" in v} == failures_by_hand({"t10"})
        await pilot.press("U")  # undoes the last bulk label only
        await pilot.pause()
        assert not any("flaky infrastructure" in v for v in every_label(app).values())
        assert {k for k, v in every_label(app).items() if "wrong reasoning" in v} == expected


async def test_nothing_to_undo_says_so():
    app = fixture_app(None, screen=None, store=fixed_store())
    async with app.run_test(size=(80, 24)) as pilot:
        await open_screen(pilot, ErrorsScreen())
        await pilot.press("U")
        await pilot.pause()
        assert any("No bulk label to undo" in n.message for n in app._notifications)


@pytest.fixture(scope="module")
def trained(trained_template) -> Path:
    """The session's trained project: each test copies it."""
    return trained_template


def latest_lines(folder: Path) -> dict[tuple[str, int], list[str]]:
    """The latest annotations.jsonl line's labels per (task, repeat), read with json."""
    out: dict[tuple[str, int], list[str]] = {}
    path = folder / "annotations.jsonl"
    if path.exists():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            out[(entry["id"], entry["repeat"])] = entry["labels"]
    return out


async def test_on_hermit_written_evaluations_a_group_is_labelled_on_disk_in_one_write_per_evaluation(
    trained, tmp_path, monkeypatch
):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    config = copy_trained_project(trained, tmp_path / "project")
    eval_root = config.parent / RUN_DIR / "eval"
    # the largest group of identical errors, from results.jsonl
    groups: dict[str, set[tuple[str, str, int]]] = {}
    for results in eval_root.glob("*/results.jsonl"):
        for line in results.read_text().splitlines():
            r = json.loads(line)
            if r["status"] != "ok":
                groups.setdefault(r["error"], set()).add((results.parent.name, r["id"], r["repeat"]))
    message, expected = max(groups.items(), key=lambda kv: len(kv[1]))
    assert len(expected) > 3
    app = HermitApp(config)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.store.columns) == len(list(eval_root.glob("*/summary.json"))))
        errors = await open_screen(pilot, ErrorsScreen())
        await wait_for(pilot, lambda: any(isinstance(n.data, ErrorGroup) for n in nodes(errors.query_one(Tree).root)))
        tree = errors.query_one(Tree)
        group = next(n for n in nodes(tree.root) if isinstance(n.data, ErrorGroup) and n.data.error == message)
        tree.move_cursor(group)
        await pilot.pause()
        await pilot.press("2")  # format error
        await wait_for(pilot, lambda: app.annotations_pending == 0)
        on_disk = {
            (folder.name, task, repeat)
            for folder in eval_root.iterdir()
            for (task, repeat), names in latest_lines(folder).items()
            if "format error" in names
        }
        assert on_disk == {(folder, task, repeat) for folder, task, repeat in expected}
        await pilot.press("U")
        await wait_for(pilot, lambda: app.annotations_pending == 0)
        for folder, task, repeat in expected:
            assert latest_lines(eval_root / folder)[(task, repeat)] == []
