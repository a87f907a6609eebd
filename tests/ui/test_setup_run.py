"""Pilot tests of the main flow on the demo: open a config, pick selectors, launch, watch, cancel."""

from __future__ import annotations

import json
import threading

import pytest
from demo_copies import copy_workspace
from textual.widgets import Input, SelectionList, Static
from waiting import settled, wait_for

from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.screens.setup import SetupScreen
from hermit_tui.dashboard.widgets.attempt_grid import AttemptGrid

FAST = ["agent.params.latency_scale=0.01"]


@pytest.fixture
def demo(demo_template, tmp_path, monkeypatch):
    """A private copy of the demo built once per session (building one is git work: a second or more)."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    return copy_workspace(demo_template, tmp_path / "demo")


def versions_loaded(app) -> bool:
    screen = app.screen
    if not isinstance(screen, SetupScreen):
        return False
    # query, not query_one: the screen may still be composing its widgets (a loaded machine caught it there)
    return any(w.option_count > 1 for w in screen.query("#versions").results(SelectionList))


async def test_setup_lists_versions_and_protocol(demo):
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        selections = app.screen.query_one("#versions", SelectionList)
        values = [selections.get_option_at_index(i).value for i in range(selections.option_count)]
        assert values[:2] == ["none", "root"]
        assert {"demo/ckpt-step-1", "demo/ckpt-step-3", "final"} <= set(values)
        assert selections.selected == ["none", "root", "final"]
        from rich.console import Console

        console = Console(width=100, record=True, file=open("/dev/null", "w"))
        console.print(app.screen.query_one("#protocol", Static).content)
        protocol = console.export_text()
        assert "16 tasks  (train 16, val 8)" in protocol
        assert "pipeline.py:run" in protocol and "judge.py:score" in protocol
        assert app.sub_title.endswith("teaching demonstration")
        # built with the config in its worker, off the event loop, and the checks in it are the banners' warnings
        assert app.screen.query_one("#protocol", Static).content is app.protocol_view
        assert all(message.split(":")[0] in " ".join(protocol.split()) for message in app.store.warnings)
        assert len(app.store.warnings) == 2


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_launch_settings_labels_sit_beside_their_fields(demo, size):
    """The labels are one column of text beside the fields: each label's row is its field's row, scrolled or not."""
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        screen = app.screen
        labels = screen.query_one("#field-labels", Static)
        rows = str(labels.content).split("\n")
        fields = ["repeats", "concurrency", "limit", "timeout", "max-cost", "executor", "decide", "baseline"]
        expected = dict(
            zip(
                fields,
                [
                    "repeats",
                    "concurrency",
                    "smoke limit",
                    "timeout min",
                    "max cost $",
                    "run in",
                    "stop early",
                    "baseline ±M",
                ],
                strict=True,
            )
        )
        panel = screen.query_one("#setup-launch")
        for scroll in (0, panel.max_scroll_y):
            panel.scroll_to(y=scroll, animate=False)
            await pilot.pause()
            for field in fields:  # screen rows (a row scrolled out of the panel keeps its place in the column)
                row = screen.query_one(f"#{field}").region.y - labels.region.y
                assert 0 <= row < len(rows) and rows[row] == expected[field], (field, scroll)
            assert screen.query_one("#margin").region.y == screen.query_one("#baseline").region.y


async def test_launch_watch_to_completion_and_files_agree(demo):
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        app.screen.query_one("#repeats", Input).value = "2"
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(
            pilot, lambda: not app.running and app.store.columns and all(c.summary for c in app.store.columns.values())
        )
        await settled(pilot, "eval")  # the launch's worker is done and what it posted is on screen
        run_dir = demo.parent / "runs" / "demo" / "eval"
        for label in ("none", "root", "final"):
            col = app.store.columns[label]
            on_disk = json.loads((run_dir / label / "summary.json").read_text())
            lines = (run_dir / label / "results.jsonl").read_text().splitlines()
            assert on_disk["repeats"] == 2 and len(lines) == col.done == 16 * 2
            assert col.mean == pytest.approx(on_disk["mean_score"])
        grid = app.screen.query_one(AttemptGrid)
        assert grid.virtual_size.height == 16 + 1
        status = str(app.screen.query_one("#run-status", Static).content)
        assert "finished" in status and "96/96" in status


async def test_cancel_keeps_finished_attempts(demo):
    app = HermitApp(demo, overrides=["agent.params.latency_scale=0.5"])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        await pilot.press("l")
        await wait_for(
            pilot, lambda: isinstance(app.screen, RunScreen) and any(c.done for c in app.store.columns.values())
        )
        from hermit_tui.dashboard.widgets.footer import Footer

        assert "Cancel" in [item.description for item in app.screen.query_one(Footer).items]  # while it runs
        await pilot.press("c")
        await wait_for(pilot, lambda: not app.running, timeout=30)
        # nothing left to cancel: the key leaves the footer (and does nothing)
        await wait_for(pilot, lambda: "Cancel" not in [item.description for item in app.screen.query_one(Footer).items])
        assert "Cancel" not in [item.description for item in app.screen.query_one(Footer).items]
        assert app.screen.check_action("cancel", ()) is False
        run_dir = demo.parent / "runs" / "demo" / "eval"
        assert app.store.run_cancelled
        for label, col in app.store.columns.items():
            on_disk = json.loads((run_dir / label / "summary.json").read_text())
            lines = (run_dir / label / "results.jsonl").read_text().splitlines()
            assert on_disk["complete"] is False
            assert len(lines) == col.done == on_disk["attempts"] < on_disk["expected_attempts"]
        # the card was not touched by an incomplete final
        card = (demo.parent / "runs" / "demo" / "checkout" / "CARD.md").read_text()
        assert "Not evaluated yet" in card


async def test_bad_config_is_a_notification_not_a_crash(tmp_path):
    bad = tmp_path / "run.yaml"
    bad.write_text("agent: {concurency: 2}\n")
    app = HermitApp(bad)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(app._notifications))
        note = list(app._notifications)[0]
        assert "agent.concurency" in note.message and note.severity == "error"
        assert not isinstance(app.screen, SetupScreen)


async def test_help_screen_lists_bindings(demo):
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        await pilot.press("question_mark")
        await pilot.pause()
        from hermit_tui.dashboard.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)


async def test_resume_action_continues_an_interrupted_evaluation(demo):
    from hermit_tui.core.run import events as ev
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    config = load_config(demo, FAST)
    holder: dict[str, EvalRun] = {}
    stopped = threading.Event()

    def stop_early(event):
        if isinstance(event, ev.AttemptFinished) and event.record.repeat == 1 and not stopped.is_set():
            stopped.set()
            holder["run"].cancel()

    run = holder["run"] = EvalRun(config, ["none"], concurrency=1, on_event=stop_early)
    await run.run()
    path = demo.parent / "runs" / "demo" / "eval" / "none"
    before = (path / "results.jsonl").read_text().splitlines()
    assert json.loads((path / "summary.json").read_text())["complete"] is False

    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        selections = app.screen.query_one("#versions", SelectionList)
        selections.deselect("root")
        selections.deselect("final")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(
            pilot,
            lambda: not app.running and "none" in app.store.columns and app.store.columns["none"].summary is not None,
        )
    after = (path / "results.jsonl").read_text().splitlines()
    summary = json.loads((path / "summary.json").read_text())
    assert summary["complete"] is True and len(after) == 48
    assert set(before) <= set(after)  # the recorded attempts were kept, not re-run


async def test_export_report_from_the_dashboard(demo):
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    await EvalRun(load_config(demo, FAST), ["none", "final"], repeats=1, update_card=False).run()
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        app.action_export_report()
        reports = demo.parent / "runs" / "demo" / "reports"
        await wait_for(
            pilot, lambda: reports.is_dir() and any((d / "report.html").exists() for d in reports.iterdir())
        )  # the last one written
        folder = next(reports.iterdir())
        data = json.loads((folder / "report.json").read_text())
        summary = json.loads((demo.parent / "runs/demo/eval/final/summary.json").read_text())
        assert json.dumps(summary["mean_score"]) in json.dumps(data)
        assert len((folder / "report.csv").read_text().splitlines()) == 1 + 16
        assert "final" in (folder / "report.md").read_text()
        final = next(s for s in data["selectors"] if s["label"] == "final")["stats"]["mean"]
        assert f'data-label="final" data-mean="{final!r}"' in (folder / "report.html").read_text()


async def test_launch_errors_are_notifications_and_write_nothing(demo):
    """Bad input met at launch (a pipeline that does not import) is an error notification; the app goes on."""
    (demo.parent / "pipeline.py").write_text("def run(task, adapter)\n    pass\n")
    app = HermitApp(demo, overrides=FAST)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: versions_loaded(app))
        await pilot.press("l")
        await wait_for(pilot, lambda: any(n.severity == "error" for n in app._notifications))
        note = next(n for n in app._notifications if n.severity == "error")
        assert "pipeline.py" in note.message and "SyntaxError" in note.message
        assert isinstance(app.screen, SetupScreen) and not app.running
    assert not (demo.parent / "runs" / "demo" / "eval").exists()
