"""The compare screen on fixed data: figures against core.stats.figures, the verdict and its colour, the comparability
banner, transitions and drill-down, power, plots, live recomputation, snapshots.

Per-task means of the fixed store (3 repeats; see tests/ui/test_tasks_screen.py), worked by hand:

    task   none  root  final  final-none      task   none  root  final  final-none
    t01    0     1     1      +1              t07    0     0.33  1      +1
    t02    0     0     1      +1              t08    0     0     1      +1
    t03    1     1     1       0  (cost ?)    t09    0.5   1     0.67   +1/6   (final repeat 2 judge error)
    t04    0.5   1     0      -0.5            t10    1     1     0.5    -0.5
    t05    0     0     0       0  (errors)    t11    0     0     1      +1
    t06    1     1     1       0              t12    0     0.5   1      +1

none: mean 4/12 = 0.333; final: mean (9 + 2/3 + 1/2) / 12 = 0.764; final - none = 0.431, wins 7, losses 2, ties 3.
Costs: 0.001 * (i + 1) per ok attempt except t03 (unknown) and t05 (failed, unknown): none 3 * 0.070 = $0.2100 + 6
unknown; final's t09 repeat 2 costs 0.002 instead of 0.009: $0.2030 + 6 unknown.
"""

from __future__ import annotations

import pytest
from fixture_data import fixed_store, fixture_app
from rich.text import Text
from textual.widgets import Input, Select, Static, TabbedContent
from waiting import wait_for

from hermit_tui.core.records.results import AttemptRecord, Judged, Summary
from hermit_tui.core.run import events as ev
from hermit_tui.core.stats.figures import pair_stats
from hermit_tui.core.stats.selector import selector_stats
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens import compare as compare_mod
from hermit_tui.dashboard.screens.compare import CompareScreen
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.widgets import plots
from hermit_tui.dashboard.widgets.virtual_table import VirtualTable

IDS = [f"t{i:02d}" for i in range(1, 13)]


def make_app(store: EvalStore | None = None) -> HermitApp:
    """The fixture app with nothing above the default screen (the compare screen is pushed by each test)."""
    return fixture_app(None, screen=None, store=store)


async def settle(pilot) -> CompareScreen:
    """Wait until the figures on screen are those of the store as it is now."""
    screen = pilot.app.screen
    await wait_for(pilot, lambda: screen.up_to_date, what="the compare screen to show the store as it is now")
    await pilot.pause()
    return screen


async def open_compare(pilot, **kwargs) -> CompareScreen:
    await pilot.pause()
    pilot.app.push_screen(CompareScreen(**kwargs))
    return await settle(pilot)


def text(screen: CompareScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


def records(store: EvalStore, key: str) -> list[AttemptRecord]:
    return list(store.columns[key].records.values())


def expected_numbers(store: EvalStore, a: str, b: str):
    sa = selector_stats(a, records(store, a), IDS)
    sb = selector_stats(b, records(store, b), IDS)
    return sa, sb, pair_stats(a, records(store, a), b, records(store, b), IDS)


def assert_numbers(screen: CompareScreen, store: EvalStore, a: str, b: str) -> None:
    sa, sb, pair = expected_numbers(store, a, b)
    assert (text(screen, "#head-a"), text(screen, "#head-b")) == (a, b)
    for side, s in (("a", sa), ("b", sb)):
        assert text(screen, f"#{side}-mean") == (
            f"{s.mean:.3f}  95% CI {s.ci_low:.3f} to {s.ci_high:.3f} ({s.ci_method})"
        )
        assert 0 <= s.ci_low and s.ci_high <= 1 and f"95% CI: {s.method}." in text(screen, f"#split-{side}")
        lo, hi = s.solved_once_ci
        assert text(screen, f"#{side}-solved") == f"{s.solved_once:.3f}  Wilson {lo:.3f} to {hi:.3f}"
        lo, hi = s.pass_k_ci
        assert text(screen, f"#{side}-passk") == f"{s.pass_k:.3f}  Wilson {lo:.3f} to {hi:.3f}"
        assert text(screen, f"#{side}-sample") == "12 × 3 (36 attempts)"
        assert s.lever_note in text(screen, f"#split-{side}")
    figures = text(screen, "#pair-figures")
    assert (
        f"{b} − {a}: {pair.mean_diff:+.3f}  95% CI {pair.ci_low:.3f} to {pair.ci_high:.3f} ({pair.ci_method})"
    ) in figures
    shown = f"{pair.p_value:.3f}" if pair.p_value < 0.1 else f"{pair.p_value:.2f}"  # 2 decimals from 0.1 up
    assert f"p = {shown}: test of the interval's null" in figures
    assert "sharp-null test p (secondary)" in figures and "paired randomisation test" in figures and "exact" in figures
    assert f"95% CI: {pair.method}." in figures and "Verdict rule: 'an improvement'" in figures
    shown = f"{pair.sign_test_p:.3f}" if pair.sign_test_p < 0.1 else f"{pair.sign_test_p:.2f}"
    assert f"sign test p = {shown}" in figures
    assert f"wins {pair.wins} · losses {pair.losses} · ties {pair.ties}" in figures
    assert text(screen, "#verdict") == pair.verdict


async def test_numbers_and_verdict_equal_core_stats_for_none_vs_final_then_root_vs_final():
    store = fixed_store()
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        assert (screen.a, screen.b) == ("none", "final")  # the first default pair
        assert_numbers(screen, store, "none", "final")
        # hand-worked figures (module docstring)
        assert text(screen, "#a-mean").startswith("0.333  ")
        assert text(screen, "#b-mean").startswith("0.764  ")
        assert "final − none: +0.431" in text(screen, "#pair-figures")
        assert "wins 7 · losses 2 · ties 3" in text(screen, "#pair-figures")
        assert text(screen, "#a-errors") == "3 pipeline · 0 judge"
        assert text(screen, "#b-errors") == "3 pipeline · 1 judge"
        assert text(screen, "#a-cost") == "$0.2100 + 6 unknown"
        assert text(screen, "#b-cost") == "$0.2030 + 6 unknown"
        assert text(screen, "#a-solved").startswith("0.250  ")  # t03, t06, t10
        assert text(screen, "#b-passk").startswith("0.667  ")  # 8 of 12 tasks solved on every repeat
        # 12 tasks cannot tell: the verdict says so and stays neutral
        verdict = screen.query_one("#verdict")
        assert text(screen, "#verdict").startswith("No clear difference: final scores 0.43 higher than none")
        assert verdict.has_class("-neutral") and not verdict.has_class("-improvement")

        screen.query_one("#select-a", Select).value = "root"
        screen = await settle(pilot)
        assert (screen.a, screen.b) == ("root", "final")
        assert_numbers(screen, store, "root", "final")


def clear_store(n: int = 12) -> EvalStore:
    """n tasks, 2 repeats: "old" solves none of them, "new" all of them."""
    store = EvalStore({}, [])
    ids = [f"q{i:02d}" for i in range(n)]
    store.apply(ev.RunStarted(labels=["old", "new"], task_ids=ids, repeats=2, concurrency=1, total=4 * n))
    for label, score in (("old", 0.0), ("new", 1.0)):
        store.apply(ev.SelectorStarted(label=label, selector=label, commit=None, total=2 * n))
        for r in (1, 2):
            for tid in ids:
                rec = AttemptRecord(repeat=r, id=tid, status="ok", judge=Judged(score=score), cost_usd=None)
                store.apply(ev.AttemptFinished(label=label, record=rec, traceback=None))
    store.apply(ev.RunFinished(summaries={}, cancelled=False, wall_s=1.0))
    return store


async def test_verdict_is_green_for_an_improvement_and_red_for_a_regression_after_swapping():
    store = clear_store()
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        assert (screen.a, screen.b) == ("old", "new")  # consecutive pair when none/root/final are absent
        verdict = screen.query_one("#verdict")
        assert text(screen, "#verdict").startswith("new scores 1.00 higher than old")
        assert text(screen, "#verdict").endswith(": an improvement.")
        assert verdict.has_class("-improvement") and not verdict.has_class("-neutral")
        # every one of 12 paired differences is +1: the exact permutation p is 2 / 2^12 = 0.00049 (secondary)
        assert "p < 0.001: test of the interval's null" in text(screen, "#pair-figures")
        assert "sharp-null test p (secondary): < 0.001" in text(screen, "#pair-figures")
        assert screen.paired is not None
        assert screen.paired.pair is not None
        pair = screen.paired.pair
        assert pair.p_value is not None
        assert pair.sharp_p_value == pytest.approx(2 / 2**12) and pair.p_value < 0.001
        # unknown cost is never shown as $0
        assert text(screen, "#a-cost") == "unknown (24 attempts)"
        await pilot.press("s")
        screen = await settle(pilot)
        assert (screen.a, screen.b) == ("new", "old")
        assert screen.query_one("#select-a", Select).value == "new"
        assert text(screen, "#verdict").endswith(": a regression.")
        assert verdict.has_class("-regression") and not verdict.has_class("-improvement")


FINGERPRINT = {
    "test_ids_sha256": "a" * 64,
    "test_rows_sha256": "b" * 64,
    "judge_sha256": "c" * 64,
    "pipeline_sha256": None,
    "agent_params_sha256": "d" * 64,
    "model_sha256": "e" * 64,
    "repeats": 3,
    "smoke_limit": None,
    "dataset_revision": None,
    "hermit_tui_version": "0.1.0",
}


def with_fingerprints(**fingerprints: dict | None) -> EvalStore:
    store = fixed_store()
    for key, fp in fingerprints.items():
        summary = store.columns[key].summary
        assert summary is not None
        data = summary.model_dump()
        store.columns[key].summary = Summary(**(data | {"fingerprint": fp}))
    return store


async def test_a_fingerprint_difference_raises_a_red_banner_naming_it():
    other = FINGERPRINT | {"judge_sha256": "0" * 64, "repeats": 5, "hermit_tui_version": "0.2.0"}
    app = make_app(with_fingerprints(none=FINGERPRINT, root=FINGERPRINT, final=other))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        banner = screen.query_one("#compare-protocol", Static)
        assert banner.display and banner.has_class("-mismatch")
        # the version is informational: not named
        assert text(screen, "#compare-protocol") == (
            "! NOT COMPARABLE: none and final differ in the judge's source, repeats. A difference in scores may "
            "come from the protocol, not the adapter."
        )
        screen.query_one("#select-b", Select).value = "root"  # same fingerprint: no banner
        await settle(pilot)
        assert not banner.display


async def test_a_missing_fingerprint_warns_that_the_protocol_cannot_be_checked():
    app = make_app(with_fingerprints(none=FINGERPRINT))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        banner = screen.query_one("#compare-protocol", Static)
        assert banner.display and banner.has_class("-unchecked") and not banner.has_class("-mismatch")
        assert text(screen, "#compare-protocol") == (
            "! Protocol cannot be checked: final carries no fingerprint (written by hermit eval?)."
        )


async def test_transitions_list_their_tasks_and_enter_opens_the_attempt(monkeypatch):
    app = make_app()
    calls = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        monkeypatch.setattr(app, "goto", lambda name, **kw: calls.append((name, kw)))
        screen.query_one(TabbedContent).active = "tab-transitions"
        await pilot.pause()
        table = screen.query_one("#transitions", VirtualTable)
        # hand-worked: fixed = never solved by none, always by final
        assert list(table.rows) == [("fixed", 6), ("broken", 1), ("stable_pass", 2), ("stable_fail", 2), ("flaky", 1)]
        table.focus()
        await pilot.press("down", "enter")  # broken
        tasks = screen.query_one("#transition-tasks", VirtualTable)
        assert list(tasks.rows) == ["t10"]
        assert text(screen, "#transition-title").startswith("broken: 1 task")
        assert tasks.has_focus
        await pilot.press("enter")
        assert calls == [("attempt", {"task_id": "t10"})]
        table.focus()
        await pilot.press("up", "enter")  # fixed
        assert list(tasks.rows) == ["t01", "t02", "t07", "t08", "t11", "t12"]
        await pilot.press("down", "down", "enter")
        assert calls[-1] == ("attempt", {"task_id": "t07"})


async def test_power_follows_the_difference_typed():
    store = fixed_store()
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        _, _, pair = expected_numbers(store, "none", "final")
        assert f"Minimum detectable difference: {pair.mde:.3f}" in text(screen, "#power-mde")
        needed = text(screen, "#power-needed")
        assert needed.startswith("To detect a difference of 0.05 (80% power, two-sided α 0.05): ")
        t = pair.tasks_needed(0.05)
        assert t is not None and t > 12
        assert f"{t:,} paired tasks at 3 repeats (+{(t - 12) * 6:,} attempts" in needed  # 3 + 3 per new task
        # repeats_needed(0.05) is None here: said as known, not as unknown
        assert "or more repeats would not do it: the between-task variance alone is too large for 12 tasks" in needed
        assert pair.repeats_needed(0.05) is None
        screen.query_one("#delta", Input).value = "0.8"
        await wait_for(pilot, lambda: "difference of 0.8 " in text(screen, "#power-needed"))
        t, r = pair.tasks_needed(0.8), pair.repeats_needed(0.8)
        assert t is not None and r is not None
        needed = text(screen, "#power-needed")
        assert (f"{t} paired tasks would do: 12 already" if t <= 12 else f"{t:,} paired tasks at 3 repeats") in needed
        assert (
            f"{r} repeats per task would do: 3 already"
            if r <= 3
            else f"{r} repeats per task on the 12 tasks (+{12 * 2 * (r - 3):,} attempts"
        ) in needed
        assert "the interval's own half-width" in text(screen, "#power-mde")
        screen.query_one("#delta", Input).value = "x"
        await pilot.pause()
        assert text(screen, "#power-needed").startswith("Enter a difference greater than 0")


async def test_plots_draw_the_series_computed_from_the_records():
    store = fixed_store()
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        sa, sb, _ = expected_numbers(store, "none", "final")
        # per-task means binned by tenths (the module docstring's table)
        hist = screen.query_one("#plot-scores", plots.DistributionPlot).data
        assert hist is not None
        assert hist.counts == {"none": [7, 0, 0, 0, 0, 2, 0, 0, 0, 3], "final": [2, 0, 0, 0, 0, 1, 1, 0, 0, 8]}
        assert hist.edges[0] == 0.0 and hist.edges[-1] == 1.0 and len(hist.edges) == 11
        means = screen.query_one("#plot-means", plots.MeansPlot).data
        assert means == [
            plots.MeanCI("none", sa.mean, sa.ci_low, sa.ci_high, "score"),
            plots.MeanCI("final", sb.mean, sb.ci_low, sb.ci_high, "score"),
        ]
        diffs_data = screen.query_one("#plot-diffs", plots.DifferencesPlot).data
        assert diffs_data is not None
        a, b, diffs = diffs_data
        assert (a, b) == ("none", "final")
        assert [t for t, _ in diffs] == [
            "t04",
            "t10",
            "t03",
            "t05",
            "t06",
            "t09",
            "t01",
            "t02",
            "t07",
            "t08",
            "t11",
            "t12",
        ]
        assert [round(d, 6) for _, d in diffs] == [-0.5, -0.5, 0, 0, 0, round(1 / 6, 6)] + [1.0] * 6
        running = screen.query_one("#plot-running", plots.RunningPlot).data
        assert running is not None
        ns = sorted({-(-36 * i // 20) for i in range(1, 21)})  # ceil(36 i / 20)
        for label in ("none", "final"):
            recs = records(store, label)
            want = []
            for n in ns:
                s = selector_stats(label, recs[:n], IDS)
                want.append(plots.RunningPoint(n, s.mean, s.ci_low, s.ci_high, s.ci_method))
            assert running[label] == want
        # by hand: the first 2 attempts of none (t01, t02, repeat 1) both score 0: no spread, so the interval is
        # [0, 1 - 0.025^(1/2)], not zero-width; the last point is the full mean
        first = running["none"][0]
        assert (first.n, first.mean, first.low, first.method) == (2, 0.0, 0.0, "no-spread")
        assert first.high == pytest.approx(1 - 0.025**0.5)
        assert running["final"][-1] == plots.RunningPoint(36, sb.mean, sb.ci_low, sb.ci_high, "score")
        # each plot paints, with its legend / labels
        for tab, plot_id, words in (
            ("tab-scores", "#plot-scores", ["none", "final"]),
            ("tab-means", "#plot-means", ["none", "final"]),
            ("tab-diffs", "#plot-diffs", ["final − none per task, sorted (12 tasks)"]),
            ("tab-running", "#plot-running", ["none", "final", "attempts"]),
        ):
            screen.query_one(TabbedContent).active = tab
            await pilot.pause()
            rendered = screen.query_one(plot_id).render()
            assert isinstance(rendered, Text)
            painted = rendered.plain
            assert all(w in painted for w in words), (tab, painted)


def live_store() -> EvalStore:
    """none finished; final running with only its first repeat in."""
    store = fixed_store()
    full = store.columns["final"]
    store.columns["final"] = type(full)(
        key="final", label="final", selector="final", source="live", expected=36, running=True
    )
    for rec in [r for r in full.records.values() if r.repeat == 1]:
        store.columns["final"].add(rec)
    store.run_active = True
    store._touch()
    return store


async def test_figures_follow_attempts_streaming_in(monkeypatch):
    monkeypatch.setattr(compare_mod, "LIVE_THROTTLE_S", 0.05)
    full = fixed_store()
    store = live_store()
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_compare(pilot)
        assert text(screen, "#b-sample") == "12 × 1 (12 attempts)"
        assert "checked when it finishes" in text(screen, "#compare-protocol")
        for rec in [r for r in full.columns["final"].records.values() if r.repeat > 1]:
            store.apply(ev.AttemptFinished(label="final", record=rec, traceback=None))
        screen.post_message(HermitApp.StoreUpdated())
        screen = await settle(pilot)
        assert_numbers(screen, store, "none", "final")
        running = screen.query_one("#plot-running", plots.RunningPlot).data
        assert running is not None and running["final"][-1].n == 36


async def test_one_evaluation_is_not_enough():
    store = fixed_store()
    for key in ("root", "final"):
        store.remove_column(key)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.push_screen(CompareScreen())
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert (screen.a, screen.b) == ("none", None)
        assert text(screen, "#compare-status") == "Two evaluations are needed to compare."
        assert screen.result is None


def _snap(tab: str | None = None):
    app = make_app()

    async def run_before(pilot) -> None:
        await pilot.pause()
        app.push_screen(CompareScreen())
        screen = await settle(pilot)
        if tab:
            screen.query_one(TabbedContent).active = tab
            await pilot.pause()

    return app, run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_snapshot_numbers(snap_compare, size):
    app, run_before = _snap()
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_snapshot_running_mean_plot(snap_compare):
    app, run_before = _snap("tab-running")
    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_series_helpers_by_hand():
    # 1000 sorted differences drawn as 120 bars: evenly spaced, the extremes kept
    shown = plots.thin(list(range(1000)), 120)
    assert len(shown) == 120 and shown[0] == 0 and shown[-1] == 999 and shown == sorted(set(shown))
    assert plots.thin([3, 1, 2], 120) == [3, 1, 2]
    # 36 attempts in 20 steps: ceil(36 i / 20)
    assert plots.checkpoints(36)[:4] == [2, 4, 6, 8] and plots.checkpoints(36)[-1] == 36
    assert plots.checkpoints(5) == [1, 2, 3, 4, 5] and plots.checkpoints(0) == []
    # scores outside [0, 1] widen the bins: [-1, 2] in 3 bins of width 1; the top edge belongs to the last bin
    h = plots.histogram({"x": [-1.0, 0.5, 2.0, 1.0]}, bins=3)
    assert h.edges == [-1.0, 0.0, 1.0, 2.0] and h.counts == {"x": [1, 1, 2]}
    assert plots.nice_ticks(-0.5, 1.0) == [-0.5, 0.0, 0.5, 1.0]
    assert plots.int_ticks(36) == [0, 8, 16, 24, 32]
