"""The success threshold the views use: set from the palette, recounted everywhere, files untouched."""

from __future__ import annotations

import pytest
from fixture_data import FIXED_LABELS, fixed_records, fixed_store, fixture_app
from waiting import wait_for

from hermit_tui.core.stats.selector import selector_stats


def solved_once_by_hand(label: str, threshold: float) -> set[str]:
    return {r.id for r in fixed_records(label) if r.judge.score >= threshold}


def test_store_recounts_solved_under_a_new_threshold():
    store = fixed_store()
    assert {t for t, c in store.columns["none"].cells.items() if c.solved_once} == solved_once_by_hand("none", 1.0)
    store.set_threshold(0.5)
    for label in FIXED_LABELS:
        cells = store.columns[label].cells
        assert {t for t, c in cells.items() if c.solved_once} == solved_once_by_hand(label, 0.5)
    # a partial score of 0.5 now counts as solved: t04 under none scores 0.5 on every repeat
    assert store.columns["none"].cells["t04"].solved == 3
    assert store.columns["none"].mean == pytest.approx(sum(r.judge.score for r in fixed_records("none")) / 36)


async def test_palette_threshold_recounts_the_views():
    from hermit_tui.dashboard.screens.compare import CompareScreen
    from hermit_tui.dashboard.screens.tasks import TasksScreen

    app = fixture_app(None, None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(TasksScreen())
        await pilot.pause()
        app.action_set_threshold()
        await pilot.pause()
        field = app.screen.query_one("#threshold-input")
        field.value = "0.5"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Success threshold 0.5" in str(app.screen.query_one("Banners").content))
        assert app.store.threshold == 0.5
        assert app.store.columns["root"].cells["t12"].solved_once  # 0.5 under root: solved at 0.5, not at 1.0
        banner = str(app.screen.query_one("Banners").content)
        assert "Success threshold 0.5" in banner
        # the compare screen's statistics use it too
        app.push_screen(CompareScreen())
        await wait_for(pilot, lambda: getattr(app.screen, "result", None) is not None)
        expected = selector_stats(
            "none", fixed_records("none"), [t["id"] for t in __import__("fixture_data").FIXED_TASKS], threshold=0.5
        )
        assert app.screen.result.sa.solved_once == pytest.approx(expected.solved_once)


async def test_a_bad_threshold_is_refused_in_place():
    app = fixture_app(None, None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.action_set_threshold()
        await pilot.pause()
        app.screen.query_one("#threshold-input").value = "nan"
        await pilot.press("enter")
        await pilot.pause()
        assert "not a number" in str(app.screen.query_one("#threshold-error").content)
        assert app.store.threshold == 1.0
