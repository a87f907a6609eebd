"""The Slices screen (compare's g): the pair per slice of the test tasks, its figures as the files give them, enter
opening the per-task table on one slice (c shows every task again), the field picker, and snapshots at 80x24 and
200x50. The expected slices and means are computed here from tasks.jsonl, test.txt and each results.jsonl."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from statistics import fmean

import pytest
from demo_copies import repair_worktree
from journey_kit import wait_for
from textual.widgets import Select, Static

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.screens.slices import SlicesScreen, sliceable_fields
from hermit_tui.dashboard.screens.tasks import TasksScreen
from hermit_tui.dashboard.widgets.virtual_table import VirtualTable

SIZES = [(80, 24), (200, 50)]


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("slices-ui") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(
        load_config(dest / "run.yaml", ["agent.params.latency_scale=0"]), ["none", "final"], update_card=False
    ).run_sync()
    return dest


@pytest.fixture
def run_yaml(evaluated, tmp_path) -> Path:
    dest = tmp_path / "demo"
    shutil.copytree(evaluated, dest, symlinks=True)
    repair_worktree(evaluated, dest)
    return dest / "run.yaml"


def by_hand(ws: Path) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Category -> test task ids (test order), and category -> mean over its tasks of final's task mean minus none's
    (failed attempts score 0), from the files."""
    test = ws.joinpath("test.txt").read_text().split()
    category = {r["id"]: r["category"] for r in map(json.loads, ws.joinpath("tasks.jsonl").read_text().splitlines())}
    groups: dict[str, list[str]] = defaultdict(list)
    for tid in test:
        groups[category[tid]].append(tid)
    means = {}
    for label in ("none", "final"):
        scores: dict[str, list[float]] = defaultdict(list)
        for line in ws.joinpath("runs", "demo", "eval", label, "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            scores[r["id"]].append(r["judge"]["score"] if r["status"] == "ok" else 0.0)
        means[label] = {tid: fmean(s) for tid, s in scores.items()}
    diffs = {name: fmean(means["final"][t] - means["none"][t] for t in ids) for name, ids in groups.items()}
    return dict(groups), diffs


def loaded(app) -> bool:
    return app.config is not None and {"none", "final"} <= set(app.store.keys)


async def open_slices(pilot) -> SlicesScreen:
    app = pilot.app
    await wait_for(pilot, lambda: loaded(app))
    app.push_screen(CompareScreen(a="none", b="final"))
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
    await pilot.press("g")
    await wait_for(pilot, lambda: isinstance(app.screen, SlicesScreen) and app.screen.ready)
    return app.screen


async def test_slices_show_the_pair_per_category_as_the_files_give_it(run_yaml):
    groups, diffs = by_hand(run_yaml.parent)
    app = HermitApp(run_yaml)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_slices(pilot)
        assert screen.problem is None and screen.field == "category"
        report = screen.report
        assert report is not None
        assert [s.name for s in report.slices] == list(groups)
        for s in report.slices:
            assert s.task_ids == groups[s.name]
            assert s.pairs[0].mean_diff == pytest.approx(diffs[s.name], abs=1e-12)
        table = screen.query_one("#slices-table", VirtualTable)
        assert table.has_focus and table.row_count == len(groups)
        title = str(screen.query_one("#slices-title", Static).render())
        assert "final − none" in title and f"{len(groups)} slices by category" in title
        note = str(screen.query_one("#slices-note", Static).render())
        assert "Benjamini" in note and "Holm" in note
        # enter: the per-task table on the first slice's tasks only; c shows every task again
        first = report.slices[0]
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TasksScreen) and app.screen._shown == len(first.task_ids))
        tasks = app.screen
        assert isinstance(tasks, TasksScreen)
        count = str(tasks.query_one("#tasks-count", Static).render())
        assert f"{len(first.task_ids)} of {len(app.store.task_ids)} tasks" in count
        assert f"slice category = {first.name}" in count
        await pilot.press("c")
        await wait_for(pilot, lambda: tasks._shown == len(app.store.task_ids))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)


async def test_the_field_picker_offers_grouping_fields_only(run_yaml):
    tasks = {
        "a": {"id": "a", "category": "x", "tags": ["p", "q"], "input": "one", "n": 1},
        "b": {"id": "b", "category": "y", "tags": ["q"], "input": "two", "n": 1},
        "c": {"id": "c", "category": "x", "tags": [], "input": "three", "n": 2},
    }
    # input: one value per task (not a grouping); id is never offered; category first
    assert sliceable_fields(tasks, ["a", "b", "c"]) == ["category", "n", "tags"]
    app = HermitApp(run_yaml)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_slices(pilot)
        select = screen.query_one("#slices-field", Select)
        assert select.value == "category" and "input" not in screen.fields and "id" not in screen.fields


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "200x50"])
def test_snapshot(snap_compare, run_yaml, size):
    async def run_before(pilot) -> None:
        await open_slices(pilot)
        await pilot.pause()

    assert snap_compare(HermitApp(run_yaml), terminal_size=size, run_before=run_before)
