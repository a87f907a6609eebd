"""Transcripts: the sidecar beside hermit's files (written, archived, compacted, resumed, sent across processes),
hermit's react logs read as transcripts, and trajectories read as turns."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hermit_tui.core.records.results import AttemptRecord, Judged, read_results
from hermit_tui.core.records.transcripts import (
    LOG_LIMIT_BYTES,
    TRANSCRIPTS,
    Transcript,
    TranscriptIndex,
    jsonable,
    load_transcript,
    read_hermit_log,
    read_sidecar,
    transcript_lines,
    turns_of,
)
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0.01"]


def sidecar(folder: Path, task_id: str, repeat: int) -> Transcript:
    """The transcript kept for one attempt, which the test expects to be there."""
    found = read_sidecar(folder, task_id, repeat)
    assert found is not None, (task_id, repeat)
    return found


def messages(transcript: Transcript) -> list[Any]:
    assert transcript.messages is not None, transcript.note
    return transcript.messages


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- a pipeline of our own: messages of every kind ---------------------------------------------------------------
PIPELINE = """
import threading
from hermit_tui.core.context import current_repeat


class Opaque:                      # neither JSON nor picklable (holds a lock)
    def __init__(self):
        self.lock = threading.Lock()

    def __str__(self):
        return "<opaque thing>"


def run(task, adapter):
    tid = task["id"]
    if tid == "quiet":             # returns no trajectory at all
        return {"output": "q", "cost_usd": 0.5}
    if tid == "boom":
        raise ValueError("no trajectory for a failed pipeline")
    messages = [{"role": "user", "content": task["q"]},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "look", "arguments": '{"k": 1}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": Opaque()},
                {"role": "assistant", "content": f"answer {tid} r{current_repeat()}"}]
    return {"output": f"answer {tid}", "cost_usd": 0.25, "messages": messages}
"""


def workspace(tmp_path: Path, ids=("a", "b", "quiet", "boom")) -> Path:
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i, "q": f"question {i}"}) + "\n" for i in ids))
    (tmp_path / "test.txt").write_text("\n".join(ids) + "\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(PIPELINE)
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return 1.0\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 2}\njudge: {path: judge.py}\n"
        "trainer: {run_name: t, tree_dir: tree}\neval: {repeats: 2}\n"
    )
    return tmp_path / "run.yaml"


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_the_sidecar_holds_each_trajectory_and_results_stay_hermits(tmp_path, executor):
    config = load_config(workspace(tmp_path))
    EvalRun(config, ["none"], executor=executor).run_sync()
    folder = config.run_dir / "eval" / "none"
    results = lines(folder / "results.jsonl")
    assert len(results) == 8 and all("messages" not in r for r in results)
    assert "messages" not in json.loads((folder / "summary.json").read_text())
    kept = lines(folder / TRANSCRIPTS)
    # one line per attempt that returned messages (not "quiet", not the failed "boom")
    assert sorted((r["id"], r["repeat"]) for r in kept) == [(t, r) for t in ("a", "b") for r in (1, 2)]
    line = next(r for r in kept if (r["id"], r["repeat"]) == ("b", 2))
    assert list(line) == ["repeat", "id", "messages"]
    # the unpicklable object crossed the process boundary as its text
    assert line["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "<opaque thing>"}
    assert line["messages"][3]["content"] == "answer b r2"
    assert sidecar(folder, "b", 2).messages == line["messages"]
    assert read_sidecar(folder, "quiet", 1) is None


def test_the_dashboard_never_holds_trajectories(tmp_path):
    config = load_config(workspace(tmp_path))
    seen: list[ev.Event] = []
    EvalRun(config, ["none"], on_event=seen.append).run_sync()
    finished = [e for e in seen if isinstance(e, ev.AttemptFinished)]
    assert len(finished) == 8 and all(e.record._messages is None for e in finished)
    started = next(e for e in seen if isinstance(e, ev.SelectorStarted))
    assert started.folder == str(config.run_dir / "eval" / "none")


def test_archived_with_its_evaluation(tmp_path):
    config = load_config(workspace(tmp_path))
    EvalRun(config, ["none"]).run_sync()
    folder = config.run_dir / "eval" / "none"
    first = (folder / TRANSCRIPTS).read_bytes()
    EvalRun(config, ["none"], repeats=1).run_sync()
    (archived,) = (folder / "archive").iterdir()
    assert (archived / TRANSCRIPTS).read_bytes() == first
    assert len(lines(archived / "results.jsonl")) == 8
    assert len(lines(folder / TRANSCRIPTS)) == 2  # the new evaluation's own


def test_resume_after_a_crash_compacts_the_sidecar_like_the_results(tmp_path):
    path = workspace(tmp_path, ids=tuple(f"t{i}" for i in range(8)))
    config = load_config(path)
    run = EvalRun(config, ["none"], concurrency=1)
    done = []

    def stop_after_five(event):
        if isinstance(event, ev.AttemptFinished):
            done.append(event.record.key)
            if len(done) == 5:
                run.cancel()

    run.on_event = stop_after_five
    run.run_sync()
    folder = config.run_dir / "eval" / "none"
    # the cancel came with the 5th record; the attempt its thread had started by then finishes and is kept
    recorded = [(r["id"], r["repeat"]) for r in lines(folder / "results.jsonl")]
    assert recorded == done and len(done) in (5, 6)
    order = [(f"t{i}", r) for r in (1, 2) for i in range(8)]  # concurrency 1: the task order, repeat by repeat
    assert recorded == order[: len(done)]
    (stale, _), (cut, _) = order[len(done)], order[len(done) + 1]
    # a crash: the transcript of the next attempt was written, its results line never was, and the one after was cut
    with open(folder / TRANSCRIPTS, "a") as fh:
        fh.write(json.dumps({"repeat": 1, "id": stale, "messages": [{"role": "user", "content": "stale"}]}) + "\n")
        fh.write('{"repeat": 1, "id": "' + cut + '", "messages": [{"role": "us')
    assert TranscriptIndex.build(folder / TRANSCRIPTS).skipped == 1
    started = []
    resumed = EvalRun(
        config,
        ["none"],
        resume=True,
        on_event=lambda e: started.append((e.task_id, e.repeat)) if isinstance(e, ev.AttemptStarted) else None,
    )
    resumed.run_sync()
    assert not set(started) & set(done) and len(started) == 16 - len(done)  # nothing run twice
    results = lines(folder / "results.jsonl")
    kept = lines(folder / TRANSCRIPTS)
    # one line per attempt, in results.jsonl's order, the stale and the cut lines gone
    assert [(r["id"], r["repeat"]) for r in kept] == [(r["id"], r["repeat"]) for r in results]
    assert Counter((r["id"], r["repeat"]) for r in kept).most_common(1)[0][1] == 1
    redone = next(r for r in kept if (r["id"], r["repeat"]) == (stale, 1))
    assert redone["messages"][-1]["content"] == f"answer {stale} r1"


def test_a_retry_without_messages_hides_the_earlier_trajectory(tmp_path):
    path = workspace(tmp_path, ids=("a", "b"))
    config = load_config(path)
    EvalRun(config, ["none"]).run_sync()
    folder = config.run_dir / "eval" / "none"
    assert read_sidecar(folder, "a", 1) is not None
    # the pipeline changes: "a" now returns no messages; re-running that one attempt must not show the old ones
    (tmp_path / "pipe.py").write_text(PIPELINE.replace('if tid == "quiet":', 'if tid in ("quiet", "a"):'))
    EvalRun(load_config(path), [], retry={"none": [("a", 1)]}).run_sync()
    assert read_sidecar(folder, "a", 1) is None
    assert read_sidecar(folder, "a", 2) is not None and read_sidecar(folder, "b", 1) is not None
    # compacted in results.jsonl's order (repeat by repeat, task by task), the null line gone
    assert [(r["id"], r["repeat"]) for r in lines(folder / TRANSCRIPTS)] == [("b", 1), ("a", 2), ("b", 2)]
    archived = next((folder / "archive").iterdir())
    assert len(lines(archived / TRANSCRIPTS)) == 4  # the retried evaluation's copy keeps the earlier ones


def test_a_failed_transcript_write_stops_the_run_with_whole_lines(tmp_path, monkeypatch):
    import errno

    from hermit_tui.core.errors import RunFailed
    from hermit_tui.core.records import transcripts as mod

    config = load_config(workspace(tmp_path, ids=("a", "b", "c")))
    real = mod.TranscriptLog.write
    count = {"n": 0}

    def filling_up(self, record_id, repeat, messages):
        count["n"] += 1
        if count["n"] == 3:
            self._lines.fh.write(b'{"repeat": 1, "id": "half')  # half a line, then the disk is full
            raise_it = OSError(errno.ENOSPC, "No space left on device")
            self.rollback()
            raise raise_it
        return real(self, record_id, repeat, messages)

    monkeypatch.setattr(mod.TranscriptLog, "write", filling_up)
    with pytest.raises(RunFailed, match="No space left"):
        EvalRun(config, ["none"], concurrency=1).run_sync()
    folder = config.run_dir / "eval" / "none"
    assert (folder / TRANSCRIPTS).read_text().endswith("\n") and len(lines(folder / TRANSCRIPTS)) == 2
    assert len(lines(folder / "results.jsonl")) == 2


# -- hermit's react log ------------------------------------------------------------------------------------------
def record(log: str | None, tid: str = "t1", repeat: int = 1) -> AttemptRecord:
    return AttemptRecord(repeat=repeat, id=tid, status="ok", judge=Judged(score=1.0), log=log)


def test_hermits_react_log_is_read_as_the_transcript(tmp_path):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    log = tmp_path / "t1-abc.json"
    log.write_text(json.dumps({"task": "t1", "model": "m", "adapter": None, "messages": messages}, indent=1))
    shown = load_transcript(tmp_path / "no-such-eval", record(str(log)))
    assert (shown.messages, shown.source, shown.path, shown.note) == (messages, "log", str(log), "")


@pytest.mark.parametrize(
    "content, note",
    [
        (None, "no transcript: the log {log} is not found"),
        ("plain text log\n", "no transcript: the log x.log is not hermit's react JSON (open it as text)"),
        ('{"output": 1}', "no transcript: the log x.log is JSON but not hermit's react log (no task and messages)"),
        (
            '{"task": "t", "messages": "not a list"}',
            "no transcript: the log x.log is JSON but not hermit's react log (no task and messages)",
        ),
    ],
)
def test_a_log_that_is_not_a_transcript_is_a_one_line_note(tmp_path, content, note):
    log = tmp_path / "x.log"
    if content is not None:
        log.write_text(content)
    shown = read_hermit_log(str(log))
    assert shown.messages is None and shown.note == note.format(log=log) and "\n" not in shown.note


def test_no_log_a_folder_and_a_huge_log_are_notes_too(tmp_path, monkeypatch):
    assert read_hermit_log(None).note == "no transcript: the attempt recorded no messages and no log"
    assert read_hermit_log(str(tmp_path)).note == f"no transcript: the log {tmp_path} is not a file"
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"task": "t", "messages": [{"role": "user", "content": "x" * 3000}]}))
    from hermit_tui.core.records import transcripts as mod

    monkeypatch.setattr(mod, "LOG_LIMIT_BYTES", 2000)
    assert "too large" in read_hermit_log(str(big)).note
    assert LOG_LIMIT_BYTES >= 10_000_000


def test_the_sidecar_comes_before_the_log(tmp_path):
    folder = tmp_path / "eval" / "none"
    folder.mkdir(parents=True)
    (folder / TRANSCRIPTS).write_text(
        json.dumps({"repeat": 2, "id": "t1", "messages": [{"role": "user", "content": "kept"}]}) + "\n"
    )
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"task": "t1", "messages": [{"role": "user", "content": "logged"}]}))
    assert messages(load_transcript(folder, record(str(log), repeat=2)))[0]["content"] == "kept"
    assert messages(load_transcript(folder, record(str(log), repeat=1)))[0]["content"] == "logged"


# -- turns -------------------------------------------------------------------------------------------------------
def test_openai_messages_as_turns():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "look at"}, {"type": "image_url", "image_url": {}}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "cats", "n": 2}'}},
                {"id": "c2", "type": "function", "function": {"name": "noargs", "arguments": ""}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '["a", "b"]'},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: unknown tool noargs"},
        {"role": "assistant", "content": "done", "function_call": {"name": "legacy", "arguments": "not json"}},
        "a bare string",
    ]
    turns = turns_of(messages)
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool", "tool", "assistant", "?"]
    assert turns[1].text == "look at\n[image]"
    assert [(c.id, c.name, c.arguments) for c in turns[2].calls] == [
        ("c1", "search", '{\n  "q": "cats",\n  "n": 2\n}'),
        ("c2", "noargs", ""),
    ]
    assert (turns[3].tool, turns[3].call_id, turns[3].title) == ("search", "c1", "tool result · search (c1)")
    assert turns[4].tool == "noargs"
    assert turns[5].calls[0].name == "legacy" and turns[5].calls[0].arguments == "not json"
    assert turns[6].text == "a bare string"
    text = "\n".join(transcript_lines(turns))
    assert '[3] assistant\n  → calls search (c1)\n      {\n        "q": "cats",' in text
    assert '[4] tool result · search (c1)\n  ["a", "b"]' in text


def test_anthropic_blocks_as_turns():
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "let me"},
                {"type": "tool_use", "id": "tu1", "name": "calc", "input": {"x": 1}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": "2"}]}],
        },
    ]
    first, second = turns_of(messages)
    assert first.text == "(thinking) hmm\nlet me" and first.calls[0].name == "calc"
    assert first.calls[0].arguments == '{\n  "x": 1\n}'
    assert (second.call_id, second.tool, second.text, second.title) == ("tu1", "calc", "2", "tool result · calc (tu1)")


def test_jsonable_keeps_sdk_objects_as_their_fields():
    from pydantic import BaseModel

    class Msg(BaseModel):
        role: str
        content: str

    lock = threading.Lock()
    kept = jsonable([Msg(role="user", content="x"), {"role": "tool", "content": lock}, ("a", 1)])
    assert kept is not None
    assert kept[0] == {"role": "user", "content": "x"}
    assert kept[1]["content"].startswith("<unlocked _thread.lock")
    assert kept[2] == ["a", 1]
    assert jsonable(None) is None and jsonable({"role": "user"}) == [{"role": "user"}]
    loop: list = []
    loop.append(loop)
    looped = jsonable(loop)
    assert looped is not None and looped[0]["role"] == "note"


def test_read_results_is_unchanged_by_a_sidecar(tmp_path):
    config = load_config(workspace(tmp_path))
    EvalRun(config, ["none"]).run_sync()
    read = read_results(config.run_dir / "eval" / "none" / "results.jsonl")
    assert len(read.records) == 8 and not read.skipped
    assert all(set(r.model_extra or {}) <= {"traceback"} for r in read.records)


def test_the_index_reads_only_what_a_live_run_appended(tmp_path, monkeypatch):
    from hermit_tui.core.records import transcripts as mod

    folder = tmp_path / "eval" / "none"
    folder.mkdir(parents=True)
    path = folder / TRANSCRIPTS

    def line(tid: str, text: str) -> str:
        return json.dumps({"repeat": 1, "id": tid, "messages": [{"role": "user", "content": text}]}) + "\n"

    path.write_text(line("a", "first") + line("b", "second")[:20])  # b is being written
    assert messages(sidecar(folder, "a", 1))[0]["content"] == "first"
    assert read_sidecar(folder, "b", 1) is None
    index = mod._index_of(path)
    assert (index.end, index.partial, index.skipped) == (len(line("a", "first")), True, 1)
    read_from: list[int] = []
    real_extend = mod.TranscriptIndex.extend

    def extend(self, p):
        read_from.append(self.end)
        return real_extend(self, p)

    monkeypatch.setattr(mod.TranscriptIndex, "extend", extend)
    with open(path, "a") as fh:
        fh.write(line("b", "second")[20:] + line("a", "again"))
    assert messages(sidecar(folder, "b", 1))[0]["content"] == "second"
    assert messages(sidecar(folder, "a", 1))[0]["content"] == "again"  # a later line replaces an earlier one
    assert read_from == [len(line("a", "first"))]  # only the new part was read
    assert mod._index_of(path).skipped == 0
    # a compaction replaces the file: read again from the start
    from hermit_tui.core.records.transcripts import compact_transcripts

    compact_transcripts(folder, [("b", 1), ("a", 1)])
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == ["b", "a"]
    assert messages(sidecar(folder, "a", 1))[0]["content"] == "again"
    assert read_from[-1] == 0
