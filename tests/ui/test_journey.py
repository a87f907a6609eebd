"""The dashboard as a user lives in it, on the demo (Pilot): a launch including final publishes nothing; Review &
publish and its undo still work; launch settings survive screen changes and are remembered per config; Escape leaves
a text field; a typed tag or commit can be added (text that looks like an option never reaches git); quitting during
a launch asks first; Review refuses rows that do not compare with final unless told 'publish anyway'; evaluations on
disk are shown at once in launch order with baseline none."""

from __future__ import annotations

import json
import shutil

from journey_kit import FAST, git, settle, setup_ready, type_text, wait_for
from textual.screen import Screen
from textual.widgets import Button, Input, Select, SelectionList, Static
from waiting import settled

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.screens.dialogs.confirm import ConfirmScreen
from hermit_tui.dashboard.screens.dialogs.quit import QuitScreen, StoppingScreen
from hermit_tui.dashboard.screens.review import ReviewScreen
from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.screens.setup import AddSelectorScreen, SetupScreen
from hermit_tui.dashboard.widgets.checklist import TickBox
from hermit_tui.settings import settings_path


async def test_a_launch_with_final_publishes_nothing_then_review_publishes_and_undoes(demo):
    card, refs = demo.card(), demo.refs()
    app = HermitApp(demo.config_path, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        assert app.screen.query_one("#versions", SelectionList).selected == ["none", "root", "final"]
        app.screen.query_one("#repeats", Input).value = "1"
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(
            pilot,
            lambda: not app.running and "final" in app.store.columns and app.store.columns["final"].summary is not None,
        )
        await settled(pilot, "eval")
        await wait_for(pilot, lambda: "Review & publish: p" in str(app.screen.query_one("#run-offer", Static).content))
        # final finished complete: nothing was published, byte for byte
        assert demo.summary("final")["complete"] is True
        assert demo.card() == card and demo.refs() == refs
        offer = app.screen.query_one("#run-offer", Static)
        assert offer.display and "Review & publish: p" in str(offer.content)
        assert "CARD.md and demo/final untouched" in str(offer.content)

        await pilot.press("p")  # Review, from the live screen
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen))
        await settle(pilot)
        review = app.screen
        assert isinstance(review, ReviewScreen)
        assert review.plan is not None and review.plan.can_publish and not review.mismatches
        before = demo.tag()
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and app.screen.word == "publish"
        await type_text(pilot, "publish")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is review
        head = git(demo.tree, "rev-parse", "refs/heads/demo").strip()
        assert demo.tag() == head != before
        assert demo.card() != card and b"| final | 40c22b7 | 16 | 1 |" in demo.card()
        assert git(demo.tree, "log", "-1", "--format=%s", "demo").startswith("card: evaluation of demo/final")

        await pilot.press("u")  # the undo is there right after a publish from Review
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and app.screen.word == "undo"
        await type_text(pilot, "undo")
        await pilot.press("enter")
        await settle(pilot)
        assert demo.tag() == before
        log = [json.loads(line) for line in (demo.eval / ".hermit-tui-publish.jsonl").read_text().splitlines()]
        assert [e["action"] for e in log] == ["publish", "undo"]


async def test_launch_settings_survive_screen_changes_and_are_remembered_per_config(demo):
    variant = demo.root / "adapters" / "my-variant"
    variant.mkdir(parents=True)
    (variant / "adapter.yaml").write_text("name: my-variant\nversion: '0.1'\n")
    (variant / "ADAPTER.md").write_text("# notes\n")
    step1 = git(demo.tree, "rev-parse", "demo/ckpt-step-1").strip()
    app = HermitApp(demo.config_path, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        versions = setup.query_one("#versions", SelectionList)
        versions.deselect("root")
        versions.select("demo/ckpt-step-2")
        for field, value in (("repeats", "2"), ("concurrency", "3"), ("limit", "2"), ("timeout", "5")):
            setup.query_one(f"#{field}", Input).value = value
        # a directory, an abbreviated commit and a tag typed in
        for typed in ("adapters/my-variant", step1[:8]):
            await pilot.press("a")
            await pilot.pause()
            assert isinstance(app.screen, AddSelectorScreen)
            await type_text(pilot, typed)
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.screen is setup)
        # text that looks like an option, and a name the tree does not hold, are refused in the dialog
        for bad, why in (("--output=/tmp/x", "begins with '-'"), ("no-such-tag", "no-such-tag")):
            await pilot.press("a")
            await pilot.pause()
            modal = app.screen
            await type_text(pilot, bad)
            await pilot.press("enter")

            def refused(why: str = why, modal: Screen = modal) -> bool:
                return why in str(modal.query_one("#adddir-error", Static).content)

            await wait_for(pilot, refused)
            assert app.screen is modal
            await pilot.press("escape")
            await pilot.pause()
        values = [versions.get_option_at_index(i).value for i in range(versions.option_count)]
        assert values[-2:] == ["adapters/my-variant", step1[:8]]
        picks = ["none", "demo/ckpt-step-2", "final", "adapters/my-variant", step1[:8]]
        assert setup.ticked() == picks  # in list order

        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(
            pilot,
            lambda: (
                not app.running and len(app.store.columns) >= 5 and all(c.summary for c in app.store.columns.values())
            ),
        )
        # the launch ran with those settings: 2 tasks (smoke: eval/<label>/smoke/), 2 repeats, the typed selectors'
        # own folders
        assert demo.summary("my-variant", smoke=True)["repeats"] == 2
        assert demo.summary("my-variant", smoke=True)["tasks"] == 2
        assert demo.summary(step1[:8], smoke=True)["commit"] == step1
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        assert setup.ticked() == picks
        assert [setup.query_one(f"#{f}", Input).value for f in ("repeats", "concurrency", "limit", "timeout")] == [
            "2",
            "3",
            "2",
            "5",
        ]
    saved = json.loads(settings_path().read_text())["launch"][str(demo.config_path.resolve())]
    assert saved["picks"] == picks and saved["repeats"] == "2" and saved["executor"] == "threads"
    assert saved["added"] == ["adapters/my-variant", step1[:8]]

    again = HermitApp(demo.config_path, overrides=FAST)  # another session: restored from the settings file
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(again))
        setup = again.screen
        assert isinstance(setup, SetupScreen)
        assert setup.ticked() == picks
        assert setup.query_one("#limit", Input).value == "2"
        assert "Launch 5 side by side" in str(setup.query_one("#launch", Button).label)


async def test_escape_leaves_a_text_field_and_the_keys_work_again(demo):
    app = HermitApp(demo.config_path, overrides=FAST)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        field = app.screen.query_one("#repeats", Input)
        field.focus()
        await pilot.press("h")  # typed into the field (refused there: a whole number), not the History key
        assert isinstance(app.screen, SetupScreen) and app.focused is field
        await pilot.press("escape")
        assert app.focused is app.screen.query_one("#versions")
        await pilot.press("h")
        await pilot.pause()
        assert type(app.screen).__name__ == "HistoryScreen"


async def test_quitting_during_a_launch_asks_and_cancels(demo):
    app = HermitApp(demo.config_path, overrides=["agent.params.latency_scale=2"])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.running)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        await pilot.press("k")  # keep running
        await pilot.pause()
        assert isinstance(app.screen, RunScreen) and app.running
        await pilot.press("ctrl+c")  # asks too
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        await pilot.press("c")  # cancel the launch, stay
        await wait_for(pilot, lambda: not app.running)
        await settled(pilot, "eval")
        assert isinstance(app.screen, RunScreen) and app.is_running
        for label in ("none", "root", "final"):
            s = demo.summary(label)
            assert s["complete"] is False and s["cancelled"] is True


async def test_quit_and_cancel_shows_the_launch_stopping_then_leaves(demo):
    card, refs = demo.card(), demo.refs()
    app = HermitApp(demo.config_path, overrides=["agent.params.latency_scale=20"])  # 0.4 to 6 s an attempt
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.running and app.store.in_flight)
        await pilot.press("q", "q")
        await pilot.pause()
        assert isinstance(app.screen, StoppingScreen)  # never a blank screen while attempts finish
        body = str(app.screen.query_one("#stopping-body", Static).content)
        assert "in flight" in body and "Nothing is published" in body
        await pilot.press("a")  # abandon what is in flight
        await wait_for(pilot, lambda: app.return_code is not None, timeout=30)
    assert app.abandoned and app.current_run is None
    for label in ("none", "root", "final"):
        assert demo.summary(label)["complete"] is False
    assert demo.card() == card and demo.refs() == refs


async def test_review_refuses_rows_that_do_not_compare_unless_told_publish_anyway(evaluated_copy):
    demo = evaluated_copy
    await EvalRun(
        load_config(demo.config_path, ["agent.params.latency_scale=0"]), ["none"], repeats=1, update_card=False
    ).run()  # none again, with 1 repeat beside final's 3
    shutil.rmtree(demo.eval / "none" / "archive")  # (else the plan takes the archived one, measured like final)
    before = demo.tag()
    app = HermitApp(demo.config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        await wait_for(pilot, lambda: len(app.store.columns) == 3)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen))
        await settle(pilot)
        review = app.screen
        assert isinstance(review, ReviewScreen)
        title = str(review.query_one("#review-title", Static).content)
        assert "1 row not comparable with final" in title and "ready to publish" not in title
        box = review.query_one("#review-mismatch", Static)
        assert box.display and "none vs final: 16 tasks × 1 repeats, final 16 × 3" in str(box.content)
        await pilot.press("p")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmScreen) and modal.word == "publish anyway"
        assert not modal.query(TickBox)  # no tick-and-click shortcut for an override
        assert "NOT COMPARABLE WITH FINAL" in str(modal.query_one("#confirm-body", Static).content)
        await type_text(pilot, "publish")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is modal and demo.tag() == before
        await type_text(pilot, " anyway")
        await pilot.press("enter")
        await settle(pilot)
        assert demo.tag() != before and b"| none | \xe2\x80\x94 | 16 | 1 |" in demo.card()


async def test_evaluations_on_disk_are_shown_at_once_in_launch_order_with_baseline_none(evaluated_copy):
    demo = evaluated_copy
    await EvalRun(
        load_config(demo.config_path, ["agent.params.latency_scale=0"]), ["demo/ckpt-step-2"], update_card=False
    ).run()
    app = HermitApp(demo.config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app) and len(app.store.columns) == 4)
        assert app.store.keys == ["none", "root", "demo_ckpt-step-2", "final"]
        assert app.store.baseline == "none"
        await pilot.press("t")
        await pilot.pause()
        columns = str(app.screen.query_one("#tasks-columns", Static).content)
        assert "No evaluations yet" not in columns and columns.splitlines()[0].startswith("● none")
        await pilot.press("escape")
        await pilot.press("v")
        await wait_for(pilot, lambda: getattr(app.screen, "paired", None) is not None, timeout=30)
        assert isinstance(app.screen, CompareScreen) and (app.screen.a, app.screen.b) == ("none", "final")
        assert str(app.screen.query_one("#verdict", Static).content).startswith("final scores")


async def test_a_launch_in_worker_processes_runs_from_the_dashboard(demo):
    """Textual replaces sys.stderr with a capture whose fileno() is -1: starting worker processes from the dashboard
    failed with "bad value(s) in fds_to_keep" until the resource tracker was started on /dev/null."""
    app = HermitApp(demo.config_path, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: setup_ready(app))
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        setup.query_one("#executor", Select).value = "processes"
        setup.query_one("#limit", Input).value = "2"
        setup.query_one("#repeats", Input).value = "1"
        await pilot.press("l")
        await wait_for(
            pilot,
            lambda: (
                not app.running and len(app.store.columns) == 3 and all(c.summary for c in app.store.columns.values())
            ),
        )
        assert not [n for n in app._notifications if n.severity == "error"]
    for label in ("none", "root", "final"):
        s = demo.summary(label, smoke=True)
        assert (s["executor"], s["complete"], s["attempts"]) == ("processes", True, 2)
