"""--stop-when-decided --anytime in the dashboard (Pilot): the setup screen's "stop early: anytime-valid" launches
the anytime design, the notice and the compare screen read it in tasks, and the choice is remembered."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from journey_kit import setup_ready, wait_for
from textual.widgets import Select, Static
from waiting import settled

from hermit_tui.core.stats.sequential.anytime import METHOD
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.screens.run import RunScreen
from hermit_tui.dashboard.screens.setup import SetupScreen
from hermit_tui.settings import settings_path

sys.path.insert(0, str(Path(__file__).parent.parent))
from sequential_project import build

TASKS = 60


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    config = build(tmp_path / "p", tasks=TASKS, repeats=2, seed=5, adapters={"good": 0.4})
    settings_path().parent.mkdir(parents=True)
    settings_path().write_text(
        json.dumps(
            {"launch": {str(config.resolve()): {"picks": ["none", "adapters/good"], "added": ["adapters/good"]}}}
        )
    )
    return config


def ready(app) -> bool:
    return isinstance(app.screen, SetupScreen) and app.screen._restored


async def test_the_setup_setting_launches_an_anytime_run(project):
    app = HermitApp(project)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: ready(app) and setup_ready(app))
        app.screen.query_one("#decide", Select).value = "anytime"
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_for(
            pilot, lambda: not app.running and app.store.columns and all(c.summary for c in app.store.columns.values())
        )
        await settled(pilot, "eval")
        await wait_for(pilot, lambda: any("Stopped when decided" in n.message for n in app._notifications))
        # chosen on 60 test tasks, fewer than the 100 under which an anytime launch rarely decides: a warning says so
        warned = [n_ for n_ in app._notifications if n_.message.startswith("Anytime-valid on 60 test tasks rarely")]
        assert len(warned) == 1 and warned[0].severity == "warning"
        good = json.loads((project.parent / "runs/seq/eval/good/summary.json").read_text())["sequential"]
        n = good["tasks_looked"]
        assert good["method"] == METHOD and good["decision"] == "improvement" and n < TASKS
        ids = sorted((f"t{i:03d}" for i in range(TASKS)), key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        assert good["order"] == ids[:n]
        notice = f"Stopped when decided after {n} of the {TASKS} tasks (anytime-valid): good improvement"
        assert any(notice in n_.message for n_ in app._notifications)
        await app.push_screen(CompareScreen())
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        panel = app.screen.query_one("#sequential-text", Static)
        await wait_for(pilot, lambda: f"decided after {n} of the {TASKS} tasks" in str(panel.render()))
        assert "round" not in str(panel.render())
        assert not app.screen.query_one("#plot-boundary").display
    saved = json.loads(settings_path().read_text())["launch"][str(project.resolve())]
    assert saved["decide"] == "anytime"
    again = HermitApp(project)  # another session: the setting comes back
    async with again.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: ready(again) and setup_ready(again))
        assert again.screen.query_one("#decide", Select).value == "anytime"
        assert not any("rarely decides" in n_.message for n_ in again._notifications)  # a restore is not a choice
