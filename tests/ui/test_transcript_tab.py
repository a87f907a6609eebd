"""The drill-down's Transcript tab: role-labelled turns, tool calls with their arguments, tool results, long
contents folded, search, two selectors side by side; for attempts hermit-tui wrote (transcripts.jsonl) and for
ones hermit wrote (its react log). A missing or unreadable log is a one-line note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_data import fixed_store
from textual.widgets import Input, Label, Static, TabbedContent

from hermit_tui.core.records.folders import open_evaluation
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks
from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.attempt import TRANSCRIPT, AttemptScreen
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.widgets.transcript_view import FOLD_KEEP, TranscriptPanel, TranscriptView, TurnBlock


@pytest.fixture(autouse=True)
def private_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))


async def settle(pilot) -> None:
    for _ in range(3):
        for worker in [w for w in pilot.app.workers if w.group == "transcript"]:
            await worker.wait()
        await pilot.pause()


def plain(block: TurnBlock) -> str:
    return block.text().plain


def view(screen, side: str) -> TranscriptView:
    return screen.query_one(f"#transcript-{side}-view", TranscriptView)


async def open_transcript(pilot, app, task_id: str, key: str, repeat: int) -> AttemptScreen:
    await pilot.pause()
    app.push_screen(AttemptScreen(task_id, key, repeat))
    await pilot.pause()
    await pilot.pause()
    await pilot.press("x")
    await settle(pilot)
    screen = app.screen
    assert screen.query_one(TabbedContent).active == TRANSCRIPT
    return screen


@pytest.fixture
def live_store(demo_config):
    """none and root evaluated by hermit-tui, fed to the store through the engine's events (live columns)."""
    config = load_config(demo_config, ["agent.params.latency_scale=0"])
    taskset = load_tasks(config)
    store = EvalStore(taskset.tasks, taskset.test_ids)
    EvalRun(config, ["none", "root"], repeats=2, update_card=False, on_event=store.apply).run_sync()
    return config, store


async def test_a_hermit_tui_attempt_turn_by_turn_with_folds_search_and_side_by_side(live_store):
    config, store = live_store
    sidecar = {
        (r["id"], r["repeat"]): r["messages"]
        for r in map(json.loads, (config.run_dir / "eval" / "root" / "transcripts.jsonl").read_text().splitlines())
    }
    record = store.columns["root"].records[("arith-04", 1)]
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_transcript(pilot, app, "arith-04", "root", 1)
        left = view(screen, "left")
        assert not view(screen, "right").display  # one selector until a second is chosen
        title = left.query_one(".transcript-title", Static).content
        assert str(title) == f"root · repeat 1 · ok · score {record.judge.score:.3f}"
        blocks = left.blocks
        messages = sidecar[("arith-04", 1)]
        assert [b.turn.role for b in blocks] == [m["role"] for m in messages]
        system, user, call, result, answer = blocks
        # role-labelled turns; the tool call with its arguments; the result names the tool it answers
        assert plain(user).splitlines() == ["user  #2", "Compute: 289 + 476"]
        assert plain(call).splitlines() == [
            "assistant  #3",
            "→ calculator  (call_arith-04_r1)",
            "    {",
            '      "expression": "289 + 476"',
            "    }",
        ]
        assert plain(result).splitlines() == ["tool result · calculator (call_arith-04_r1)  #4", "765"]
        assert plain(answer).splitlines()[1] == record.output
        # the system prompt holds the adapter's notes: long, so folded to its first lines
        body = messages[0]["content"].splitlines()
        assert system.long and system.folded
        shown = plain(system).splitlines()
        assert shown[1 : 1 + FOLD_KEEP] == body[:FOLD_KEEP]
        assert shown[-1] == f"… {len(body) - FOLD_KEEP} more lines" and "enter: unfold" in shown[0]
        system.focus()
        await pilot.press("enter")
        assert not system.folded and plain(system).splitlines()[1:] == body

        # search: highlighted, counted, and n jumps to the turn holding the match
        await pilot.press("z")  # fold all long turns again
        assert system.folded
        search = screen.query_one("#transcript-search", Input)
        search.focus()
        await pilot.press(*"skill")
        await pilot.pause()
        wanted = sum("\n".join(line for line, _ in b.body).lower().count("skill") for b in blocks)
        assert wanted > 0
        assert (
            str(screen.query_one("#transcript-matches", Label).content)
            == f"{wanted} {'match' if wanted == 1 else 'matches'} in 1 message"
        )
        assert not system.folded and system.opened_by_search  # unfolded to show the match
        spans = [s for s in system.text().spans if s.style == "black on yellow"]
        assert len(spans) == wanted and all(system.text().plain[s.start : s.end].lower() == "skill" for s in spans)
        await pilot.press("enter")
        assert screen.focused is system
        search.value = ""
        await pilot.pause()
        assert system.folded  # folded again once the search moved on

        # two selectors side by side: the same repeat under none
        panel = screen.query_one(TranscriptPanel)
        panel.choose(left="root", right="none", repeat=2)
        await settle(pilot)
        right = view(screen, "right")
        assert right.display
        assert str(right.query_one(".transcript-title", Static).content).startswith("none · repeat 2 · ")
        none_messages = [
            r
            for r in map(json.loads, (config.run_dir / "eval" / "none" / "transcripts.jsonl").read_text().splitlines())
            if (r["id"], r["repeat"]) == ("arith-04", 2)
        ]
        assert [b.turn.role for b in right.blocks] == [m["role"] for m in none_messages[0]["messages"]]
        assert plain(right.blocks[-1]).splitlines()[1] == store.columns["none"].records[("arith-04", 2)].output
        assert str(left.query_one(".transcript-title", Static).content).startswith("root · repeat 2 · ")
        search.value = "calculator"
        await pilot.pause()
        # both sides: the call (name) and the result (its title) on each
        assert str(screen.query_one("#transcript-matches", Label).content) == "4 matches in 4 messages"


HERMIT_MESSAGES: list[dict[str, object]] = [
    {"role": "system", "content": "You answer arithmetic questions."},
    {"role": "user", "content": "What is 250 + 117?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_250_117", "type": "function", "function": {"name": "add", "arguments": '{"a": 250, "b": 117}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_250_117", "content": '{"sum": 367}'},
    {"role": "assistant", "content": "367"},
]


def hermit_evaluation(tmp_path: Path) -> Path:
    """An evaluation folder as ``hermit eval`` writes it for a react agent: hermit's keys only, no sidecar, and the
    trajectories in react's JSON logs (one missing, one a plain text log)."""
    folder = tmp_path / "runs" / "r" / "eval" / "root"
    logs = tmp_path / ".logs"
    folder.mkdir(parents=True)
    logs.mkdir()
    (logs / "s2-a1.json").write_text(
        json.dumps({"task": "s2", "model": "m", "adapter": "/x/adapter", "messages": HERMIT_MESSAGES}, indent=1)
    )
    (logs / "s2-a3.log").write_text("not json at all\n")
    lines = []
    for repeat, log in ((1, logs / "s2-a1.json"), (2, logs / "gone.json"), (3, logs / "s2-a3.log")):
        lines.append(
            {
                "repeat": repeat,
                "id": "s2",
                "status": "ok",
                "error": None,
                "output": "367",
                "judge": {"score": 1.0, "feedback": "right", "extra": {}},
                "cost_usd": 0.0011,
                "wall_s": 0.3,
                "api_speed": {"output_tokens_per_s": 40.0, "model_calls": 2},
                "tokens": 321,
                "log": str(log),
            }
        )
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (folder / "summary.json").write_text(
        json.dumps(
            {
                "adapter": "root",
                "commit": "c" * 40,
                "tasks": 1,
                "repeats": 3,
                "mean_score": 1.0,
                "solved_once": 1.0,
                "cost_usd": 0.0033,
                "unknown_cost_tasks": 0,
                "errors": 0,
                "wall_s": 1.0,
            },
            indent=1,
        )
    )
    return folder


async def test_a_hermit_written_attempt_reads_its_react_log(tmp_path):
    store = EvalStore({"s2": {"id": "s2", "question": "What is 250 + 117?"}}, ["s2"])
    column = store.add_stored(open_evaluation(hermit_evaluation(tmp_path)))
    assert column.summary is not None
    assert column.summary.written_by_hermit
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_transcript(pilot, app, "s2", "root", 1)
        left = view(screen, "left")
        assert str(left.query_one(".transcript-note", Static).content) == "5 messages · from hermit's log s2-a1.json"
        roles = [b.turn.title for b in left.blocks]
        assert roles == ["system", "user", "assistant", "tool result · add (call_250_117)", "assistant"]
        assert "→ add  (call_250_117)" in plain(left.blocks[2]) and '"a": 250' in plain(left.blocks[2])
        # a log that is gone, and one that is not JSON: one-line notes, no error
        panel = screen.query_one(TranscriptPanel)
        panel.choose(left="root", right="root", repeat=2)
        await settle(pilot)
        gone = str(left.query_one(".transcript-note", Static).content)
        assert gone == f"no transcript: the log {tmp_path / '.logs' / 'gone.json'} is not found"
        assert not left.blocks
        panel.choose(repeat=3)
        await settle(pilot)
        assert (
            str(left.query_one(".transcript-note", Static).content)
            == "no transcript: the log s2-a3.log is not hermit's react JSON (open it as text)"
        )
        assert screen.app.screen is screen and not [n for n in app._notifications if n.severity == "error"]


async def test_an_attempt_without_messages_or_log_is_a_note():
    app = HermitApp(store=fixed_store(), live_updates=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_transcript(pilot, app, "t05", "root", 2)
        left = view(screen, "left")
        assert (
            str(left.query_one(".transcript-note", Static).content)
            == "no transcript: the attempt recorded no messages and no log"
        )
        assert "\n" not in str(left.query_one(".transcript-note", Static).content)


def _snap_store(tmp_path: Path):
    """The fixed store, with trajectories for t01 repeat 1 under none and final (fixed text, no paths shown)."""
    store = fixed_store()
    for label, answer in (("none", "I think it is 41."), ("final", "42")):
        folder = tmp_path / label
        folder.mkdir()
        store.columns[label].folder = folder
        messages = [dict(m) for m in HERMIT_MESSAGES]
        messages[0] = {
            "role": "system",
            "content": "You answer arithmetic questions.\n\n"
            + "\n".join(f"- [arithmetic] hint number {i}" for i in range(1, 19)),
        }
        messages[-1] = {"role": "assistant", "content": answer}
        (folder / "transcripts.jsonl").write_text(json.dumps({"repeat": 1, "id": "t01", "messages": messages}) + "\n")
    return store


def test_snapshot_transcript_side_by_side(snap_compare, tmp_path):
    app = HermitApp(store=_snap_store(tmp_path), live_updates=False)

    async def run_before(pilot) -> None:
        app.push_screen(AttemptScreen("t01", "final", 1))
        await pilot.pause()
        await pilot.pause()
        await pilot.press("x")
        await settle(pilot)
        app.screen.query_one(TranscriptPanel).choose(right="none")
        await settle(pilot)
        app.screen.query_one("#transcript-search", Input).value = "367"
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


async def test_an_evaluation_the_real_hermit_eval_wrote_with_its_react_agent(demo_template, tmp_path):
    """hermit eval (hermit-harness's CLI, its react agent against a loopback model) writes the evaluation; the
    Transcript tab reads each attempt's trajectory from hermit's own react log."""
    import subprocess

    from test_react_agent import HERMIT, Server, react_workspace

    with Server() as server:
        config_path = react_workspace(demo_template, tmp_path / "ws", server.url)
        done = subprocess.run(
            [str(HERMIT), "eval", "--config", str(config_path), "--adapter", "root"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    config = load_config(config_path)
    store = EvalStore(load_tasks(config).tasks, load_tasks(config).test_ids)
    column = store.add_stored(open_evaluation(config.run_dir / "eval" / "root"))
    assert column.summary is not None
    assert column.folder is not None
    assert column.summary.written_by_hermit and not (column.folder / "transcripts.jsonl").exists()
    log = column.records[("s2", 2)].log
    assert log is not None
    logged = json.loads(Path(log).read_text())
    app = HermitApp(store=store, live_updates=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_transcript(pilot, app, "s2", "root", 2)
        left = view(screen, "left")
        assert (
            str(left.query_one(".transcript-note", Static).content)
            == f"5 messages · from hermit's log {Path(log).name}"
        )
        assert [b.turn.role for b in left.blocks] == [m["role"] for m in logged["messages"]]
        assert plain(left.blocks[2]).splitlines()[1] == "→ add  (call_250_117)"
        assert plain(left.blocks[3]).splitlines() == [
            "tool result · add (call_250_117)  #4",
            '{"sum": 367, "task": "s2"}',
        ]
        assert plain(left.blocks[4]).splitlines()[1] == "367"
