"""The dashboard on a project trained by the real ``hermit train``, with the evaluations ``hermit eval`` wrote on disk
(a commit evaluation of one repeat among them): a launch's view is exactly what it launched, from its first frame;
other evaluations go in and out of the view from History and the per-task table; ``l`` pressed before the setup
screen's versions and remembered picks are in place waits for them. Expected values come from the files (folder
names, summary.json read with json), never from hermit-tui's readers."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from textual.widgets import Button, OptionList
from trained_project import RUN, RUN_DIR, copy_trained_project
from waiting import wait_for

from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.history import HistoryScreen, HistoryTable
from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.screens.setup import SetupScreen
from hermit_tui.dashboard.screens.tasks import TasksScreen

PICKS = ["none", "root", f"{RUN}/ckpt-step-1", "final", "adapters/shouty"]
LAUNCHED = {"none", "root", f"{RUN}_ckpt-step-1", "final", "shouty"}  # the labels hermit-tui gives them


@pytest.fixture(scope="module")
def trained(trained_template) -> Path:
    """The session's trained project: each test copies it (project)."""
    return trained_template


@pytest.fixture
def project(trained, tmp_path, monkeypatch) -> Path:
    """A private copy of the trained project, and settings that tick the five versions of the issue."""
    config = copy_trained_project(trained, tmp_path / "project")
    settings = tmp_path / "settings"
    settings.mkdir()
    (settings / "settings.json").write_text(
        json.dumps({"launch": {str(config.resolve()): {"picks": PICKS, "added": ["adapters/shouty"], "repeats": "1"}}})
    )
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(settings))
    return config


def on_disk(config: Path) -> dict[str, dict]:
    """label -> summary.json of every current evaluation hermit wrote (read with json)."""
    root = config.parent / RUN_DIR / "eval"
    return {p.parent.name: json.loads(p.read_text()) for p in root.glob("*/summary.json")}


def restored(app) -> bool:
    return isinstance(app.screen, SetupScreen) and app.screen._restored


async def test_the_run_screen_shows_exactly_the_launch_from_its_first_frame(project, monkeypatch):
    hermit = on_disk(project)
    commit = next(label for label, s in hermit.items() if label not in LAUNCHED)  # the commit evaluation
    assert hermit[commit]["repeats"] == 1 and set(hermit) == LAUNCHED | {commit}
    frames: list[dict[str, tuple[str, int, int]]] = []
    original = RunScreen.refresh_from_store

    def record(self) -> None:
        cols = self.app.store.columns
        frames.append({k: (c.source, c.done, c.expected) for k, c in cols.items()})
        original(self)

    monkeypatch.setattr(RunScreen, "refresh_from_store", record)
    app = HermitApp(project)
    async with app.run_test(size=(80, 24)) as pilot:
        # hermit's six evaluations, read from disk, are the view before the launch
        await wait_for(pilot, lambda: restored(app) and set(app.store.columns) == set(hermit))
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and not app.running and frames)
        await wait_for(pilot, lambda: all(c.summary is not None for c in app.store.columns.values()))
        # the first frame: the five launched, nothing of the earlier evaluations (hermit's 36/36 or the commit's 12)
        first = frames[0]
        assert set(first) == LAUNCHED
        assert all(source == "live" and done == 0 for source, done, _ in first.values()), first
        assert all(set(frame) == LAUNCHED for frame in frames)
        tasks = len((project.parent / "test.txt").read_text().split())
        assert {k: c.done for k, c in app.store.columns.items()} == dict.fromkeys(LAUNCHED, tasks)
        status = str(app.screen.query_one("#run-status").render())
        assert f"{5 * tasks}/{5 * tasks} attempts" in status and "5 selectors × 1 repeats" in status

        # History puts hermit's commit evaluation beside the launch, and takes it out again
        await pilot.press("s", "h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.evaluations)
        history = app.screen
        assert isinstance(history, HistoryScreen)
        table = history.query_one("#history-table", HistoryTable)
        row = next(i for i, e in enumerate(history.evaluations) if e.label == commit and not e.archived)
        table.cursor_row = row
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TasksScreen) and commit in app.store.columns)
        assert app.store.columns[commit].source == "disk" and app.store.columns[commit].done == tasks
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        table.cursor_row = row
        await pilot.pause()
        assert str(history._cell(history.evaluations[row], "view")) == "shown"
        await pilot.press("x")
        await wait_for(pilot, lambda: commit not in app.store.columns)
        assert set(app.store.columns) == LAUNCHED  # the launch's own stay
        assert str(history._cell(history.evaluations[row], "view")) == ""

        # the per-task table takes one out too (x, then the choice), and + leads to History to put it back
        await pilot.press("escape")  # History was below the table: back to Setup
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, TasksScreen))
        await pilot.press("x")
        await wait_for(pilot, lambda: app.screen.query("#pick-list"))
        options = app.screen.query_one("#pick-list", OptionList)
        options.highlighted = list(app.store.columns).index("shouty")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "shouty" not in app.store.columns)
        assert set(app.store.columns) == LAUNCHED - {"shouty"}
        await pilot.press("plus")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))


async def test_an_early_l_waits_for_the_versions_and_the_remembered_picks(project, monkeypatch):
    gate = threading.Event()
    original = SetupScreen._load_versions

    def slow(self) -> None:  # the adapter tree read by a slow disk: l arrives before the versions
        gate.wait(60)
        original(self)

    monkeypatch.setattr(SetupScreen, "_load_versions", slow)
    launched: list[list[str]] = []
    launch = HermitApp.launch

    def record(self, options) -> None:
        launched.append(list(options.selectors))
        launch(self, options)

    monkeypatch.setattr(HermitApp, "launch", record)
    app = HermitApp(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen.query("#launch"))
        await pilot.press("l")
        await pilot.pause()
        assert launched == [] and not app.running
        label = str(app.screen.query_one("#launch", Button).label)
        assert "once the versions are read" in label
        assert any("launch starts once they are in place" in n.message for n in app._notifications)
        gate.set()
        await wait_for(pilot, lambda: launched)
        assert launched == [PICKS]  # every remembered pick, in the list's order
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and not app.running)
        assert set(app.store.columns) == LAUNCHED


def failures(config: Path) -> dict[str, int]:
    """label -> attempts whose status is not ok, from each results.jsonl hermit wrote (the latest per attempt)."""
    out = {}
    for path in (config.parent / RUN_DIR / "eval").glob("*/results.jsonl"):
        latest = {}
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            latest[(rec["id"], rec["repeat"])] = rec["status"]
        out[path.parent.name] = sum(status != "ok" for status in latest.values())
    return out


async def test_rerun_failed_continues_each_evaluation_with_its_own_repeats(project):
    from hermit_tui.dashboard.screens.errors import ConfirmRetry, ErrorsScreen

    hermit, failed = on_disk(project), failures(project)
    commit = next(label for label in hermit if label not in LAUNCHED)
    assert hermit[commit]["repeats"] == 1 and {hermit[k]["repeats"] for k in LAUNCHED} == {3}
    # hermit measured final on a commit its tag has moved on from (the card commit): a retry of final is refused,
    # so the user takes it out of the view first (the per-task table's x), as the refusal suggests
    shown = set(hermit) - {"final"}
    app = HermitApp(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: restored(app) and set(app.store.columns) == set(hermit))
        app.take_out(["final"])
        hermit = {k: v for k, v in hermit.items() if k in shown}
        app.goto("errors")
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorsScreen))
        await pilot.press("R")
        confirm = await wait_for(pilot, lambda: app.screen if isinstance(app.screen, ConfirmRetry) else None)
        scopes = [text for text, _ in confirm.scopes()]
        assert scopes[0].startswith(f"every shown selector: {sum(failed[k] for k in shown)} attempts of 5, 2 launches")
        assert f"only {commit}: {failed[commit]} attempts (1 repeat)" in scopes
        await pilot.press("enter")  # the default is what shift+r asked for: re-run them, every shown selector
        # the retries are few and quick: the chain can be over before a poll sees it running, so wait for what it
        # leaves behind (every shown evaluation's summary records its retries), not for the running state
        await wait_for(
            pilot,
            lambda: (
                not app.running
                and not app._chain
                and all(
                    json.loads((project.parent / RUN_DIR / "eval" / k / "summary.json").read_text()).get("retries")
                    for k in hermit
                )
            ),
            timeout=60,
        )
        assert set(app.store.columns) == shown  # both launches of the chain stay in the view
    after = on_disk(project)
    assert "retries" not in after["final"]
    for label in hermit:
        assert after[label]["repeats"] == hermit[label]["repeats"], label  # each kept its own protocol
        assert after[label]["retries"] == failed[label], label


async def test_rerun_of_one_selector(project):
    from hermit_tui.dashboard.screens.errors import ConfirmRetry, ErrorsScreen

    hermit, failed = on_disk(project), failures(project)
    app = HermitApp(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: restored(app) and set(app.store.columns) == set(hermit))
        app.goto("errors")
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorsScreen))
        await pilot.press("R")
        confirm = await wait_for(pilot, lambda: app.screen if isinstance(app.screen, ConfirmRetry) else None)
        index = next(i for i, (text, _) in enumerate(confirm.scopes()) if text.startswith("only root:"))
        confirm.query_one("#retry-scope", OptionList).highlighted = index
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, RunScreen) and not app.running and set(app.store.columns) == {"root"},
            timeout=120,
        )
    after = on_disk(project)
    assert after["root"]["retries"] == failed["root"]
    assert all("retries" not in after[k] or not after[k]["retries"] for k in hermit if k != "root")
