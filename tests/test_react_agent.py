"""hermit-harness's built-in ``react`` agent, end to end, against an OpenAI-compatible server on 127.0.0.1.

No mock of hermit: hermit's own react agent, chat client and ``@tool`` loader run (hermit-harness is in the test
extra). The server answers /v1/chat/completions deterministically from what it is sent (with tool calls and
``usage``), never with a retriable failure (hermit's client waits 2 s and more before a retry). The workspace is a
copy of the demo (its adapter tree gives ``root``) with a react config, a tool module and a price.

Designed behaviour of the "model", by the number of ``[arithmetic]`` hints in the system prompt (the adapter's
ADAPTER.md): with none it answers sums from memory (odd sums come out one too high); with hints it calls the task's
``add`` tool and answers with the tool's result; with three hints it refuses one task (HTTP 400, not retried: a
pipeline error). A product question makes it call a tool that does not exist (hermit answers with an error text).
The judge has no reference for one task (a judge error).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import hermit.agents.react  # noqa: F401 - hermit-harness is in the test extra: never skipped for lack of it
import pytest

from hermit_tui.core.records.results import read_results
from hermit_tui.core.records.transcripts import TRANSCRIPTS, Transcript, load_transcript, read_sidecar, turns_of
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

HERMIT = Path(sys.executable).with_name("hermit")
PRICE = {"input": 2.0, "cached_input": 0.5, "output": 8.0}  # USD per million tokens
MODEL = "loopback-1"
SELECTORS = ["none", "root", "careful"]
REPEATS = 2
HERMIT_SUMMARY_KEYS = (
    "adapter",
    "commit",
    "tasks",
    "repeats",
    "mean_score",
    "solved_once",
    "cost_usd",
    "unknown_cost_tasks",
    "errors",
)
# id -> question; the judge's references live in the judge file, not here
TASKS = {
    "s1": "What is 12 + 30?",  # even sum: right from memory too
    "s2": "What is 250 + 117?",  # odd sum: wrong from memory
    "s3": "What is 9 + 8?",  # odd
    "s4": "What is 1000 + 2?",  # even
    "s5": "What is 77 + 23?",  # the judge has no reference: judge_error
    "m1": "Multiply 6 by 7.",  # the model calls a tool that does not exist
    "p1": "What is 5 + 6? (policy)",  # refused (HTTP 400) when the system prompt holds three hints
}
ANSWERS = {"s1": 42, "s2": 367, "s3": 17, "s4": 1002, "m1": 42, "p1": 11}


def sidecar(folder: Path, task_id: str, repeat: int) -> Transcript:
    """The transcript kept for one attempt, which the test expects to be there."""
    found = read_sidecar(folder, task_id, repeat)
    assert found is not None, (task_id, repeat)
    return found


def messages(transcript: Transcript) -> list[Any]:
    assert transcript.messages is not None, transcript.note
    return transcript.messages


# -- the model ---------------------------------------------------------------------------------------------------
def skill(system: str) -> int:
    return system.count("[arithmetic]")


def usage_of(messages: list[dict], reply: str) -> dict:
    prompt = 10 * len(messages) + sum(len(str(m.get("content") or "")) for m in messages) // 4
    cached = (10 * 2 + sum(len(str(m.get("content") or "")) for m in messages[:2]) // 4) if len(messages) > 2 else 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": 3 + len(reply) // 2,
        "prompt_tokens_details": {"cached_tokens": cached},
        "total_tokens": prompt + 3 + len(reply) // 2,
    }


def reply_to(body: dict) -> tuple[int, dict]:
    """(HTTP status, JSON body) for one chat/completions request: a pure function of the request."""
    messages = body["messages"]
    system, question, last = messages[0]["content"], messages[1]["content"], messages[-1]
    level = skill(system)
    numbers = [int(n) for n in re.findall(r"\d+", question)]
    if last["role"] == "user":
        if "(policy)" in question and level >= 3:
            return 400, {"error": {"message": "the request was refused by the content policy", "type": "policy"}}
        if question.startswith("Multiply"):
            call = {"name": "multiply", "arguments": json.dumps({"a": numbers[0], "b": numbers[1]})}
        elif level >= 2:
            call = {"name": "add", "arguments": json.dumps({"a": numbers[0], "b": numbers[1]})}
        else:
            total = sum(numbers)
            answer = str(total if total % 2 == 0 else total + 1)
            return 200, completion(answer, None, usage_of(messages, answer))
        call_id = f"call_{numbers[0]}_{numbers[1]}"
        tool_calls = [{"id": call_id, "type": "function", "function": call}]
        return 200, completion(None, tool_calls, usage_of(messages, call["arguments"]))
    result = last["content"]
    try:
        answer = str(json.loads(result)["sum"])
    except (ValueError, KeyError, TypeError):
        answer = "I could not compute it: " + result
    return 200, completion(answer, None, usage_of(messages, answer))


def completion(content, tool_calls, usage) -> dict:
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": usage,
    }


class Server:
    """A threading HTTP server on 127.0.0.1, port chosen by the OS; it records every request it answers."""

    def __init__(self):
        self.requests: list[tuple[dict, int, dict]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = (
                    reply_to(body)
                    if self.path == "/v1/chat/completions"
                    else (404, {"error": {"message": f"no route {self.path}"}})
                )
                with owner.lock:
                    owner.requests.append((body, status, payload))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# -- the workspace -----------------------------------------------------------------------------------------------
TOOLS = """\
from hermit.agents.tools import tool


@tool("Add two whole numbers.", {"type": "object", "properties": {"a": {"type": "integer"},
                                                                  "b": {"type": "integer"}},
                                 "required": ["a", "b"]})
def add(a: int, b: int, _task: dict) -> dict:
    return {"sum": a + b, "task": _task["id"]}
"""

JUDGE = f"""\
ANSWERS = {json.dumps(ANSWERS)}


def score(task, output):
    expected = ANSWERS[task["id"]]  # no reference: KeyError, a judge error
    got = str(output.output).strip()
    return {{"score": 1.0 if got == str(expected) else 0.0, "feedback": f"expected {{expected}}, got {{got}}",
             "expected": expected}}
"""

CAREFUL = """\
# Notes for the solver

- [arithmetic] Always call the add tool for a sum.
- [arithmetic] Answer with the tool's result only.
- [arithmetic] Never answer a sum from memory.
"""


def react_workspace(template: Path, dest: Path, url: str) -> Path:
    """A copy of the demo workspace with a react config; returns that config."""
    shutil.copytree(template, dest, symlinks=True)
    (dest / "react_tasks.jsonl").write_text(
        "".join(json.dumps({"id": tid, "question": q}) + "\n" for tid, q in TASKS.items())
    )
    (dest / "react_test.txt").write_text("\n".join(TASKS) + "\n")
    (dest / "react_train.txt").write_text("")
    (dest / "react_tools.py").write_text(TOOLS)
    (dest / "react_judge.py").write_text(JUDGE)
    (dest / "react_prompt.md").write_text("You answer arithmetic questions.\n\n{context}\n")
    careful = dest / "adapters" / "careful"
    shutil.copytree(dest / "template", careful)
    (careful / "ADAPTER.md").write_text(CAREFUL)
    config = dest / "react.yaml"
    config.write_text(
        textwrap.dedent(f"""\
        data:
          tasks: react_tasks.jsonl
          train: react_train.txt
          test: react_test.txt
        agent:
          name: react
          concurrency: 3
          params:
            model: {{base_url: "{url}", model: {MODEL}, price: {json.dumps(PRICE)}}}
            prompt: react_prompt.md
            tools: react_tools.py
            max_turns: 4
        judge: {{path: react_judge.py, name: score}}
        template: template
        evolver: {{name: claude}}
        sandbox: {{enabled: false}}
        trainer: {{run_name: demo, output_dir: runs}}
        eval: {{repeats: {REPEATS}}}
        """)
    )
    return config


@pytest.fixture(scope="module")
def server():
    with Server() as s:
        yield s


@pytest.fixture(scope="module")
def ours(demo_template, tmp_path_factory, server):
    """hermit-tui's evaluation of none, root and the careful adapter directory, side by side."""
    config_path = react_workspace(demo_template, tmp_path_factory.mktemp("react") / "ws", server.url)
    config = load_config(config_path)
    summaries = EvalRun(config, ["none", "root", "adapters/careful"], update_card=False).run_sync()
    return config, summaries


def by_key(path: Path) -> dict[tuple[str, int], dict]:
    return {(r["id"], r["repeat"]): r for r in map(json.loads, path.read_text().splitlines())}


def price(usage: dict) -> float:
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    return (
        (usage["prompt_tokens"] - cached) * PRICE["input"]
        + cached * PRICE["cached_input"]
        + usage["completion_tokens"] * PRICE["output"]
    ) / 1e6


# -- the tests ---------------------------------------------------------------------------------------------------
def test_react_agent_end_to_end_against_a_loopback_server(ours, server):
    config, summaries = ours
    assert list(summaries) == SELECTORS
    # what each (skill, question) cost, from the usage the server reported (each repeat sends the same requests)
    spent: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for body, status, payload in server.requests:
        if status == 200:
            spent[(skill(body["messages"][0]["content"]), body["messages"][1]["content"])].append(payload["usage"])
    levels = {"none": 0, "root": 2, "careful": 3}  # [arithmetic] hints in no adapter, root's and careful's notes
    for label, level in levels.items():
        records = by_key(config.run_dir / "eval" / label / "results.jsonl")
        assert set(records) == {(t, r) for t in TASKS for r in range(1, REPEATS + 1)}
        for (tid, _), rec in records.items():
            question = TASKS[tid]
            if tid == "p1" and level >= 3:
                assert rec["status"] == "error" and rec["cost_usd"] is None and rec["tokens"] is None
                assert rec["error"].startswith("RuntimeError: chat/completions HTTP 400")
                continue
            usages = spent[(level, question)]
            calls = len(usages) // REPEATS
            assert rec["api_speed"]["model_calls"] == calls
            assert rec["tokens"] == sum(u["prompt_tokens"] + u["completion_tokens"] for u in usages) // REPEATS
            assert rec["cost_usd"] == pytest.approx(sum(price(u) for u in usages) / REPEATS, rel=1e-9)
            if tid == "s5":
                assert rec["status"] == "judge_error" and rec["error"] == "KeyError: 's5'"
                continue
            assert rec["status"] == "ok"
            total = sum(int(n) for n in re.findall(r"\d+", question))
            if tid == "m1":
                assert calls == 2 and rec["output"] == "I could not compute it: Error: unknown tool multiply"
            elif level >= 2:
                assert calls == 2 and rec["output"] == str(total)  # through the add tool
            else:
                assert calls == 1 and rec["output"] == str(total + total % 2)  # from memory
            assert rec["judge"]["score"] == (1.0 if rec["output"] == str(ANSWERS[tid]) else 0.0)
        # the summary, recomputed from the records
        summary = json.loads((config.run_dir / "eval" / label / "summary.json").read_text())
        scores = [r["judge"]["score"] for r in records.values()]
        assert summary["mean_score"] == pytest.approx(sum(scores) / len(scores))
        unknown = sum(r["cost_usd"] is None for r in records.values())
        assert summary["unknown_cost_tasks"] == unknown
        assert summary["cost_usd"] == (None if unknown else pytest.approx(sum(r["cost_usd"] for r in records.values())))
        assert summary["errors"] == sum(r["status"] != "ok" for r in records.values())
    assert summaries["none"].mean_score < summaries["root"].mean_score
    assert summaries["careful"].errors == REPEATS + REPEATS  # p1 refused, s5's judge error


def test_react_trajectories_are_kept_beside_hermits_files(ours):
    config, _ = ours
    folder = config.run_dir / "eval" / "root"
    results = read_results(folder / "results.jsonl").records
    assert all("messages" not in json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines())
    assert (folder / TRANSCRIPTS).is_file()
    for rec in results:
        kept = read_sidecar(folder, rec.id, rec.repeat)
        assert rec.log is not None
        logged = json.loads(Path(rec.log).read_text())  # hermit's react log: {task, model, adapter, messages}
        assert logged["task"] == rec.id and logged["model"] == MODEL
        assert kept is not None
        assert kept.messages == logged["messages"]
    turns = turns_of(sidecar(folder, "s2", 1).messages)
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool", "assistant"]
    call = turns[2].calls[0]
    assert (call.name, json.loads(call.arguments)) == ("add", {"a": 250, "b": 117})
    assert turns[3].tool == "add" and json.loads(turns[3].text) == {"sum": 367, "task": "s2"}
    assert turns[4].text == "367"
    # an attempt refused by the server has no trajectory and no log: a note, not an error
    refused = next(
        r for r in read_results(config.run_dir / "eval" / "careful" / "results.jsonl").records if r.id == "p1"
    )
    shown = load_transcript(config.run_dir / "eval" / "careful", refused)
    assert shown.messages is None and shown.note.startswith("no transcript")


def test_react_through_worker_processes_keeps_the_same_records_and_trajectories(ours, demo_template, tmp_path, server):
    """The process executor sends the trajectory back through a pipe (pickled): same records, same transcripts."""
    config_path = react_workspace(demo_template, tmp_path / "ws", server.url)
    config = load_config(config_path)
    EvalRun(config, ["root"], executor="processes", concurrency=2).run_sync()
    theirs = ours[0].run_dir / "eval" / "root"
    mine = config.run_dir / "eval" / "root"
    a, b = by_key(theirs / "results.jsonl"), by_key(mine / "results.jsonl")
    assert a.keys() == b.keys()
    for key in a:
        for field in ("status", "error", "output", "judge", "cost_usd", "tokens"):
            assert a[key][field] == b[key][field], (key, field)
        assert sidecar(theirs, *key).messages == sidecar(mine, *key).messages


def test_hermit_eval_writes_the_same_records_and_summaries(ours, demo_template, tmp_path, server):
    """The same config through the real ``hermit eval`` CLI (from this test environment), field by field."""
    assert HERMIT.is_file(), f"hermit-harness's CLI is not beside {sys.executable}"
    config_path = react_workspace(demo_template, tmp_path / "ws", server.url)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    for selector in ("none", "root", "adapters/careful"):
        done = subprocess.run(
            [str(HERMIT), "eval", "--config", str(config_path), "--adapter", selector],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    config, summaries = ours
    hermit_eval = config_path.parent / "runs" / "demo" / "eval"
    for label in SELECTORS:
        theirs = json.loads((hermit_eval / label / "summary.json").read_text())
        mine = json.loads(summaries[label].to_json())
        assert set(theirs) == set(HERMIT_SUMMARY_KEYS) | {"wall_s"}  # hermit's own file, untouched by us
        for key in HERMIT_SUMMARY_KEYS:
            assert mine[key] == (pytest.approx(theirs[key]) if isinstance(theirs[key], float) else theirs[key]), (
                label,
                key,
            )
        a = by_key(hermit_eval / label / "results.jsonl")
        b = by_key(config.run_dir / "eval" / label / "results.jsonl")
        assert a.keys() == b.keys()
        for attempt in a:
            for field in ("status", "error", "output", "judge", "cost_usd", "tokens"):
                assert a[attempt][field] == b[attempt][field], (label, attempt, field)
            # api_speed: the model calls match; the tokens-per-second rate is a measured time, never equal
            if a[attempt]["api_speed"] is None:
                assert b[attempt]["api_speed"] is None
            else:
                assert a[attempt]["api_speed"]["model_calls"] == b[attempt]["api_speed"]["model_calls"]
                assert set(a[attempt]["api_speed"]) == set(b[attempt]["api_speed"])
            assert (a[attempt]["log"] is None) == (b[attempt]["log"] is None)
            if a[attempt]["log"]:  # both logs hold the same trajectory
                assert (
                    json.loads(Path(a[attempt]["log"]).read_text())["messages"]
                    == json.loads(Path(b[attempt]["log"]).read_text())["messages"]
                )
        # hermit-tui reads hermit's evaluation's trajectories from its react logs (there is no sidecar)
        assert not (hermit_eval / label / TRANSCRIPTS).exists()
        for rec in read_results(hermit_eval / label / "results.jsonl").records:
            shown = load_transcript(hermit_eval / label, rec)
            assert (shown.source == "log") == (rec.log is not None)


def test_show_reads_a_hermit_written_trajectory_from_its_react_log(ours, demo_template, tmp_path, server, capsys):
    from hermit_tui.cli import main

    config_path = react_workspace(demo_template, tmp_path / "ws", server.url)
    done = subprocess.run(
        [str(HERMIT), "eval", "--config", str(config_path), "--adapter", "root"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(["show", "--config", str(config_path), "--adapter", "root", "--task", "s2", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["written_by"] == "hermit" and [a["repeat"] for a in shown["attempts"]] == [1, 2]
    for a in shown["attempts"]:
        assert a["transcript"]["source"] == "log" and a["transcript"]["path"] == a["log"]
        assert a["transcript"]["messages"] == json.loads(Path(a["log"]).read_text())["messages"]
        assert a["cost"] == f"${a['cost_usd']:.4f}" and a["api_speed"]["model_calls"] == 2
    assert main(["show", "--config", str(config_path), "--adapter", "root", "--task", "s2", "--repeat", "2"]) == 0
    text = capsys.readouterr().out
    assert "Transcript  5 messages, from the log " in text
    assert "→ calls add (call_250_117)" in text and "tool result · add (call_250_117)" in text
