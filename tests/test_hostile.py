"""Hostile pipelines, judges, results files and output streams (issue 12): every case runs under a time limit and
checks that the workspace's files outside the evaluation it writes are exactly as before.

The corpus of bad inputs given on the command line is tests/test_bad_input.py; the property-based part is
tests/test_hostile_properties.py.
"""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hostile_util import snapshot, time_limit

from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.core.records.results import read_results
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.files import read_bytes

LIMIT_S = 90  # per case: a hang fails the case instead of the whole suite


@pytest.fixture(autouse=True)
def limited():
    """Every case of this file runs under a time limit (subprocesses also under their own timeout)."""
    with time_limit(LIMIT_S * 2, "the case"):
        yield


def lines_of(path: Path) -> list[dict]:
    """Strict JSON (no NaN or Infinity): what any reader of hermit's files can parse."""

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines() if line.strip()]


def workspace(
    tmp_path: Path,
    ids: list[str],
    pipeline: str,
    judge: str = "def score(task, output):\n    return 1.0\n",
    *,
    timeout_min: float | None = None,
    concurrency: int = 2,
) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tasks.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    (ws / "test.txt").write_text("".join(i + "\n" for i in ids))
    (ws / "train.txt").write_text("")
    (ws / "pipe.py").write_text(textwrap.dedent(pipeline))
    (ws / "judge.py").write_text(textwrap.dedent(judge))
    timeout = "" if timeout_min is None else f", timeout_min: {timeout_min}"
    (ws / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        f"agent: {{name: pipe.py:run, concurrency: {concurrency}{timeout}}}\njudge: {{path: judge.py}}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    return ws / "run.yaml"


def results(ws: Path, label: str = "none") -> dict[str, dict]:
    return {r["id"]: r for r in lines_of(ws / "runs/t/eval" / label / "results.jsonl")}


# -- class 2: return values that cannot be written --------------------------------------------------------------------
# (name, the pipeline's return for task "bad", the judge's return for task "bad", status, what the error names)
OK_OUT = "{'output': 'fine', 'cost_usd': 0.01}"
RETURNS = [
    ("output an arbitrary object", "{'output': Opaque()}", "1.0", "error", "output"),
    ("output NaN", "{'output': float('nan')}", "1.0", "error", "output"),
    ("output holding infinity", "{'output': [1, float('inf')]}", "1.0", "error", "output"),
    ("output a set", "{'output': {1, 2}}", "1.0", "error", "output"),
    ("output bytes that are not text", "{'output': b'\\xff\\xfe'}", "1.0", "error", "output"),
    ("output that contains itself", "loop()", "1.0", "error", "output"),
    ("output with tuple keys", "{'output': {(1, 2): 'x'}}", "1.0", "error", "output"),
    ("cost NaN", "{'output': 'x', 'cost_usd': float('nan')}", "1.0", "error", "cost_usd"),
    ("cost infinite", "{'output': 'x', 'cost_usd': float('inf')}", "1.0", "error", "cost_usd"),
    ("cost negative infinity", "{'output': 'x', 'cost_usd': -float('inf')}", "1.0", "error", "cost_usd"),
    ("cost a word", "{'output': 'x', 'cost_usd': 'cheap'}", "1.0", "error", "cost_usd"),
    ("cost a boolean", "{'output': 'x', 'cost_usd': True}", "1.0", "error", "cost_usd"),
    ("wall time a word", "{'output': 'x', 'wall_s': 'slow'}", "1.0", "error", "wall_s"),
    ("wall time NaN", "{'output': 'x', 'wall_s': float('nan')}", "1.0", "error", "wall_s"),
    ("wall time a list", "{'output': 'x', 'wall_s': [1]}", "1.0", "error", "wall_s"),
    ("tokens an object", "{'output': 'x', 'tokens': Opaque()}", "1.0", "error", "tokens"),
    ("api_speed holding NaN", "{'output': 'x', 'api_speed': {'tps': float('nan')}}", "1.0", "error", "api_speed"),
    ("log an object", "{'output': 'x', 'log': Opaque()}", "1.0", "error", "log"),
    ("output that cannot be unpickled", "{'output': Unpicklable()}", "1.0", "error", "output"),
    ("output whose repr raises", "{'output': Liar()}", "1.0", "error", "output"),
    ("judge extra an object", OK_OUT, "{'score': 1.0, 'found': Opaque()}", "judge_error", "extra"),
    ("judge extra NaN", OK_OUT, "{'score': 1.0, 'ratio': float('nan')}", "judge_error", "extra"),
    ("judge extra that contains itself", OK_OUT, "judge_loop()", "judge_error", "extra"),
    ("judge feedback whose str raises", OK_OUT, "{'score': 1.0, 'feedback': Liar()}", "judge_error", "feedback"),
    ("judge score a complex number", OK_OUT, "{'score': 1j}", "judge_error", "score"),
    ("judge returns None", OK_OUT, "None", "judge_error", "score"),
]

HELPERS = """
import os
class Opaque:
    pass
class Liar:
    def __repr__(self):
        raise RuntimeError("no repr for you")
    __str__ = __repr__
def _boom(*args):
    raise ValueError("cannot rebuild this")
class Unpicklable:
    def __reduce__(self):
        return (_boom, ("x",))
def loop():
    x = []
    x.append(x)
    return {"output": x}
def judge_loop():
    d = {"score": 1.0}
    d["me"] = d
    return d
"""


@pytest.mark.parametrize("executor", ["threads", "processes"])
@pytest.mark.parametrize("name, value, verdict, status, needle", RETURNS, ids=[r[0] for r in RETURNS])
def test_a_return_that_cannot_be_written_is_that_attempts_error(
    name, value, verdict, status, needle, executor, tmp_path
):
    pipeline = (
        HELPERS
        + f"""
def run(task, adapter):
    if task["id"] == "bad":
        return {value}
    return {OK_OUT}
"""
    )
    judge = (
        HELPERS
        + f"""
def score(task, output):
    if task["id"] == "bad":
        return {verdict}
    return 1.0
"""
    )
    path = workspace(tmp_path, ["good1", "bad", "good2"], pipeline, judge)
    ws = path.parent
    before = snapshot(ws)
    with time_limit(LIMIT_S, name):
        summary = EvalRun(load_config(path), ["none"], executor=executor).run_sync()["none"]
    rows = results(ws)  # strict JSON: no NaN, no Infinity, no object written as its repr
    assert rows["good1"]["status"] == rows["good2"]["status"] == "ok"  # the run went on
    bad = rows["bad"]
    assert bad["status"] == status, bad
    assert needle in bad["error"] and "\n" not in bad["error"], bad["error"]
    assert bad["judge"]["score"] == 0.0
    if status == "judge_error":
        assert bad["output"] == "fine" and bad["cost_usd"] == 0.01  # the pipeline's work is kept
    assert summary.attempts == 3 and summary.errors == 1 and summary.complete
    assert snapshot(ws, exclude=("runs/t/eval/none",)) == before


# -- classes 1 and 3: hung attempts and judges ------------------------------------------------------------------------
HANGS = """
import time
def run(task, adapter):
    if task["id"].startswith("hang"):
        time.sleep(3600)
    return {"output": task["id"], "cost_usd": 0.0}
"""


def test_hung_threads_never_starve_a_healthy_attempt_into_a_timeout(tmp_path):
    """More hung attempts than threads in any pool: every healthy attempt still runs and is recorded ok."""
    ids = [f"hang{i}" for i in range(8)] + [f"ok{i}" for i in range(6)]
    path = workspace(tmp_path, ids, HANGS, timeout_min=0.01, concurrency=2)
    before = snapshot(path.parent)
    with time_limit(LIMIT_S, "hung attempts"):
        summary = EvalRun(load_config(path), ["none"]).run_sync()["none"]
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before
    rows = results(path.parent)
    for i in range(6):
        assert rows[f"ok{i}"]["status"] == "ok", rows[f"ok{i}"]
    for i in range(8):
        assert rows[f"hang{i}"]["status"] == "error" and "timeout_min" in rows[f"hang{i}"]["error"]
    assert summary.complete and summary.attempts == 14 and summary.errors == 8


def test_when_hung_threads_exhaust_capacity_the_summary_says_so(tmp_path, monkeypatch):
    from hermit_tui.core.run import executors

    monkeypatch.setattr(executors, "HUNG_THREAD_LIMIT", 3)
    ids = [f"hang{i}" for i in range(5)] + ["ok0", "ok1"]
    path = workspace(tmp_path, ids, HANGS, timeout_min=0.005, concurrency=1)
    before = snapshot(path.parent)
    with time_limit(LIMIT_S, "exhausted"), pytest.raises(RunFailed, match="hung") as caught:
        EvalRun(load_config(path), ["none"]).run_sync()
    assert "processes" in str(caught.value)  # says what to do instead
    summary = json.loads((path.parent / "runs/t/eval/none/summary.json").read_text())
    assert summary["complete"] is False and "hung" in summary["stopped"]
    rows = results(path.parent)
    assert len(rows) == 3 and all(r["status"] == "error" for r in rows.values())  # nothing healthy was faked
    assert not (path.parent / "runs/t/eval/none/.hermit-tui.lock").exists()
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before


def test_the_timeout_clock_starts_when_the_attempt_starts(tmp_path):
    """Attempts that wait for a slot are not charged for the wait."""
    pipeline = "import time\ndef run(task, adapter):\n    time.sleep(0.5)\n    return {'output': 1}\n"
    path = workspace(tmp_path, [f"t{i}" for i in range(6)], pipeline, timeout_min=0.015, concurrency=1)
    before = snapshot(path.parent)
    with time_limit(LIMIT_S, "clock"):
        summary = EvalRun(load_config(path), ["none"]).run_sync()["none"]
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before
    assert summary.errors == 0  # 6 x 0.5 s in one slot is 3 s, each attempt within its 0.9 s


def test_a_hung_judge_under_threads_keeps_the_output(tmp_path):
    judge = (
        "import time\ndef score(task, output):\n    if task['id'] == 'stuck':\n        time.sleep(3600)\n"
        "    return 1.0\n"
    )
    path = workspace(tmp_path, ["ok", "stuck"], HANGS, judge, timeout_min=0.01)
    before = snapshot(path.parent)
    with time_limit(LIMIT_S, "hung judge"):
        EvalRun(load_config(path), ["none"]).run_sync()
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before
    rows = results(path.parent)
    assert rows["ok"]["status"] == "ok"
    assert rows["stuck"]["status"] == "judge_error" and "judge" in rows["stuck"]["error"]
    assert rows["stuck"]["output"] == "stuck"


def test_a_hung_judge_under_processes_is_bounded(tmp_path):
    judge = (
        "import time\ndef score(task, output):\n    if task['id'] == 'stuck':\n        time.sleep(3600)\n"
        "    return 1.0\n"
    )
    path = workspace(tmp_path, ["ok", "stuck", "ok2"], HANGS, judge, timeout_min=0.01)
    before = snapshot(path.parent)
    with time_limit(LIMIT_S, "hung judge in processes"):
        summary = EvalRun(load_config(path), ["none"], executor="processes").run_sync()["none"]
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before
    rows = results(path.parent)
    assert rows["ok"]["status"] == rows["ok2"]["status"] == "ok"
    assert rows["stuck"]["status"] == "judge_error" and "judge" in rows["stuck"]["error"]
    assert summary.complete and not (path.parent / "runs/t/eval/none/.hermit-tui.lock").exists()


def test_an_async_pipeline_that_never_returns_times_out(tmp_path):
    pipeline = (
        "import asyncio\nasync def run(task, adapter):\n    if task['id'] == 'hang':\n"
        "        await asyncio.sleep(3600)\n    return {'output': 1}\n"
    )
    path = workspace(tmp_path, ["hang", "ok"], pipeline, timeout_min=0.01)
    before = snapshot(path.parent)
    with time_limit(LIMIT_S, "async hang"):
        EvalRun(load_config(path), ["none"]).run_sync()
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before
    rows = results(path.parent)
    assert rows["ok"]["status"] == "ok" and "timeout_min" in rows["hang"]["error"]


def _cli(path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", "eval", "--config", str(path), "--adapter", "none", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.parametrize("executor", ["threads", "processes"])
@pytest.mark.parametrize("what", ["pipeline", "judge"])
def test_the_command_exits_promptly_while_hung_threads_live(what, executor, tmp_path):
    """The process must end after its last attempt even though a hung pipeline or judge thread never returns."""
    judge = (
        (
            "import time\ndef score(task, output):\n    if task['id'] == 'hang':\n        time.sleep(3600)\n"
            "    return 1.0\n"
        )
        if what == "judge"
        else "def score(task, output):\n    return 1.0\n"
    )
    pipeline = HANGS.replace('task["id"].startswith("hang")', "False") if what == "judge" else HANGS
    path = workspace(tmp_path, ["ok", "hang"], pipeline, judge, timeout_min=0.01)
    before = snapshot(path.parent)
    out = _cli(path, "--executor", executor, timeout=90)  # a hang raises TimeoutExpired here
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["attempts"] == 2 and payload["errors"] == 1 and payload["complete"] is True
    assert not (path.parent / "runs/t/eval/none/.hermit-tui.lock").exists()


# -- class 6: output streams ------------------------------------------------------------------------------------------
NOISY = """
import os, sys
def run(task, adapter):
    print("chatty pipeline says hello", task["id"])
    sys.stdout.write("{not json\\n")
    os.write(1, b"raw bytes on fd 1\\n")
    return {"output": task["id"], "cost_usd": 0.0}
"""


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_a_pipeline_printing_to_stdout_does_not_corrupt_the_json(executor, tmp_path):
    judge = "def score(task, output):\n    print('judge talks too')\n    return 1.0\n"
    path = workspace(tmp_path, ["a", "b", "c"], NOISY, judge)
    before = snapshot(path.parent)
    out = _cli(path, "--executor", executor)
    assert snapshot(path.parent, exclude=("runs/t/eval/none",)) == before
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)  # the whole of stdout is the command's JSON
    assert payload["attempts"] == 3 and payload["mean_score"] == 1.0
    # what the pipeline and the judge printed is not lost either: each attempt's is in the file its line names
    records = [json.loads(line) for line in (path.parent / "runs/t/eval/none/results.jsonl").read_text().splitlines()]
    for rec in records:
        kept = Path(rec["printed"]).read_text()
        assert "chatty pipeline" in kept and "judge talks too" in kept


# -- class 4: resume --------------------------------------------------------------------------------------------------
@pytest.fixture
def demo(demo_config):
    return demo_config


FAST = ["agent.params.latency_scale=0"]


def test_a_killed_resume_after_a_cut_line_stays_recoverable(demo):
    """A cut last line, then a resume killed mid-way (kill -9), then another resume: every attempt once."""
    eval_dir = demo.parent / "runs/demo/eval"
    base = [
        sys.executable,
        "-m",
        "hermit_tui",
        "eval",
        "--config",
        str(demo),
        "--adapter",
        "none",
        "--limit",
        "6",
        "eval.repeats=2",
        "agent.params.latency_scale=2",
    ]
    # four at a time where nothing is interrupted (concurrency is not part of the protocol), one at a time in the
    # resume that is killed, so that it is killed mid-way
    subprocess.run([*base, "--concurrency", "4"], capture_output=True, timeout=120, check=True)
    results_file = eval_dir / "none/smoke/results.jsonl"  # --limit: a smoke subset, in its own folder
    data = results_file.read_bytes()
    cut = data[: len(data) // 2 - 7]  # several whole lines, then half of one
    results_file.write_bytes(cut)
    # a resume, killed (kill -9) once it has opened the file and recorded something
    proc = subprocess.Popen(
        [*base, "--concurrency", "1", "--resume"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    with time_limit(LIMIT_S, "killed resume"):
        while proc.poll() is None and len(results_file.read_bytes().splitlines()) <= cut.count(b"\n") + 1:
            __import__("time").sleep(0.01)
    assert proc.poll() is None, f"the resume ended (exit {proc.returncode}) before it was killed"
    proc.kill()
    proc.wait(10)
    rows = lines_of(results_file)  # readable after the kill, whatever moment it hit
    assert len(rows) >= cut.count(b"\n")
    out = subprocess.run([*base, "--concurrency", "4", "--resume"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = lines_of(results_file)
    keys = Counter((r["id"], r["repeat"]) for r in rows)
    assert len(keys) == 12 and max(keys.values()) == 1
    report = subprocess.run(
        [sys.executable, "-m", "hermit_tui", "report", "--config", str(demo), "--format", "json", "--smoke"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr


def test_records_outside_the_protocol_are_ignored_with_a_warning_and_kept(demo):
    from hermit_tui.core.run import events as ev

    config = load_config(demo, FAST)
    EvalRun(config, ["none"], repeats=1, limit=3).run_sync()
    path = config.run_dir / "eval/none/smoke/results.jsonl"
    rows = lines_of(path)
    foreign = [dict(rows[0], id="not-in-the-split"), dict(rows[0], repeat=7)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2] + foreign))
    before = snapshot(demo.parent, exclude=("runs/demo/eval/none",))
    seen: list[ev.Event] = []
    with time_limit(LIMIT_S, "foreign records"):
        summary = EvalRun(config, ["none"], repeats=1, limit=3, resume=True, on_event=seen.append).run_sync()["none"]
    assert summary.attempts == 3 and summary.complete  # 3 of 3, not 5 of 3
    assert summary.ignored_attempts == 2
    assert any(isinstance(e, ev.RunLog) and e.level == "warning" and "ignored" in e.message for e in seen)
    after = lines_of(path)
    assert {(r["id"], r["repeat"]) for r in foreign} <= {(r["id"], r["repeat"]) for r in after}  # kept on disk
    assert snapshot(demo.parent, exclude=("runs/demo/eval/none",)) == before


def test_stale_temporary_files_of_a_killed_run_are_removed_on_the_next_start(demo, tmp_path):
    import tempfile

    from hermit_tui.core.workspace.selectors import TEMP_PREFIX

    config = load_config(demo, FAST)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.gettempdir()) / f"{TEMP_PREFIX}{dead.pid}-0-abc"
    (stale / "skills").mkdir(parents=True)
    (stale / "skills/x.md").write_text("left by a kill -9\n")
    live = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
    folder = config.run_dir / "eval/none/smoke"  # --limit writes the smoke folder
    folder.mkdir(parents=True)
    (folder / f".summary.json.{dead.pid}.tmp").write_text("{")
    EvalRun(config, ["none", "root"], repeats=1, limit=2, update_card=False).run_sync()
    assert not stale.exists() and live.exists()
    assert not list(folder.glob(".*.tmp"))
    live.rmdir()


# -- class 6: logs, scores, CSV, publish ----------------------------------------------------------------------------
def test_the_demo_pipeline_keeps_logs_inside_the_workspace(demo, tmp_path):
    """Task ids holding ../ or an absolute path must not write outside: each attempt gets a safe log path."""
    tasks = demo.parent / "tasks.jsonl"
    evil = ["../../../escaped-log", "/tmp/../" + str(tmp_path / "abs-escape"), "..", "a/../../b"]
    first = json.loads(tasks.read_text().splitlines()[0])
    tasks.write_text(tasks.read_text() + "".join(json.dumps({**first, "id": e}) + "\n" for e in evil))
    (demo.parent / "test.txt").write_text("\n".join(evil) + "\n")
    outside = snapshot(tmp_path, exclude=("demo",))
    for executor in ("threads", "processes"):
        with time_limit(LIMIT_S, "evil ids"):
            EvalRun(
                load_config(demo, FAST), ["none", "root"], repeats=1, executor=executor, update_card=False
            ).run_sync()
        assert snapshot(tmp_path, exclude=("demo",)) == outside
        for label in ("none", "root"):
            for row in lines_of(demo.parent / "runs/demo/eval" / label / "results.jsonl"):
                log = Path(row["log"]).resolve()
                assert log.is_file() and (demo.parent / "runs/demo/eval" / label / "logs") in log.parents
    assert not (tmp_path / "escaped-log.r1.log").exists()


def test_the_demo_pipeline_under_hermit_keeps_logs_inside_its_folder(tmp_path):
    """Without hermit-tui's attempt context (as under `hermit eval`), the fallback path is safe too."""
    import importlib.util

    from hermit_tui.demo import build_demo

    ws = build_demo(tmp_path / "demo").parent
    spec = importlib.util.spec_from_file_location("demo_pipeline_alone", ws / "pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = {"id": "../../../outside", "category": "reverse", "input": "Reverse 'abc'"}
    out = module.run(task, None, params={"latency_scale": 0}, base=ws)
    log = Path(out.log if hasattr(out, "log") else out["log"]).resolve()
    assert ws.resolve() in log.parents and log.is_file()
    assert not (tmp_path / "outside.r1.log").exists()


def test_non_finite_scores_on_disk_are_flagged(demo):
    """hermit writes what its judge returned, NaN included: the report and a recomputed summary say so."""
    from hermit_tui.cli import main
    from hermit_tui.core.records.results import summarize

    config = load_config(demo, FAST)
    EvalRun(config, ["none"], repeats=1).run_sync()
    path = config.run_dir / "eval/none/results.jsonl"
    text = path.read_text().splitlines()
    import re

    text[0] = re.sub(r'"score": [0-9.]+', '"score": NaN', text[0], count=1)
    text[1] = re.sub(r'"score": [0-9.]+', '"score": Infinity', text[1], count=1)
    path.write_text("\n".join(text) + "\n")
    before = snapshot(demo.parent)
    records = read_results(path).records
    summary = summarize(records, adapter="none", commit=None, task_ids=[r.id for r in records], repeats=1, wall_s=0)
    assert summary.nonfinite_scores == 2 and math.isfinite(summary.mean_score)
    with time_limit(LIMIT_S, "report"):
        code = main(
            ["report", "--config", str(demo), "--format", "json", "--output", str(demo.parent / "r.json"), *FAST]
        )
    assert code == 0
    assert snapshot(demo.parent, exclude=("r.json",)) == before  # the report reads, it writes only its output
    warnings = json.loads((demo.parent / "r.json").read_text())["warnings"]
    assert any("2" in w and "NaN" in w for w in warnings), warnings


FORMULAS = ["=1+1", "+SUM(A1:A2)", "-2+3", "@cmd", '=HYPERLINK("http://example.invalid")']


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(demo):
    from hermit_tui.cli import main

    tasks = demo.parent / "tasks.jsonl"
    first = json.loads(tasks.read_text().splitlines()[0])
    tasks.write_text(tasks.read_text() + "".join(json.dumps({**first, "id": f}) + "\n" for f in FORMULAS))
    (demo.parent / "test.txt").write_text("\n".join(FORMULAS) + "\n")
    adapters = demo.parent / "=evil"
    adapters.mkdir()
    (adapters / "adapter.yaml").write_text("template: {id: demo-notes}\n")
    config = load_config(demo, FAST)
    EvalRun(config, ["none", "=evil"], repeats=1).run_sync()
    out = demo.parent / "r.csv"
    before = snapshot(demo.parent)
    with time_limit(LIMIT_S, "csv"):
        assert main(["report", "--config", str(demo), "--format", "csv", "--output", str(out), *FAST]) == 0
    assert snapshot(demo.parent, exclude=("r.csv",)) == before
    import csv

    rows = list(csv.reader(out.read_text().splitlines()))
    cells = [c for row in rows for c in row]
    for cell in cells:
        try:
            float(cell)
            continue  # a number, negative ones included, stays a number
        except ValueError:
            pass
        assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), cell
    assert "'=1+1" in cells and any(c.startswith("'=evil") for c in rows[0])


def _published_demo(demo):
    from hermit_tui.core.publish.apply import plan_publish

    config = load_config(demo, FAST)
    EvalRun(config, ["none", "root", "final"], repeats=1, update_card=False).run_sync()
    return config, plan_publish(config, None)


def test_a_failed_publish_leaves_no_temporary_card(demo, monkeypatch):
    from hermit_tui.core.publish.apply import publish

    config, plan = _published_demo(demo)
    checkout = config.run_dir / "checkout"
    before = snapshot(demo.parent)
    real_replace = os.replace

    def failing(src, dst, *a, **k):
        if Path(dst).name == "CARD.md":
            raise OSError(28, "No space left on device")
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", failing)  # the os module the card module writes with
    with pytest.raises(InputError, match="publishing failed"):
        publish(plan)
    assert not list(checkout.glob(".CARD.md.*"))

    def without_reflogs(snap):  # git's reflogs record the rollback itself
        return {k: v for k, v in snap.items() if not ("/.git/" in "/" + k and "/logs/" in k)}

    assert without_reflogs(snapshot(demo.parent)) == without_reflogs(before)


def test_publishing_keeps_the_cards_file_mode(demo):
    from hermit_tui.core.publish.apply import publish

    config, _ = _published_demo(demo)
    card = config.run_dir / "checkout/CARD.md"
    os.chmod(card, 0o640)
    from hermit_tui.core.publish.apply import plan_publish

    publish(plan_publish(config, None))
    assert stat.S_IMODE(card.stat().st_mode) == 0o640
    assert not list(card.parent.glob(".CARD.md.*"))


def test_write_atomic_cleans_up_and_keeps_the_mode(tmp_path, monkeypatch):
    from hermit_tui.core.records import results as records

    target = tmp_path / "summary.json"
    target.write_text("{}")
    os.chmod(target, 0o600)
    records.write_atomic(target, '{"a": 1}')
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == '{"a": 1}'

    def failing(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing)  # the os module the results module writes with
    with pytest.raises(OSError):
        records.write_atomic(target, '{"b": 2}')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    assert target.read_text() == '{"a": 1}'


def test_an_unreadable_file_in_an_adapter_folder_is_one_line(tmp_path, monkeypatch):
    from hermit_tui.core.workspace import selectors
    from hermit_tui.core.workspace.selectors import directory_hash

    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter.yaml").write_text("template: {id: x}\n")
    secret = folder / "secret.md"
    secret.write_text("no\n")
    secret.chmod(0)
    if os.geteuid() == 0:  # root reads any file: the read fails as the kernel fails it for anyone else
        real = read_bytes  # the function the selectors module reads adapter files with

        def denied(path, *args, **kwargs):
            if Path(path).name == "secret.md":
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, *args, **kwargs)

        monkeypatch.setattr(selectors, "read_bytes", denied)
    try:
        with time_limit(LIMIT_S, "unreadable"), pytest.raises(InputError, match="secret.md"):
            directory_hash(folder)
    finally:
        secret.chmod(0o644)


ODD_IDS = ["..", ".", "../x", "a/b", "a_b", "/etc/passwd", "x" * 500, "\x00", "é", "-rf", "a b", ".hidden", ""]


def test_safe_file_names_stay_in_their_folder_and_apart(tmp_path):
    from hermit_tui.core.context import _CURRENT, AttemptContext, attempt_log_path, safe_file_name

    names = [safe_file_name(i) for i in ODD_IDS]
    assert len(set(names)) == len(names)  # distinct ids, distinct files
    for name in names:
        assert "/" not in name and not name.startswith(".") and 0 < len(name) <= 100
        assert (tmp_path / name).resolve().parent == tmp_path.resolve()
    token = _CURRENT.set(AttemptContext("none", "../../up", 2, tmp_path / "logs"))
    try:
        path = attempt_log_path(".txt")
        assert path is not None
        assert path.parent == tmp_path / "logs" and path.name.endswith(".r2.txt")
        with pytest.raises(ValueError):
            attempt_log_path("/../../x")
    finally:
        _CURRENT.reset(token)
    assert attempt_log_path() is None  # outside an attempt


def test_the_corpus_has_at_least_120_cases():
    import test_bad_input

    runtime = 0
    for name, obj in dict(globals()).items():
        if name.startswith("test_") and callable(obj) and name != "test_the_corpus_has_at_least_120_cases":
            marks = getattr(obj, "pytestmark", [])
            n = 1
            for m in marks:
                if m.name == "parametrize":
                    n *= len(m.args[1])
            runtime += n
    assert len(test_bad_input.CASES) + runtime >= 120
