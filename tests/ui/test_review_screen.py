"""The review & publish screen on a real demo workspace: warnings shown, refusals disabling publish, the typed
confirmation, the tick-and-click confirmation, undo, and snapshots."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
from demo_copies import copy_workspace
from fixture_data import fixture_app
from textual.widgets import Button, DataTable, Markdown, SelectionList, Static, TabbedContent
from textual.worker import WorkerCancelled

from hermit_tui.core.publish.apply import publish
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.dashboard.screens.dialogs.confirm import ConfirmScreen
from hermit_tui.dashboard.screens.review import ReviewScreen

FINAL = "40c22b79ec6057cae58bb8b1929f9de1e3a4d481"


@pytest.fixture(scope="session")
def evaluated(demo_template, tmp_path_factory) -> Path:
    config = copy_workspace(demo_template, tmp_path_factory.mktemp("review-evaluated") / "demo")
    EvalRun(
        load_config(config, ["agent.params.latency_scale=0"]), ["none", "root", "final"], update_card=False
    ).run_sync()
    return config.parent


@pytest.fixture
def config_path(evaluated, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    return copy_workspace(evaluated, tmp_path / "demo")


class Repo:
    def __init__(self, config_path: Path):
        self.tree = git.Repo(config_path.parent / "runs" / "trees" / "demo-notes")
        self.checkout = config_path.parent / "runs" / "demo" / "checkout"

    def tag(self) -> str:
        return self.tree.git.rev_parse("demo/final^{commit}")

    def head(self) -> str:
        return self.tree.git.rev_parse("refs/heads/demo")


async def settle(pilot) -> None:
    await pilot.pause()
    for _ in range(3):
        for worker in list(pilot.app.workers):
            if worker.group.startswith("review") and not worker.is_finished:
                try:
                    await worker.wait()
                except WorkerCancelled:
                    pass
        await pilot.pause()


def text_of(widget: Static) -> str:
    return str(widget.content)


async def test_shows_warnings_table_card_and_diff(config_path):
    app = fixture_app(config_path, "review")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        warnings = text_of(screen.query_one("#review-warnings", Static))
        assert "⚠ errors: none 6/48, root 6/48, final 6/48 attempts ended in an error (pipeline or judge)" in warnings
        assert "⚠ unknown cost: none 9, root 9, final 9 attempts report no cost" in warnings
        assert screen.query_one("#review-warnings").border_title == "⚠ 2 warnings: read before publishing"
        assert not screen.query_one("#review-refusals").display
        table = screen.query_one("#review-table", DataTable)
        assert [str(k.value) for k in table.rows] == ["none", "root", "final"]
        assert [str(c) for c in table.get_row("final")[:3]] == ["final", "40c22b7", "16×3"]
        assert str(table.get_row("final")[6]) == "unknown"
        assert "| final | 40c22b7 | 16 | 3 | 0.731 [" in screen.query_one("#card-md", Markdown).source
        diff = text_of(screen.query_one("#diff-text", Static))
        assert "-Not evaluated yet (`hermit eval`)." in diff and "+| final | 40c22b7 | 16 | 3 | 0.731 [" in diff
        assert "ready to publish" in text_of(screen.query_one("#review-title", Static))
        await pilot.press("d")
        assert screen.query_one("#review-tabs", TabbedContent).active == "tab-diff"


async def test_refusal_disables_publish(config_path):
    (Repo(config_path).checkout / "ADAPTER.md").write_text("edited by hand\n")
    app = fixture_app(config_path, "review")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        refusals = screen.query_one("#review-refusals", Static)
        assert refusals.display and "✗ uncommitted changes in the checkout (1: ADAPTER.md)" in text_of(refusals)
        assert "cannot be published" in text_of(screen.query_one("#review-title", Static))
        await pilot.press("p")
        await pilot.pause()
        assert app.screen is screen  # no confirmation offered
        assert Repo(config_path).tag() == FINAL


async def test_publish_only_after_typing_publish(config_path):
    repo = Repo(config_path)
    app = fixture_app(config_path, "review")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmScreen)
        ok = modal.query_one("#confirm-ok", Button)
        assert ok.disabled
        await pilot.press("enter")  # an empty confirmation does nothing
        await pilot.press(*"publis", "enter")
        await pilot.pause()
        assert app.screen is modal and ok.disabled and repo.tag() == FINAL
        await pilot.press("h")
        await pilot.pause()
        assert not ok.disabled
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert repo.tag() == repo.head() != FINAL
        assert (
            repo.tree.git.log("-1", "--format=%s", "demo")
            == "card: evaluation of demo/final (16 tasks x 3, mean 0.731) [hermit-tui]"
        )
        assert "already published" in text_of(app.screen.query_one("#review-title", Static))
        assert "u undo that publish…" in text_of(app.screen.query_one("#review-actions", Static))


async def test_escape_cancels_the_confirmation(config_path):
    app = fixture_app(config_path, "review")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p", *"publish")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen) and Repo(config_path).tag() == FINAL


async def test_tick_and_click_undo(config_path):
    repo = Repo(config_path)
    head_before = repo.head()
    card_commit = publish(load_config(config_path)).card_commit
    app = fixture_app(config_path, "review")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.click("#confirm-ok")  # disabled until the box is ticked
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and repo.tag() == card_commit
        await pilot.click("#confirm-read")
        await pilot.click("#confirm-ok")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        # the tag, and the branch with the checkout's card, are back where the publish found them
        assert repo.tag() == FINAL and repo.head() == head_before != card_commit
        await pilot.press("u")  # nothing left to undo: no confirmation
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)


async def test_ticking_another_row_puts_it_on_the_card(config_path):
    await EvalRun(
        load_config(config_path, ["agent.params.latency_scale=0"]), ["demo/ckpt-step-1"], update_card=False
    ).run()
    app = fixture_app(config_path, "review")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        rows = screen.query_one("#review-rows", SelectionList)
        assert [o.value for o in rows.options] == ["demo_ckpt-step-1"] and rows.selected == []
        rows.select("demo_ckpt-step-1")
        await settle(pilot)
        table = screen.query_one("#review-table", DataTable)
        assert [str(k.value) for k in table.rows] == ["none", "root", "demo_ckpt-step-1", "final"]
        assert str(table.get_row("demo_ckpt-step-1")[0]) == "demo/ckpt-step-1"
        assert "| demo/ckpt-step-1 |" in screen.plan.new_card
        assert "⚠ test reuse: 2 different adapters of run demo" in text_of(screen.query_one("#review-warnings", Static))


async def _review(pilot) -> None:
    await settle(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot(config_path, snap_compare, size):
    assert snap_compare(fixture_app(config_path, "review"), terminal_size=size, run_before=_review)
