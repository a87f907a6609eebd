"""The drill-down: a task's fields, every attempt per selector, the side-by-side diff, the log viewer."""

from __future__ import annotations

import pytest
from fixture_data import fixed_store
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Label, Select, Static, Tab, TabbedContent, TextArea

from hermit_tui.core.present import cost_text
from hermit_tui.core.records.results import AttemptRecord, Judged
from hermit_tui.core.run import events as ev
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.attempt import AttemptScreen
from hermit_tui.dashboard.screens.dialogs import log as log_module
from hermit_tui.dashboard.screens.dialogs.log import LogScreen, read_tail
from hermit_tui.dashboard.widgets.attempt_card import AttemptCard, pretty
from hermit_tui.dashboard.widgets.diff_view import DiffView, changed_words, diff_rows, diff_words


@pytest.fixture(autouse=True)
def private_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))


async def settle(pilot, group: str) -> None:
    """Wait for this screen's thread workers of ``group`` (not the picker's never-ending directory loader)."""
    for worker in [w for w in pilot.app.workers if w.group == group]:
        await worker.wait()
    await pilot.pause()


def lines_of(widget) -> list[str]:
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


def card_text(card: AttemptCard) -> str:
    return "\n".join(line for w in card.query("Label, Static") for line in lines_of(w))


def card(screen: AttemptScreen, key: str, repeat: int) -> AttemptCard:
    return next(c for c in screen.query(AttemptCard) if c.key == key and c.record.repeat == repeat)


async def open_attempt(pilot, store_app: HermitApp, *args) -> AttemptScreen:
    await pilot.pause()
    store_app.push_screen(AttemptScreen(*args))
    await pilot.pause()
    await pilot.pause()
    screen = store_app.screen
    assert isinstance(screen, AttemptScreen)
    return screen


def test_formatting_never_shows_unknown_cost_as_zero():
    assert cost_text(None) == "unknown"
    assert cost_text(0.0) == "$0.0000"
    assert cost_text(0.0125) == "$0.0125"
    assert pretty({"a": [1, 2]}) == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert pretty('{"b":1}') == '{\n  "b": 1\n}'
    assert pretty("plain {text") == "plain {text"


def test_read_tail_keeps_the_end_of_a_long_log(tmp_path):
    path = tmp_path / "big.log"
    path.write_text("".join(f"line {i:06d}\n" for i in range(30_000)))  # 12 bytes a line: 360 000 bytes
    text, note = read_tail(path, limit=120_000)
    lines = text.splitlines()
    # the last 120 000 bytes are the last 10 000 lines; the first of them is whole, so none is dropped
    assert lines[0] == "line 020000" and lines[-1] == "line 029999" and len(lines) == 10_000
    assert note == "Showing the last 120 KB of 360 KB: the start of the log is cut."
    assert read_tail(path, limit=1_000_000) == (path.read_text(), "")


def test_word_diff_of_two_lines():
    left, right = diff_words("the cat sat on the mat", "the dog sat on the red mat")
    assert left == [("the ", "same"), ("cat", "removed"), (" sat on the mat", "same")]
    assert right == [("the ", "same"), ("dog", "added"), (" sat on the ", "same"), ("red ", "added"), ("mat", "same")]
    rows = diff_rows("a\nb c d\ne", "a\nb x d\nf\ng")
    assert [(left[0] if left else None, r[0] if r else None) for left, r in rows] == [(1, 1), (2, 2), (3, 3), (None, 4)]
    assert changed_words(rows) == (["c", "e"], ["x", "f", "g"])


async def test_drill_down_shows_every_field_and_opens_on_the_attempt():
    app = HermitApp(store=fixed_store(), live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_attempt(pilot, app, "t09", "final", 2)
        tabs = screen.query_one(TabbedContent)
        assert str(tabs.get_tab(tabs.active).label) == "final"
        assert [str(t.label) for t in tabs.query(Tab)] == ["none", "root", "final", "Side by side", "Transcript"]
        focused = screen.focused
        assert isinstance(focused, AttemptCard) and (focused.key, focused.record.repeat) == ("final", 2)
        listing = focused.parent
        assert isinstance(listing, Widget)
        assert listing.scroll_y > 0 and listing.region.contains_region(focused.region)  # scrolled to it
        task = "\n".join(lines_of(screen.query_one("#attempt-task-fields", Static)))
        assert "category" in task and "units" in task and "question number 9" in task
        assert "Task t09" in lines_of(screen.query_one("#attempt-title"))[0]

        judged = card_text(focused)
        status = focused.query_one(".attempt-status", Label)
        assert status.has_class("status-judge_error") and "judge_error" in lines_of(status)[0]
        for expected in (
            "final · repeat 2",
            "score 0.000",
            "the judge failed: KeyError: 'expected'",
            "KeyError: 'expected'",
            "$0.0020",
            "Tokens",
            "120",
            "0.12 s",
            "Log",
            "none",
            "42 km",
        ):
            assert expected in judged, expected

        # t03's cost is unknown: "unknown", never $0
        screen.app.pop_screen()
        screen = await open_attempt(pilot, app, "t03", "none", 1)
        unknown = card_text(card(screen, "none", 1))
        assert "Cost         unknown" in unknown and "$0" not in unknown
        assert '"category": "dates"' in unknown and "correct" in unknown  # judge feedback and extra
        assert card(screen, "none", 1).query_one(".attempt-status").has_class("status-ok")

        # a pipeline error: its error, traceback and the missing output
        screen.app.pop_screen()
        screen = await open_attempt(pilot, app, "t05", "root", 3)
        failed = card_text(card(screen, "root", 3))
        assert "error: the pipeline raised" in failed
        assert "(no output: ValueError: no unit for 'parsec')" in failed
        assert 'File "pipeline.py", line 40, in run' in failed
        assert "Cost         unknown" in failed and "not reported" in failed


async def test_side_by_side_highlights_the_changed_words_and_cycles_pairs():
    app = HermitApp(store=fixed_store(), live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_attempt(pilot, app, "t02")
        view = screen.query_one(DiffView)
        # default pair: the baseline (none) against the last column (final), repeat 1
        assert (
            screen.query_one("#side-left", Select).value,
            screen.query_one("#side-right", Select).value,
            screen.query_one("#side-repeat", Select).value,
        ) == ("none", "final", 1)
        assert view.rows == [
            (
                (1, [("none", "removed"), (" answer to t02: ", "same"), ("0", "removed")]),
                (1, [("final", "added"), (" answer to t02: ", "same"), ("1", "added")]),
            )
        ]
        # the drawn cells carry the theme's red and green on exactly those words
        table = view.table()
        left_cell = list(table.columns[1].cells)[1]
        right_cell = list(table.columns[3].cells)[1]
        assert isinstance(left_cell, Text) and isinstance(right_cell, Text)
        removed, added = view.get_component_rich_style("diff--removed"), view.get_component_rich_style("diff--added")
        assert [(left_cell.plain[s.start : s.end], s.style) for s in left_cell.spans if s.style] == [
            ("none", removed),
            ("0", removed),
        ]
        assert [(right_cell.plain[s.start : s.end], s.style) for s in right_cell.spans if s.style] == [
            ("final", added),
            ("1", added),
        ]
        assert removed.bgcolor is not None
        assert added.bgcolor is not None
        red, green = removed.bgcolor.get_truecolor(), added.bgcolor.get_truecolor()
        assert red.red > red.green and green.green > green.red

        await pilot.press("right_curly_bracket")
        assert screen.query_one(TabbedContent).active == "side"
        assert (screen.query_one("#side-left", Select).value, screen.query_one("#side-right", Select).value) == (
            "root",
            "final",
        )
        assert changed_words(view.rows) == (["root", "0"], ["final", "1"])  # t02: root 0 -> final 1
        await pilot.press("right_curly_bracket")
        assert (screen.query_one("#side-left", Select).value, screen.query_one("#side-right", Select).value) == (
            "none",
            "root",
        )
        await pilot.press("left_curly_bracket")
        assert (screen.query_one("#side-left", Select).value, screen.query_one("#side-right", Select).value) == (
            "root",
            "final",
        )


async def test_large_outputs_are_diffed_in_a_worker():
    store = fixed_store()
    big = "".join(f"row {i} value {i}\n" for i in range(2000))  # > 20 KB
    for key, changed in (("none", big), ("final", big.replace("row 1500 value 1500", "row 1500 value 9999"))):
        rec = store.columns[key].records[("t01", 1)]
        store.columns[key].add(rec.model_copy(update={"output": changed}))
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_attempt(pilot, app, "t01")
        await settle(pilot, "diff")
        view = screen.query_one(DiffView)
        assert not view.pending and len(view.rows) == 2000
        assert changed_words(view.rows) == (["1500"], ["9999"])


async def test_log_opens_when_it_is_a_file_and_shows_the_end_of_a_long_one(tmp_path, monkeypatch):
    log = tmp_path / "attempt.log"
    log.write_text("step 1: parse\nstep 2: answer 42\n")
    long = tmp_path / "long.log"
    long.write_text("".join(f"line {i:07d}\n" for i in range(1000)))  # 13 bytes a line: 13 000 bytes
    monkeypatch.setattr(log_module, "LOG_TAIL_BYTES", 2000)
    store = fixed_store()
    col = store.columns["final"]
    col.add(col.records[("t01", 1)].model_copy(update={"log": str(long)}))
    col.add(col.records[("t01", 2)].model_copy(update={"log": str(log)}))
    col.add(col.records[("t01", 3)].model_copy(update={"log": str(tmp_path / "missing.log")}))
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_attempt(pilot, app, "t01", "final", 2)
        # The text wraps where a long temporary path ends: compare with whitespace collapsed.
        assert "(l: open)" in " ".join(card_text(card(screen, "final", 2)).split())
        assert "(not a readable file)" in " ".join(card_text(card(screen, "final", 3)).split())
        await pilot.press("l")
        await settle(pilot, "log")
        assert isinstance(app.screen, LogScreen)
        assert app.screen.query_one(TextArea).text == "step 1: parse\nstep 2: answer 42\n"
        assert not app.screen.query("#log-note")
        await pilot.press("escape")
        assert app.screen is screen

        card(screen, "final", 1).focus()
        await pilot.press("l")
        await settle(pilot, "log")
        text = app.screen.query_one(TextArea).text.splitlines()
        # the last 2000 bytes start mid-line (2000 / 13 = 153.8): the partial line is dropped, 153 whole ones kept
        assert text[0] == "line 0000847" and text[-1] == "line 0000999" and len(text) == 153
        assert lines_of(app.screen.query_one("#log-note"))[0].startswith("Showing the last 2 KB of 13 KB")
        await pilot.press("escape")

        card(screen, "final", 3).focus()
        await pilot.press("l")
        await settle(pilot, "log")
        assert app.screen is screen  # not a file: a notice, no viewer


async def test_refreshes_when_attempts_arrive():
    store = fixed_store(repeats=2)
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_attempt(pilot, app, "t01", "none")
        assert [c.record.repeat for c in screen.query(AttemptCard) if c.key == "none"] == [1, 2]
        store.apply(ev.SelectorStarted(label="extra", selector="demo/ckpt-step-1", commit="e" * 40, total=24))
        for rec in (AttemptRecord(repeat=3, id="t01", status="ok", output="late", judge=Judged(score=1.0)),):
            store.columns["none"].add(rec)
        store.apply(
            ev.AttemptFinished(
                label="extra",
                record=AttemptRecord(
                    repeat=1, id="t01", status="ok", output="extra says", judge=Judged(score=0.5), cost_usd=0.01
                ),
            )
        )
        screen.post_message(HermitApp.StoreUpdated())
        await pilot.pause()
        await pilot.pause()
        assert [c.record.repeat for c in screen.query(AttemptCard) if c.key == "none"] == [1, 2, 3]
        tabs = screen.query_one(TabbedContent)
        assert [str(t.label) for t in tabs.query(Tab)] == [
            "none",
            "root",
            "final",
            "extra",
            "Side by side",
            "Transcript",
        ]
        tabs.active = screen._panes["extra"]
        await pilot.pause()
        assert "extra says" in card_text(card(screen, "extra", 1))
        # a live column keeps streaming in: the next repeat of this task appears, another task's does not
        for tid, rep in (("t02", 1), ("t01", 2)):
            store.apply(
                ev.AttemptFinished(
                    label="extra",
                    record=AttemptRecord(
                        repeat=rep, id=tid, status="error", error="OSError: gone", judge=Judged(score=0.0)
                    ),
                )
            )
            screen.post_message(HermitApp.StoreUpdated())
            await pilot.pause()
        await pilot.pause()
        assert [c.record.repeat for c in screen.query(AttemptCard) if c.key == "extra"] == [1, 2]
        assert "OSError: gone" in card_text(card(screen, "extra", 2))


def _snap_app(task_id: str, key: str | None, repeat: int | None, press: tuple[str, ...] = ()):
    app = HermitApp(store=fixed_store(), live_updates=False)

    async def run_before(pilot) -> None:
        app.push_screen(AttemptScreen(task_id, key, repeat))
        await pilot.pause()
        await pilot.pause()
        for key_name in press:
            await pilot.press(key_name)
        await pilot.pause()

    return app, run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_attempt(snap_compare, size, private_settings):
    app, run_before = _snap_app("t05", "root", 2)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_snapshot_side_by_side(snap_compare, private_settings):
    """At 80 columns, where the two sides are narrowest."""
    app, run_before = _snap_app("t09", "final", 2, ("right_curly_bracket", "left_curly_bracket"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
