"""The per-task table on fixed data: filters, search, sort, baseline, drill-down, refresh, banners, snapshots.

Expected rows are worked out by hand from tests/conftest.py (mean over 3 repeats, t01..t12):

    task   none  root  final        task   none  root  final
    t01    0     1     1            t07    0     0.33  1       (root solves only repeat 2: flaky)
    t02    0     0     1            t08    0     0     1
    t03    1     1     1  (cost ?)  t09    0.5   1     0.67    (final repeat 2 is a judge error: flaky)
    t04    0.5   1     0            t10    1     1     0.5
    t05    0     0     0  (errors)  t11    0     0     1
    t06    1     1     1            t12    0     0.5   1
"""

from __future__ import annotations

import asyncio
import threading

from fixture_data import fixed_store, fixture_app
from textual.content import Content
from textual.widgets import Input, Static
from waiting import wait_for

from hermit_tui.core.records.results import AttemptRecord, Judged, Summary
from hermit_tui.core.run import events as ev
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.tasks import TasksScreen
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.widgets.virtual_table import VirtualTable

ALL = [f"t{i:02d}" for i in range(1, 13)]


def make_app(store: EvalStore | None = None) -> HermitApp:
    """HermitApp(store=fixed_store(), live_updates=False) without the config picker underneath."""
    return fixture_app(None, screen=None, store=store)


async def open_tasks(pilot, **kwargs) -> TasksScreen:
    """The per-task table once its first rows are shown (its count line says how many): on its first show they come
    after the first paint (TasksScreen.on_screen_resume), which a pause does not always include (a loaded run once
    found the table empty)."""
    await pilot.pause()
    pilot.app.push_screen(TasksScreen(**kwargs))
    app = pilot.app
    return await wait_for(
        pilot,
        lambda: app.screen if isinstance(app.screen, TasksScreen) and count_text(app.screen) else None,
        what="the tasks table's first rows",
    )


def shown(screen: TasksScreen) -> list[str]:
    return [row.task_id for row in screen.table.rows]


def count_text(screen: TasksScreen) -> str:
    return str(screen.query_one("#tasks-count", Static).content)


def table_lines(screen: TasksScreen, n: int) -> list[str]:
    return [screen.table.render_line(y).text for y in range(n)]


async def test_every_row_shows_means_solved_marks_and_deltas_against_the_baseline():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        assert shown(screen) == ALL
        assert count_text(screen) == "12 of 12 tasks · all tasks"
        header, *rows = table_lines(screen, 13)
        assert header.split()[:9] == ["task", "▲", "none", "✓", "root", "✓", "Δ", "final", "✓"]
        # none 0.50 unsolved; root 1.00 solved, +0.50 on none; final 0.00 unsolved, -0.50 on none
        assert rows[3].split()[:8] == ["t04", "0.50", "·", "1.00", "✓", "+0.50", "0.00", "·"]
        assert rows[3].split()[8] == "-0.50"
        # final's t09 repeat 2 is a judge error: its mean carries the grid's J
        assert rows[8].split()[:9] == ["t09", "0.50", "·", "1.00", "✓", "+0.50", "0.67J", "✓", "+0.17"]
        assert rows[2].split()[:9] == ["t03", "1.00", "✓", "1.00", "✓", "0.00", "1.00", "✓", "0.00"]
        # t05 fails in the pipeline every time: marked ✗ as in the grid, not scored 0.00
        assert rows[4].split()[:9] == ["t05", "✗", "·", "✗", "·", "0.00", "✗", "·", "0.00"]
        assert "dates · question number 3" in rows[2]


# in the order f cycles them (the keys 1-9 label attempts: see test_triage.py)
FILTERED = [
    ("errors", "errors only", ["t05", "t09"]),  # t05 fails in the pipeline everywhere; final's t09 has a judge error
    ("regressions", "regressions: final vs none", ["t04", "t10"]),  # final 0 < 0.5, 0.5 < 1
    ("improvements", "improvements: final vs none", ["t01", "t02", "t07", "t08", "t09", "t11", "t12"]),
    ("flaky", "flaky", ["t07", "t09"]),  # root's t07 scores 0,1,0; final's t09 scores 1,0,1
    ("unknown_cost", "unknown cost", ["t03", "t05"]),  # t03's cost is never reported; failed attempts report none
    ("all", "all tasks", ALL),
]


async def set_filter(pilot, screen: TasksScreen, name: str) -> None:
    """Press f until the filter is ``name`` (f cycles them)."""
    for _ in range(len(FILTERED)):
        if screen.filter == name:
            return
        await pilot.press("f")
    assert screen.filter == name


async def test_each_filter_keeps_exactly_the_tasks_worked_out_by_hand():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        for filter, name, expected in FILTERED:
            await pilot.press("f")
            assert (screen.filter, shown(screen)) == (filter, expected)
            assert count_text(screen) == f"{len(expected)} of 12 tasks · {name}"


async def test_f_cycles_the_filters_and_the_chip_of_the_active_one_is_marked():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        await pilot.press("f", "f")
        assert screen.filter == "regressions" and shown(screen) == ["t04", "t10"]
        chips = screen.query_one("#tasks-filters", Static).content
        assert isinstance(chips, Content)
        marked = [chips.plain[s.start : s.end] for s in chips.spans if "reverse" in str(s.style)]
        assert marked == [" regressions "]
        await pilot.press("f", "f", "f", "f")
        assert screen.filter == "all" and shown(screen) == ALL


async def test_search_narrows_by_id_or_task_text_as_you_type():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        await pilot.press("slash")
        assert isinstance(screen.focused, Input)
        await pilot.press(*"strings")  # the category of t02, t06, t10
        await wait_for(pilot, lambda: shown(screen) == ["t02", "t06", "t10"], what="the search, past its debounce")
        assert count_text(screen) == "3 of 12 tasks · all tasks"
        search = screen.query_one("#tasks-search", Input)
        search.value = "number 1"  # "question number 1", 10, 11, 12
        await pilot.press("enter")  # applies at once and goes back to the table
        assert shown(screen) == ["t01", "t10", "t11", "t12"]
        assert screen.focused is screen.table
        await set_filter(pilot, screen, "regressions")  # filters combine with the search: final 0.5 < none 1
        assert shown(screen) == ["t10"]


async def test_s_cycles_the_sort_column_r_reverses_it_and_missing_values_stay_last():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        await pilot.press("s")  # by none's mean, ascending; ties keep task order
        assert screen.sort == "mean:none"
        assert shown(screen) == ["t01", "t02", "t05", "t07", "t08", "t11", "t12", "t04", "t09", "t03", "t06", "t10"]
        assert "none ▲" in table_lines(screen, 1)[0]
        await pilot.press("r")
        assert shown(screen) == ["t03", "t06", "t10", "t04", "t09", "t01", "t02", "t05", "t07", "t08", "t11", "t12"]
        assert "none ▼" in table_lines(screen, 1)[0]
        await pilot.press("s", "s")  # solved:none, then root's mean
        assert screen.sort == "mean:root"


async def test_clicking_a_header_sorts_by_it_and_clicking_again_reverses():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        # cells: task 0-7, none 8-16, ✓ 17-19, root 20-28, ✓ 29-31, Δ 32-38, final 39-47
        await pilot.click(VirtualTable, offset=(43, 0))
        await pilot.pause()
        assert screen.sort == "mean:final" and not screen.reverse
        assert shown(screen) == ["t04", "t05", "t10", "t09", "t01", "t02", "t03", "t06", "t07", "t08", "t11", "t12"]
        await pilot.click(VirtualTable, offset=(43, 0))
        await pilot.pause()
        assert screen.reverse
        assert shown(screen)[:8] == ["t01", "t02", "t03", "t06", "t07", "t08", "t11", "t12"]
        assert shown(screen)[8:] == ["t09", "t10", "t04", "t05"]


async def test_b_changes_the_baseline_the_deltas_and_the_pair_the_filters_compare():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        await pilot.press("b")
        assert app.store.baseline == "root"
        header, *rows = table_lines(screen, 5)
        assert header.split()[:8] == ["task", "▲", "none", "✓", "Δ", "root", "✓", "final"]
        # t01: none 0 - root 1 = -1.00; final 1 - root 1 = 0.00.  t04: none 0.5 - 1 = -0.50, final 0 - 1 = -1.00
        assert rows[0].split()[:9] == ["›t01", "0.00", "·", "-1.00", "1.00", "✓", "1.00", "✓", "0.00"]
        assert rows[3].split()[:9] == ["t04", "0.50", "·", "-0.50", "1.00", "✓", "0.00", "·", "-1.00"]
        await set_filter(pilot, screen, "regressions")  # final below root: t04 0 < 1, t09 0.67 < 1, t10 0.5 < 1
        assert shown(screen) == ["t04", "t09", "t10"]
        assert count_text(screen) == "3 of 12 tasks · regressions: final vs root"
        columns = str(screen.query_one("#tasks-columns", Static).content)
        assert "root" in columns.splitlines()[1] and columns.splitlines()[1].endswith("baseline")
        await pilot.press("b", "b")  # final, then back to none
        assert app.store.baseline == "none"
        assert count_text(screen) == "2 of 12 tasks · regressions: final vs none"


async def test_enter_opens_the_drill_down_for_the_task_under_the_cursor(monkeypatch):
    app = make_app()
    calls = []
    monkeypatch.setattr(app, "goto", lambda name, **kwargs: calls.append((name, kwargs)))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tasks(pilot)
        await pilot.press("down", "down", "down", "enter")
        await pilot.pause()
        assert calls == [("attempt", {"task_id": "t04"})]
        tasks = app.screen
        assert isinstance(tasks, TasksScreen)
        await set_filter(pilot, tasks, "regressions")  # t04, t10; the cursor stayed on t04
        await pilot.press("down", "enter")
        await pilot.pause()
        assert calls[-1] == ("attempt", {"task_id": "t10"})


async def test_a_store_update_refreshes_the_rows_and_the_cursor_stays_on_its_task():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        await pilot.click(VirtualTable, offset=(43, 0))  # by final's mean: t04 t05 t10 t09 t01 ...
        await pilot.press("home", "down", "down", "down")  # the sort kept the cursor on t01, now 5th
        assert screen.table.cursor_value is not None
        assert screen.table.cursor_value.task_id == "t09"
        retried = AttemptRecord(repeat=2, id="t09", status="ok", output="42", judge=Judged(score=1.0), cost_usd=0.002)
        app.store.apply(ev.AttemptFinished(label="final", record=retried))  # the judge error replaced: mean 1
        screen.post_message(HermitApp.StoreUpdated())
        await pilot.pause()
        assert shown(screen) == ["t04", "t05", "t10", "t01", "t02", "t03", "t06", "t07", "t08", "t09", "t11", "t12"]
        assert screen.table.cursor_row == 9 and screen.table.cursor_value.task_id == "t09"
        assert "errors 3" in str(screen.query_one("#tasks-columns", Static).content).splitlines()[2]


async def test_header_lines_show_each_column_and_the_banners_say_demo_and_smoke():
    store = fixed_store()
    final = store.columns["final"]
    assert final.summary is not None
    final.summary = Summary(**{**final.summary.model_dump(), "smoke_limit": 5})
    store.warnings = ["task t03 is in both train and test"]
    app = make_app(store)
    app.is_demo = True
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        columns = str(screen.query_one("#tasks-columns", Static).content).splitlines()
        # none: 36 attempts scoring 12 in all (t03 t06 t10 x3 = 9, t04 t09 0.5 x3 = 3) -> 0.333, t05 x3 errors
        assert columns[0].split() == ["●", "none", "no", "commit", "mean", "0.333", "errors", "3", "baseline"]
        assert columns[1].split() == ["root", "1111111", "mean", "0.569", "errors", "3"]
        assert columns[2].split() == ["final", "fffffff", "mean", "0.764", "errors", "4", "(1", "judge)"]
        banners = str(screen.query_one("#tasks-banners", Static).content)
        assert "teaching demonstration" in banners
        assert "final: smoke subset of 5 tasks" in banners
        assert "task t03 is in both train and test" in banners


def big_store(n: int) -> EvalStore:
    ids = [f"task-{i:05d}" for i in range(n)]
    store = EvalStore({t: {"id": t, "text": f"text {t}"} for t in ids}, [])
    store.apply(ev.RunStarted(labels=["none"], task_ids=ids, repeats=1, concurrency=1, total=n))
    store.apply(ev.SelectorStarted(label="none", selector="none", commit=None, total=n))
    for i, t in enumerate(ids):
        store.apply(
            ev.AttemptFinished(
                label="none",
                record=AttemptRecord(repeat=1, id=t, status="ok", judge=Judged(score=float(i % 2)), cost_usd=0.0),
            )
        )
    return store


async def rows_computed(pilot) -> None:
    workers = [w for w in pilot.app.workers if w.group == "tasks-rows"]
    await asyncio.gather(*(w.wait() for w in workers), return_exceptions=True)  # a superseded one is cancelled
    await pilot.pause()


async def test_a_large_store_computes_its_rows_in_a_worker_thread(monkeypatch):
    threads = []
    compute = TasksScreen._compute

    def spy(store, query, pause=None):
        threads.append(threading.current_thread() is threading.main_thread())
        assert pause is None or pause.__self__ is app.pacer  # the worker gives way to the loop
        return compute(store, query, pause)

    monkeypatch.setattr(TasksScreen, "_compute", staticmethod(spy))
    app = make_app(big_store(2500))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        await rows_computed(pilot)
        assert threads and not any(threads)
        assert screen.table.row_count == 2500
        assert count_text(screen) == "2500 of 2500 tasks · all tasks"
        await pilot.press("s")  # by mean: the 1250 zeros first
        await rows_computed(pilot)
        assert shown(screen)[1249:1251] == ["task-02498", "task-00001"]


async def test_escape_leaves_the_search_then_the_screen():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_tasks(pilot)
        await pilot.press("slash")
        await pilot.press("escape")
        assert screen.focused is screen.table and app.screen is screen
        await pilot.press("escape")
        assert app.screen is not screen


async def push_tasks(pilot):
    await open_tasks(pilot)


def test_snapshot_80x24(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=push_tasks)


def test_snapshot_120x40_regressions(snap_compare):
    assert snap_compare(make_app(), terminal_size=(120, 40), run_before=push_tasks, press=["f", "f"])


async def test_with_seven_selectors_on_a_short_terminal_the_header_takes_one_line_and_i_shows_each():
    """Issue 27 (finding 10): seven selectors at 80x24 left 3-4 task rows; the selectors share one line (i: one each),
    no line wraps, and shift+s picks the sort column directly."""
    from fixture_data import SEVEN_LABELS, fixed_store

    from hermit_tui.dashboard.screens.annotate import LabelPickScreen

    app = make_app(fixed_store(labels=SEVEN_LABELS))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_tasks(pilot)
        header = screen.query_one("#tasks-columns")
        assert header.size.height == 2  # the selectors on one line, the legend on another
        assert screen.table.size.height >= 12  # the 12 tasks and the table's header fit
        await pilot.press("i")
        await pilot.pause()
        assert header.size.height == len(SEVEN_LABELS) + 1  # one line each, none wrapped
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, LabelPickScreen)
        values = [v for v, _ in app.screen.choices]
        app.screen.dismiss("mean:shouty")
        await pilot.pause()
        assert values[0] == "id" and len(values) == 1 + 3 * len(SEVEN_LABELS) - 1  # no delta for the baseline
        assert screen.sort == "mean:shouty"


async def test_header_lines_line_up_when_a_label_differs_from_its_selector():
    """A checkpoint's label is its tag with '/' replaced (demo_ckpt-step-1) and the header names the selector
    beside it: the commit, mean and errors columns still start at the same place on every line."""
    store = fixed_store()
    store.columns["root"].selector = "demo/ckpt-step-1-with-a-long-tag"
    app = make_app(store)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await open_tasks(pilot)
        lines = str(screen.query_one("#tasks-columns", Static).content).splitlines()[:3]
        assert "root (demo/ckpt-step-1-with-a-long-tag)" in lines[1]
        starts = [line.index(word) for line, word in zip(lines, ["no commit", "1111111", "fffffff"])]
        means = [line.index("mean") for line in lines]
        assert len(set(starts)) == 1 and len(set(means)) == 1, lines
