"""Cost control in the dashboard: the live projection on the run screen, and the max-cost launch setting."""

from __future__ import annotations

import json

import pytest
from demo_copies import copy_workspace
from textual.screen import Screen
from textual.widgets import Input, SelectionList, Static
from waiting import settled, wait_for

from hermit_tui.core.records.results import AttemptRecord, Judged
from hermit_tui.core.run import events as ev
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.run import RunScreen, cost_line
from hermit_tui.dashboard.screens.setup import SetupScreen
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.widgets.selector_progress import progress_text

FAST = ["agent.params.latency_scale=0.01"]


def text_of(screen: Screen, selector: str) -> str:
    """The text a Static shows (its content, plain)."""
    return str(screen.query_one(selector, Static).content)


def versions_loaded(app) -> bool:
    screen = app.screen
    if not isinstance(screen, SetupScreen):
        return False
    # query, not query_one: the screen may still be composing its widgets (a loaded machine caught it there)
    return any(w.option_count > 1 for w in screen.query("#versions").results(SelectionList))


def live_store(costs: dict[str, list[float | None]], expected: int, max_cost: float | None) -> EvalStore:
    store = EvalStore()
    store.apply(
        ev.RunStarted(
            labels=list(costs),
            task_ids=[f"t{i}" for i in range(expected)],
            repeats=1,
            concurrency=2,
            total=expected * len(costs),
            max_cost_usd=max_cost,
        )
    )
    for label, values in costs.items():
        store.apply(ev.SelectorStarted(label=label, selector=label, commit=None, total=expected))
        for i, cost in enumerate(values):
            store.apply(
                ev.AttemptFinished(
                    label=label,
                    record=AttemptRecord(repeat=1, id=f"t{i}", status="ok", judge=Judged(score=1.0), cost_usd=cost),
                )
            )
    return store


def test_the_run_screen_projects_the_cost_at_the_end():
    # none: 4 of 10 done, $0.40 known; root: 4 of 10 done, $0.44 known and 3 unknown
    store = live_store({"none": [0.1, 0.1, 0.1, 0.1], "root": [0.44, None, None, None]}, 10, max_cost=5.0)
    line = cost_line(store, running=True).plain
    # 8 of 20 attempts done for $0.84 known: ~$0.84 * 20 / 8 = $2.10 at the end
    assert line == "cost $0.8400 + 3 unknown so far · ~$2.10 at the end  ·  stops at $5.00 (max cost)"
    # per selector: root's $0.44 over 4 of 10 projects $1.10, and its unknown ones are said
    assert "$0.4400 → ~$1.10 + 3 unknown" in progress_text(store.columns["root"]).plain
    assert "$0.4000 → ~$1.00" in progress_text(store.columns["none"]).plain
    store.apply(ev.RunFinished(summaries={}, cancelled=False, wall_s=1.0, stop_reason="max cost $5.00 reached: x"))
    assert cost_line(store, running=False).plain == (
        "cost $0.8400 + 3 unknown  ·  stopped at the max cost of $5.00: Resume continues"
    )
    everything_unknown = live_store({"none": [None, None]}, 10, max_cost=None)
    assert cost_line(everything_unknown, running=True).plain == "cost unknown (2 attempts) so far"


@pytest.fixture
def demo(demo_template, tmp_path, monkeypatch):
    """A private copy of the demo built once per session (building one is git work: a second or more)."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    return copy_workspace(demo_template, tmp_path / "demo")


async def test_max_cost_setting_stops_the_launch_and_resume_finishes_it(demo):
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        app.screen.query_one("#max-cost", Input).value = "0.01"
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(
            pilot, lambda: not app.running and app.store.columns and all(c.summary for c in app.store.columns.values())
        )
        await settled(pilot, "eval")
        await wait_for(pilot, lambda: "stopped at the max cost" in text_of(app.screen, "#run-status"))
        assert app.store.stop_reason and app.store.stop_reason.startswith("max cost $0.0100 reached")
        assert "stopped at the max cost" in text_of(app.screen, "#run-status")
        assert "stopped at the max cost of $0.0100" in text_of(app.screen, "#run-cost")
        assert any("Stopped, max cost" in n.message for n in app._notifications)
        run_dir = demo.parent / "runs" / "demo" / "eval"
        done = {}
        for label in ("none", "root", "final"):
            summary = json.loads((run_dir / label / "summary.json").read_text())
            assert summary["complete"] is False and summary["stop_reason"] == app.store.stop_reason
            done[label] = summary["attempts"]
        assert 0 < sum(done.values()) < 3 * 48
        # resume from the setup screen, without a cap
        await pilot.press("s")
        await wait_for(pilot, lambda: versions_loaded(app))
        app.screen.query_one("#max-cost", Input).value = ""
        await pilot.press("r")

        def finished() -> bool:
            summaries = [
                json.loads((run_dir / label / "summary.json").read_text()) for label in ("none", "root", "final")
            ]
            return not app.running and all(s.get("complete") for s in summaries)

        await wait_for(pilot, finished)
        await settled(pilot, "eval")
        assert isinstance(app.screen, RunScreen)
        for label in ("none", "root", "final"):
            lines = (run_dir / label / "results.jsonl").read_text().splitlines()
            keys = [(json.loads(x)["id"], json.loads(x)["repeat"]) for x in lines]
            assert len(keys) == len(set(keys)) == 48
            assert json.loads((run_dir / label / "summary.json").read_text())["complete"] is True
        assert app.store.stop_reason is None


async def test_a_bad_max_cost_is_an_error_notification_and_launches_nothing(demo):
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        app.screen.query_one("#max-cost", Input).value = "-3"
        await pilot.press("l")
        await wait_for(
            pilot,
            lambda: any(
                n.message == "max cost must be a positive number of dollars, got '-3'" and n.severity == "error"
                for n in app._notifications
            ),
        )
        assert isinstance(app.screen, SetupScreen) and not app.running
        assert not (demo.parent / "runs" / "demo" / "eval").exists()
