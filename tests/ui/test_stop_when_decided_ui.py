"""--stop-when-decided in the dashboard (Pilot): the setup screen's launch setting (kept per config, passed to the
launch, refused when the margin is no positive number), and the compare screen's sequential panel showing the
boundary being approached while a launch runs, then the recorded decision once it stopped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fixture_data import fixture_app
from journey_kit import setup_ready, wait_for
from textual.widgets import Input, Select, Static
from waiting import settled

from hermit_tui.core.records.results import AttemptRecord, Judged, summarize
from hermit_tui.core.run import events as ev
from hermit_tui.core.stats.sequential.schedule import round_boundaries
from hermit_tui.core.stats.sequential.spending import candidate_spend
from hermit_tui.core.stats.sequential.tracker import RoundTracker, SequentialPlan
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.screens.setup import SetupScreen
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.widgets.plots import BoundaryPlot
from hermit_tui.settings import settings_path

sys.path.insert(0, str(Path(__file__).parent.parent))
from sequential_project import build

TASKS, ROUNDS = 30, 6


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    config = build(tmp_path / "p", tasks=TASKS, repeats=ROUNDS, seed=5, adapters={"good": 0.3})
    # the project has no adapter tree: the directory is remembered as typed in on an earlier visit
    settings_path().parent.mkdir(parents=True)
    settings_path().write_text(
        json.dumps(
            {"launch": {str(config.resolve()): {"picks": ["none", "adapters/good"], "added": ["adapters/good"]}}}
        )
    )
    return config


def ready(app) -> bool:
    screen = app.screen
    return isinstance(screen, SetupScreen) and screen._restored


async def test_the_setup_setting_launches_a_stop_when_decided_run_and_is_remembered(project):
    app = HermitApp(project)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: ready(app) and setup_ready(app))
        setup = app.screen
        assert setup.query_one("#decide", Select).value == "off"  # off unless chosen
        setup.query_one("#decide", Select).value = "on"
        setup.query_one("#margin", Input).value = "-0.1"
        await pilot.press("l")
        await wait_for(
            pilot, lambda: any("margin must be a positive difference" in n.message for n in app._notifications)
        )
        assert not app.running and not (project.parent / "runs").exists()  # refused: a notification, no launch
        setup.query_one("#margin", Input).value = ""
        setup.query_one("#baseline", Input).value = "none"
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(
            pilot, lambda: not app.running and app.store.columns and all(c.summary for c in app.store.columns.values())
        )
        await settled(pilot, "eval")
        await wait_for(pilot, lambda: any("Stopped when decided after round" in n.message for n in app._notifications))
        eval_dir = project.parent / "runs" / "seq" / "eval"
        good = json.loads((eval_dir / "good" / "summary.json").read_text())
        assert good["repeats"] == 2 and good["complete"] is True
        assert good["sequential"]["decision"] == "improvement" and good["sequential"]["max_rounds"] == ROUNDS
        assert len((eval_dir / "none" / "results.jsonl").read_text().splitlines()) == TASKS * 2
        assert app.store.sequential is not None
        assert app.store.sequential_stopped and app.store.sequential.baseline == "none"
        assert any("Stopped when decided after round 2 of 6: good improvement" in n.message for n in app._notifications)
    saved = json.loads(settings_path().read_text())["launch"][str(project.resolve())]
    assert (saved["decide"], saved["baseline"], saved["margin"]) == ("on", "none", "")

    again = HermitApp(project)  # another session: the setting comes back
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: ready(again) and setup_ready(again))
        assert again.screen.query_one("#decide", Select).value == "on"
        assert again.screen.query_one("#baseline", Input).value == "none"


# -- the live boundary on fixed data ---------------------------------------------------------------------------
IDS = [f"t{i:02d}" for i in range(20)]


def record(label: str, tid: str, r: int) -> AttemptRecord:
    """none solves a task in 1 of 4 rounds; good in 4 of 5 (fixed patterns, no randomness)."""
    i = int(tid[1:])
    score = float((i + r) % 4 == 0) if label == "none" else float((i + r) % 5 != 0)
    return AttemptRecord(repeat=r, id=tid, status="ok", output=score, judge=Judged(score=score), cost_usd=0.001)


def live_store(rounds_done: int, extra: int) -> tuple[EvalStore, RoundTracker]:
    """A running launch of none and good at most 6 rounds: ``rounds_done`` whole rounds checked, then ``extra``
    attempts of the next round."""
    plan = SequentialPlan(baseline="none", candidates=["good"], max_rounds=ROUNDS)
    store = EvalStore({t: {"id": t} for t in IDS}, [])
    store.apply(
        ev.RunStarted(
            labels=["none", "good"],
            task_ids=IDS,
            repeats=ROUNDS,
            concurrency=2,
            total=2 * len(IDS) * ROUNDS,
            sequential=plan,
        )
    )
    for label in ("none", "good"):
        store.apply(ev.SelectorStarted(label=label, selector=label, commit=None, total=len(IDS) * ROUNDS))
    tracker = RoundTracker(plan, IDS)
    records: dict[str, dict] = {"none": {}, "good": {}}
    for r in range(1, rounds_done + 1):
        for tid in IDS:
            for label in ("none", "good"):
                rec = record(label, tid, r)
                records[label][rec.key] = rec
                store.apply(ev.AttemptFinished(label=label, record=rec))
        looks = tracker.check(records)
        store.apply(ev.RoundChecked(round=r, max_rounds=ROUNDS, baseline="none", looks=looks, stopped=tracker.decided))
    done = 0
    for tid in IDS:
        for label in ("none", "good"):
            if done < extra:
                store.apply(ev.AttemptFinished(label=label, record=record(label, tid, rounds_done + 1)))
                done += 1
    return store, tracker


async def settle(pilot) -> CompareScreen:
    screen = pilot.app.screen
    await wait_for(pilot, lambda: screen.up_to_date, what="the compare screen to show the store as it is now")
    await pilot.pause()
    return screen


async def test_the_compare_screen_shows_the_boundary_being_approached_then_the_decision():
    store, tracker = live_store(rounds_done=1, extra=13)
    look = tracker.last("good")
    assert look is not None
    assert look.decision == "undecided"  # round 1 of 6 spends 0.0028: its interval on 20 tasks still holds 0
    app = fixture_app(None, screen=None, store=store)
    async with app.run_test(size=(130, 60)) as pilot:
        await pilot.pause()
        app.push_screen(CompareScreen(a="none", b="good"))
        screen = await settle(pilot)
        panel = str(screen.query_one("#sequential-text", Static).content)
        # the candidate's boundaries spend its share of alpha (candidate_spend: Bonferroni's, less a margin)
        c = round_boundaries(ROUNDS, candidate_spend(look.alpha, look.candidates))
        assert f"round 1 of 6: boundary |z| ≥ {c[0]:.2f}, observed z {look.z:.2f}" in panel
        assert f"repeated 95% CI {look.ci_low:+.3f} to {look.ci_high:+.3f} against 0" in panel
        assert "round 2 under way: 13 of 40 attempts of none and good" in panel
        plot = screen.query_one("#plot-boundary", BoundaryPlot)
        assert plot.data is not None
        assert plot.data.boundaries == pytest.approx(list(c), rel=1e-12) and plot.data.observed == [look.z]
        verdict = str(screen.query_one("#verdict", Static).content)
        assert verdict.startswith("Undecided so far (round 1 of 6): good − none")
        figures = str(screen.query_one("#pair-figures", Static).content)
        assert f"repeated 95% CI {look.ci_low:.3f} to {look.ci_high:.3f} (sequential, after round 1)" in figures

        # round 2 completes: the launch stops, the summaries carry the decision, which the screen then recomputes
        records: dict[str, dict[tuple[str, int], AttemptRecord]] = {label: {} for label in ("none", "good")}
        for label in records:
            for r in (1, 2):
                for tid in IDS:
                    rec = record(label, tid, r)
                    records[label][rec.key] = rec
        for tid in IDS:
            for label in ("none", "good"):
                if (tid, 2) not in store.columns[label].records:
                    store.apply(ev.AttemptFinished(label=label, record=records[label][(tid, 2)]))
        looks = tracker.check(records)
        assert tracker.decided and looks[0].decision == "improvement"
        store.apply(ev.RoundChecked(round=2, max_rounds=ROUNDS, baseline="none", looks=looks, stopped=True))
        for label in ("none", "good"):
            store.apply(
                ev.SelectorFinished(
                    label=label,
                    summary=summarize(
                        records[label].values(),
                        adapter=label,
                        commit=None,
                        task_ids=IDS,
                        repeats=2,
                        wall_s=1.0,
                        label=label,
                        complete=True,
                        expected_attempts=2 * len(IDS),
                        sequential=tracker.entry(label),
                    ),
                )
            )
        store.apply(ev.RunFinished(summaries={}, cancelled=False, wall_s=1.0))
        screen.post_message(HermitApp.StoreUpdated())
        screen = await settle(pilot)
        panel = str(screen.query_one("#sequential-text", Static).content)
        assert "— an improvement, decided at round 2" in panel
        assert "stopped after round 2 of 6: every candidate was decided" in panel
        assert plot.data.observed == [look.z, looks[0].z]
        verdict = str(screen.query_one("#verdict", Static).content)
        assert verdict.startswith("Stopped when decided: good scores") and verdict.endswith(": an improvement.")
        assert "-improvement" in screen.query_one("#verdict").classes

        # swapped, the pair reads the other way round: a regression of none against good
        await pilot.press("s")
        screen = await settle(pilot)
        verdict = str(screen.query_one("#verdict", Static).content)
        assert verdict.startswith("Stopped when decided: none scores") and verdict.endswith(": a regression.")
        first_z = looks[0].z
        assert look.z is not None and first_z is not None
        assert plot.data.observed == [-look.z, -first_z]


def finished_store() -> EvalStore:
    """The launch after round 2: stopped, every candidate decided, the summaries written."""
    store, tracker = live_store(rounds_done=2, extra=0)
    assert tracker.decided
    for label in ("none", "good"):
        records = list(store.columns[label].records.values())
        store.apply(
            ev.SelectorFinished(
                label=label,
                summary=summarize(
                    records,
                    adapter=label,
                    commit=None,
                    task_ids=IDS,
                    repeats=2,
                    wall_s=1.0,
                    label=label,
                    complete=True,
                    expected_attempts=2 * len(IDS),
                    sequential=tracker.entry(label),
                ),
            )
        )
    store.apply(ev.RunFinished(summaries={}, cancelled=False, wall_s=1.0))
    return store


def test_snapshot_of_a_decided_pair(snap_compare):
    app = fixture_app(None, screen=None, store=finished_store())

    async def run_before(pilot) -> None:
        await pilot.pause()
        app.push_screen(CompareScreen(a="none", b="good"))
        screen = await settle(pilot)
        screen.query_one("#numbers").scroll_to_widget(screen.query_one("#sequential"), animate=False)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


async def test_the_panel_is_hidden_for_pairs_that_were_not_monitored():
    app = fixture_app(None, screen=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.push_screen(CompareScreen(a="none", b="final"))
        screen = await settle(pilot)
        assert not screen.query_one("#sequential").display
