"""The history screen: evaluations read back from disk (hermit's own format, archived, damaged), chosen and opened."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static
from textual.worker import WorkerCancelled
from waiting import wait_for

from hermit_tui.core.workspace.config import load_config
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.history import HistoryScreen, HistoryTable
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.widgets.virtual_table import CURSOR_MARK

ARCHIVE_STAMP = "20260102T030405Z"


def hermit_record(repeat: int, tid: str, score: float | None, cost: float | None = 0.001) -> str:
    """One results.jsonl line exactly as ``hermit eval`` writes it (score None: the pipeline raised)."""
    if score is None:
        rec = {
            "repeat": repeat,
            "id": tid,
            "status": "error",
            "error": "ValueError: boom",
            "output": None,
            "judge": {"score": 0.0, "feedback": "the pipeline failed: ValueError: boom"},
            "cost_usd": None,
            "wall_s": 0.1,
            "api_speed": None,
            "tokens": None,
            "log": None,
        }
    else:
        rec = {
            "repeat": repeat,
            "id": tid,
            "status": "ok",
            "error": None,
            "output": f"answer {tid}",
            "judge": {"score": score, "feedback": "", "extra": {}},
            "cost_usd": cost,
            "wall_s": 0.2,
            "api_speed": None,
            "tokens": 10,
            "log": None,
        }
    return json.dumps(rec) + "\n"


def write_eval(folder: Path, lines: list[str], summary: dict | str | None) -> Path:
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(lines))
    if summary is not None:
        (folder / "summary.json").write_text(summary if isinstance(summary, str) else json.dumps(summary, indent=1))
    return folder


def populate(run_dir: Path) -> dict[str, Path]:
    """Five evaluation folders, worked by hand:

    - none (current, by hermit): t1 scores 0 then 1, t2 fails twice -> mean 1/4, solved once 1/2, 2 errors,
      cost unknown (2 attempts without a cost);
    - none archived at 2026-01-02 03:04:05 (by hermit): t1 1 and 1, t2 0.5 and 0 -> mean 0.625, solved 1/2, cost 0.004;
    - root (by hermit-tui): a cancelled smoke run with retries;
    - broken: an unreadable summary.json; partial: no summary.json at all.
    """
    eval_dir = run_dir / "eval"
    none = write_eval(
        eval_dir / "none",
        [
            hermit_record(1, "t1", 0.0),
            hermit_record(1, "t2", None),
            hermit_record(2, "t1", 1.0),
            hermit_record(2, "t2", None),
        ],
        {
            "adapter": "none",
            "commit": None,
            "tasks": 2,
            "repeats": 2,
            "mean_score": 0.25,
            "solved_once": 0.5,
            "cost_usd": None,
            "unknown_cost_tasks": 2,
            "errors": 2,
            "wall_s": 3.2,
        },
    )
    archived = write_eval(
        eval_dir / "none" / "archive" / ARCHIVE_STAMP,
        [
            hermit_record(1, "t1", 1.0),
            hermit_record(1, "t2", 0.5),
            hermit_record(2, "t1", 1.0),
            hermit_record(2, "t2", 0.0),
        ],
        {
            "adapter": "none",
            "commit": None,
            "tasks": 2,
            "repeats": 2,
            "mean_score": 0.625,
            "solved_once": 0.5,
            "cost_usd": 0.004,
            "unknown_cost_tasks": 0,
            "errors": 0,
            "wall_s": 2.0,
        },
    )
    root = write_eval(
        eval_dir / "root",
        [hermit_record(1, "t1", 1.0, cost=0.0123)],
        {
            "adapter": "root",
            "commit": "abcdef0123456789abcdef0123456789abcdef01",
            "tasks": 1,
            "repeats": 2,
            "mean_score": 1.0,
            "solved_once": 1.0,
            "cost_usd": 0.0123,
            "unknown_cost_tasks": 0,
            "errors": 0,
            "wall_s": 1.0,
            "label": "root",
            "attempts": 1,
            "expected_attempts": 2,
            "complete": False,
            "cancelled": True,
            "smoke_limit": 1,
            "retries": 3,
            "hermit_tui_version": "0.1.0",
        },
    )
    broken = write_eval(eval_dir / "broken", [hermit_record(1, "t1", 1.0)], "{ this is not json")
    partial = write_eval(eval_dir / "partial", [hermit_record(1, "t1", 1.0)], None)
    return {"none": none, "archived": archived, "root": root, "broken": broken, "partial": partial}


@pytest.fixture
def config(demo_config, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(demo_config.parent.parent / "settings"))
    monkeypatch.chdir(demo_config.parent.parent)  # paths on screen are relative to here
    return load_config(demo_config)


def make_app(config) -> HermitApp:
    app = HermitApp(store=EvalStore(), live_updates=False)
    app.config = config
    return app


async def settle(pilot, *groups: str) -> None:
    """Let the screen's own workers finish (not the file tree's loader under the picker, which never ends)."""
    await pilot.pause()
    for worker in list(pilot.app.workers):
        if worker.group in groups and not worker.is_finished:
            try:
                await worker.wait()
            except WorkerCancelled:
                pass
    await pilot.pause()


async def show_history(pilot) -> HistoryScreen:
    await pilot.app.push_screen(HistoryScreen())
    await settle(pilot, "history-list")
    return pilot.app.screen


def raw_lines(screen: HistoryScreen) -> list[str]:
    table = screen.query_one(HistoryTable)
    return [table.render_line(y).text for y in range(1, table.row_count + 1)]


def table_lines(screen: HistoryScreen) -> list[str]:
    """The rows as text, without the cursor's mark (the focused table's cursor row starts with it)."""
    return [line.strip().removeprefix(CURSOR_MARK).strip() for line in raw_lines(screen)]


async def test_lists_current_archived_and_damaged_evaluations(config):
    folders = populate(config.run_dir)
    app = make_app(config)
    async with app.run_test(size=(220, 40)) as pilot:
        screen = await show_history(pilot)
        assert str(screen.query_one("#history-title", Static).content) == "Evaluations under demo/runs/demo/eval"
        lines = table_lines(screen)
        assert len(lines) == 5
        # the table has the focus once its rows are in: the cursor row, and only it, carries the mark
        assert screen.query_one(HistoryTable).has_focus
        assert [line.lstrip().startswith(CURSOR_MARK) for line in raw_lines(screen)] == [True] + [False] * 4
        # as a launch orders them: none (then its archive, newest first), root, then the others by label
        none, archived, root, broken, partial = (line.split() for line in lines)
        # the figures come right after the label (they stay on screen at 80 columns)
        assert none == ["[", "]", "none", "0.250", "2×2", "0.500", "2", "unknown", "current", "—", "none", "hermit"]
        assert archived == [
            "[",
            "]",
            "none",
            "0.625",
            "2×2",
            "0.500",
            "0",
            "$0.0040",
            "2026-01-02",
            "03:04:05",
            "—",
            "none",
            "hermit",
        ]
        assert root == [
            "[",
            "]",
            "root",
            "1.000",
            "1×2",
            "1.000",
            "0",
            "$0.0123",
            "current",
            "abcdef0",
            "root",
            "hermit-tui",
            "incomplete,",
            "smoke",
            "(1",
            "task),",
            "3",
            "retried",
        ]
        assert broken[:3] == ["[", "]", "broken"] and broken[3:12] == ["—"] * 5 + ["current"] + ["—"] * 3
        assert "summary.json: not an evaluation summary" in lines[3]
        assert "no summary.json (interrupted, or still running)" in lines[4]
        assert str(config.run_dir) not in "".join(lines)  # the problem names the file, not the whole path
        # the highlighted row's folder, what it measured, and its notes are spelled out below the table
        detail = str(screen.query_one("#history-detail", Static).content).splitlines()
        assert (
            detail[0] == "demo/runs/demo/eval/none  none · no commit · current · by hermit · cost unknown (2 attempts)"
        )
        assert [e.folder for e in screen.evaluations] == [
            folders[k] for k in ("none", "archived", "root", "broken", "partial")
        ]
        await pilot.press("end")
        detail = str(screen.query_one("#history-detail", Static).content).splitlines()
        assert detail[0] == "demo/runs/demo/eval/partial"
        assert detail[1].startswith("no summary.json")
        await pilot.press("up", "up")
        detail = str(screen.query_one("#history-detail", Static).content).splitlines()
        assert detail[0] == "demo/runs/demo/eval/root  root · abcdef0 · current · by hermit-tui"
        assert [line.split(":")[0] for line in detail[1:]] == [
            "incomplete",
            "smoke subset of 1 task",
            "3 attempts re-run after failing",
        ]


async def test_space_selects_and_enter_opens_exactly_those(monkeypatch, config):
    folders = populate(config.run_dir)
    app = make_app(config)
    added: list[list[Any]] = []
    shown: list[object] = []
    monkeypatch.setattr(app, "add_stored", added.append)
    monkeypatch.setattr(app, "goto", shown.append)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await show_history(pilot)
        # rows: none, none (archived), root, broken, partial
        await pilot.press("space", "down", "down", "space", "down", "space", "space")
        lines = table_lines(screen)
        assert [line[:3] for line in lines] == ["[x]", "[ ]", "[x]", "[ ]", "[ ]"]
        assert str(screen.query_one("#history-status", Static).content).startswith("2 selected")
        await pilot.press("enter")
        await pilot.pause()
        assert len(added) == 1
        assert [(e.folder, e.archived) for e in added[0]] == [(folders["none"], False), (folders["root"], False)]
        assert shown == ["tasks"]


async def test_enter_without_a_selection_opens_the_highlighted_archived_one(monkeypatch, config):
    folders = populate(config.run_dir)
    app = make_app(config)
    added: list[list[Any]] = []
    monkeypatch.setattr(app, "add_stored", added.append)
    monkeypatch.setattr(app, "goto", lambda name: None)
    async with app.run_test(size=(120, 40)) as pilot:
        await show_history(pilot)
        await pilot.press("down", "enter")
        await pilot.pause()
        [[stored]] = added
        assert (stored.folder, stored.label, stored.archived_at) == (folders["archived"], "none", ARCHIVE_STAMP)
        assert stored.summary.written_by_hermit and stored.summary.mean_score == 0.625


async def test_clicking_the_box_toggles_a_row(config):
    populate(config.run_dir)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await show_history(pilot)
        table = screen.query_one(HistoryTable)
        # the table's border (1) and the header line (1): row index 2 is on line 4 inside the widget
        await pilot.click(table, offset=(2, 4))
        await pilot.pause()
        assert [line[:3] for line in table_lines(screen)] == ["[ ]", "[ ]", "[x]", "[ ]", "[ ]"]
        assert table.cursor_row == 2


async def test_open_folder_by_path(monkeypatch, config, tmp_path):
    folders = populate(config.run_dir)
    outside = tmp_path / "kept" / "final"
    shutil.copytree(folders["none"], outside, ignore=shutil.ignore_patterns("archive"))
    app = make_app(config)
    added: list[list[Any]] = []
    shown: list[object] = []
    monkeypatch.setattr(app, "add_stored", added.append)
    monkeypatch.setattr(app, "goto", shown.append)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await show_history(pilot)
        field = screen.query_one("#open-folder", Input)
        field.focus()
        await pilot.press("space")  # typed into the field, not a row selection
        assert field.value == " " and screen.selected == set()
        field.value = "kept/nowhere"  # relative to the working directory (tmp_path)
        await pilot.press("enter")
        await settle(pilot, "history-open")
        assert added == [] and shown == []
        field.value = "kept/final"
        await pilot.press("enter")
        await settle(pilot, "history-open")
        [[stored]] = added
        assert (stored.folder, stored.label, stored.archived) == (outside, "final", False)
        assert stored.summary.adapter == "none" and stored.summary.errors == 2
        assert shown == ["tasks"]


async def test_empty_state_names_the_eval_folder(config):
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await show_history(pilot)
        empty = screen.query_one("#history-empty", Static)
        assert empty.display and not screen.query_one(HistoryTable).display
        assert str(empty.content) == (
            "No evaluations yet under demo/runs/demo/eval: go back to setup (escape) and "
            "launch some (l), or type the path of an evaluation folder below (/)."
        )


async def test_opened_evaluations_reach_the_store(monkeypatch, config):
    """Without stand-ins: Enter puts the chosen evaluation beside what the store already holds."""
    folders = populate(config.run_dir)
    app = make_app(config)
    monkeypatch.setattr(app, "goto", lambda name: None)
    async with app.run_test(size=(120, 40)) as pilot:
        await show_history(pilot)
        await pilot.press("enter")
        await settle(pilot, "history")
        col = app.store.columns["none"]
        assert (col.source, col.done, col.errors) == ("disk", 4, 2)
        assert folders["none"].is_dir()


async def _history(pilot) -> None:
    pilot.app.is_demo = True
    await show_history(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_snapshot(config, snap_compare, size):
    populate(config.run_dir)
    assert snap_compare(make_app(config), terminal_size=size, run_before=_history)


async def test_smoke_checks_are_listed_as_such_beside_their_label(config):
    """--limit writes eval/<label>/smoke/: History lists it (and its archive) as a smoke check after the label's
    evaluations; the current evaluation of the label stays "current"."""
    folders = populate(config.run_dir)
    smoke_summary = {
        "adapter": "none",
        "commit": None,
        "tasks": 1,
        "repeats": 2,
        "mean_score": 0.5,
        "solved_once": 1.0,
        "cost_usd": 0.002,
        "unknown_cost_tasks": 0,
        "errors": 0,
        "wall_s": 0.4,
        "label": "none",
        "attempts": 2,
        "expected_attempts": 2,
        "complete": True,
        "smoke_limit": 1,
        "hermit_tui_version": "0.1.0",
    }
    smoke = write_eval(
        folders["none"] / "smoke", [hermit_record(1, "t1", 1.0), hermit_record(2, "t1", 0.0)], smoke_summary
    )
    old = write_eval(smoke / "archive" / ARCHIVE_STAMP, [hermit_record(1, "t1", 1.0)], smoke_summary)
    app = make_app(config)
    async with app.run_test(size=(220, 40)) as pilot:
        screen = await show_history(pilot)
        assert [e.folder for e in screen.evaluations] == [
            folders["none"],
            folders["archived"],
            smoke,
            old,
            folders["root"],
            folders["broken"],
            folders["partial"],
        ]
        lines = [line.split() for line in table_lines(screen)]
        assert lines[0][8] == "current"
        assert lines[2][2:9] == ["none", "0.500", "1×2", "1.000", "0", "$0.0020", "smoke"]
        assert lines[2][9:] == ["check", "—", "none", "hermit-tui", "smoke", "check", "(1", "task)"]
        assert lines[3][8:10] == ["2026-01-02", "03:04:05"] and lines[3][-4:] == ["smoke", "check", "(1", "task)"]
        await pilot.press("down", "down")
        detail = str(screen.query_one("#history-detail", Static).content).splitlines()
        assert detail[0] == "demo/runs/demo/eval/none/smoke  none · no commit · smoke check, current · by hermit-tui"
        assert detail[1].startswith(
            "smoke check of 1 task: a wiring check kept apart from the evaluation; report, "
            "gate and publish use it only with --smoke"
        )


async def test_a_cost_partly_unknown_shows_its_known_sum_and_what_it_leaves_out(config):
    """The cost column says "unknown" when any attempt lacks a cost; the highlighted evaluation's detail line says
    what is known, as every other sum of costs does: "$0.0030 + 1 unknown" from hermit-tui's ``known_cost_usd``,
    "unknown (2 attempts)" for hermit's summary, which keeps no known part."""
    populate(config.run_dir)
    records = [hermit_record(1, "t1", 1.0, cost=0.001), hermit_record(2, "t1", 0.0, cost=0.002)]
    records.append(hermit_record(1, "t2", 1.0, cost=None))
    write_eval(
        config.run_dir / "eval" / "alpha",
        records,
        {
            "adapter": "adapters/alpha",
            "commit": None,
            "tasks": 2,
            "repeats": 2,
            "mean_score": 0.5,
            "solved_once": 1.0,
            "cost_usd": None,
            "unknown_cost_tasks": 1,
            "errors": 0,
            "wall_s": 0.4,
            "label": "alpha",
            "known_cost_usd": 0.001 + 0.002,
            "hermit_tui_version": "0.1.0",
        },
    )
    app = make_app(config)
    async with app.run_test(size=(220, 40)) as pilot:
        screen = await show_history(pilot)
        rows: dict[str, list[str]] = {}
        for line in table_lines(screen):  # the current evaluation of each label comes first
            rows.setdefault(line.split()[2], line.split())
        assert rows["alpha"][7] == "unknown" and rows["none"][7] == "unknown"
        detail = screen.query_one("#history-detail", Static)
        assert str(detail.content).splitlines()[0].endswith("current · by hermit · cost unknown (2 attempts)")
        alpha = [i for i, e in enumerate(screen.evaluations) if e.folder.name == "alpha"][0]
        await pilot.press(*["down"] * alpha)
        first: str = await wait_for(
            pilot, lambda: str(detail.content).splitlines()[0] if "alpha" in str(detail.content) else None
        )
        assert first.endswith("current · by hermit-tui · cost $0.0030 + 1 unknown")
