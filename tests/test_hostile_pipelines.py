"""Hostile pipelines and judges, at import and in flight (issue 29): a module that hangs at import, ``sys.exit`` or
``KeyboardInterrupt`` raised by the user's code, a pipeline or a judge that forks, and values that eval accepted but
its readers refused (lone surrogates, numbers whose sums overflow).

Every case runs the real command in a subprocess with a timeout (a hang fails the case, never the suite), compares
the workspace's files outside the evaluation before and after, and checks that what reached the terminal holds no
traceback. The other hostile cases: tests/test_hostile.py (helpers reused from there).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_util import interruptible_popen, snapshot, time_limit
from test_hostile import lines_of, workspace
from waiting import wait_until

LIMIT_S = 90  # per command: a hang raises TimeoutExpired
OK_JUDGE = "def score(task, output):\n    return 1.0\n"
OK_PIPELINE = "def run(task, adapter):\n    return {'output': task['id'], 'cost_usd': 0.01}\n"
EVAL = "runs/t/eval/none"


def alive(proc: subprocess.Popen) -> bool:
    """The process is still running; fails with what it printed if it ended."""
    assert proc.poll() is None, proc.communicate()
    return True


@pytest.fixture(autouse=True)
def limited():
    with time_limit(LIMIT_S * 4, "the case"):
        yield


def hermit_tui(*args: str, timeout: float = LIMIT_S) -> subprocess.CompletedProcess:
    """The command, its output captured through pipes: a process left holding them (a forked child) hangs here."""
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def evaluate(path: Path, *args: str, executor: str = "threads") -> subprocess.CompletedProcess:
    return hermit_tui("eval", "--config", str(path), "--adapter", "none", "--executor", executor, *args)


def one_line_error(out: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, one line on stderr naming what is wrong, nothing on stdout, no traceback."""
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr[-2000:]
    assert out.stdout == "" and "Traceback" not in out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def ran_cleanly(out: subprocess.CompletedProcess) -> dict:
    """Exit 0, stdout exactly the summary's JSON, no traceback."""
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    return json.loads(out.stdout)


def rows_of(ws: Path) -> dict[str, dict]:
    rows = lines_of(ws / EVAL / "results.jsonl")  # strict JSON
    by_id = {r["id"]: r for r in rows}
    assert len(by_id) == len(rows)  # every attempt once
    return by_id


# -- at import: one line and exit 2 before the run --------------------------------------------------------------------
HANG = "import time\ntime.sleep(3600)\n"
IMPORT_CASES = [
    # (name, code at the top of the module, which module, what the line names)
    ("a pipeline that hangs at import", HANG, "pipeline", "timeout_min"),
    ("a judge that hangs at import", HANG, "judge", "timeout_min"),
    ("a pipeline that busy-loops at import", "while True:\n    pass\n", "pipeline", "timeout_min"),
    ("a pipeline calling sys.exit(0) at import", "import sys\nsys.exit(0)\n", "pipeline", "sys.exit(0)"),
    ("a judge calling sys.exit(3) at import", "import sys\nsys.exit(3)\n", "judge", "sys.exit(3)"),
    ("a pipeline calling sys.exit() at import", "import sys\nsys.exit()\n", "pipeline", "sys.exit(None)"),
    ("a pipeline raising KeyboardInterrupt at import", "raise KeyboardInterrupt\n", "pipeline", "KeyboardInterrupt"),
    ("a judge raising KeyboardInterrupt at import", "raise KeyboardInterrupt('no')\n", "judge", "KeyboardInterrupt"),
    ("a judge raising SystemExit('text') at import", "raise SystemExit('bye')\n", "judge", "sys.exit('bye')"),
]


# the driver imports both modules before any worker starts: under processes only the hangs and a judge's exit
IMPORT_RUNS = [(*case, "threads") for case in IMPORT_CASES] + [
    (*case, "processes") for case in IMPORT_CASES if "hangs" in case[0] or "exit(3)" in case[0]
]


@pytest.mark.parametrize(
    "name, code, which, needle, executor", IMPORT_RUNS, ids=[f"{c[0]}-{c[-1]}" for c in IMPORT_RUNS]
)
def test_a_module_that_misbehaves_at_import_is_one_line_and_exit_2(name, code, which, needle, executor, tmp_path):
    pipeline = code + OK_PIPELINE if which == "pipeline" else OK_PIPELINE
    judge = code + OK_JUDGE if which == "judge" else OK_JUDGE
    path = workspace(tmp_path, ["a", "b"], pipeline, judge, timeout_min=0.02)  # 1.2 s
    before = snapshot(path.parent)
    started = time.monotonic()
    out = evaluate(path, executor=executor)
    line = one_line_error(out, needle, "pipe.py" if which == "pipeline" else "judge.py")
    assert "run.yaml" in line
    if needle == "timeout_min":  # given up at the timeout, not at the subprocess's limit
        assert time.monotonic() - started < LIMIT_S / 2
    assert snapshot(path.parent) == before  # refused before anything was written


def test_a_real_ctrl_c_still_stops_a_hanging_import(tmp_path):
    """Without a timeout nothing bounds the import, but the user's Ctrl-C still ends the command (exit 1)."""
    path = workspace(tmp_path, ["a"], "import pathlib, time\npathlib.Path('importing').touch()\n" + HANG + OK_PIPELINE)
    proc = interruptible_popen(
        [sys.executable, "-m", "hermit_tui", "eval", "--config", str(path), "--adapter", "none"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=path.parent,
    )
    try:
        wait_until(lambda: alive(proc) and (path.parent / "importing").exists(), what="the pipeline's import to start")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=LIMIT_S)
    finally:
        proc.kill()
    assert proc.returncode == 1 and "interrupted" in stderr and "Traceback" not in stderr, stderr
    assert not (path.parent / "runs").exists()


def test_a_module_that_forks_at_import_runs_the_evaluation_once(tmp_path):
    pipeline = "import os\nCHILD = os.fork()\n" + OK_PIPELINE
    path = workspace(tmp_path, ["a", "b", "c"], pipeline)
    out = evaluate(path)
    payload = ran_cleanly(out)
    assert payload["attempts"] == 3 and payload["errors"] == 0
    assert sorted(rows_of(path.parent)) == ["a", "b", "c"]


# -- in flight: the attempt's error, never the command's exit code or a traceback ------------------------------------
FLIGHT_CASES = [
    # (name, pipeline body for task "bad", judge body for task "bad", status, the error recorded)
    ("a pipeline raising KeyboardInterrupt", "raise KeyboardInterrupt", None, "error", "KeyboardInterrupt"),
    ("a pipeline calling sys.exit(0)", "sys.exit(0)", None, "error", "SystemExit: 0"),
    ("a pipeline calling sys.exit(3)", "sys.exit(3)", None, "error", "SystemExit: 3"),
    ("a judge raising KeyboardInterrupt", None, "raise KeyboardInterrupt", "judge_error", "KeyboardInterrupt"),
    ("a judge calling sys.exit(3)", None, "sys.exit(3)", "judge_error", "SystemExit: 3"),
    ("a judge calling sys.exit(0)", None, "sys.exit(0)", "judge_error", "SystemExit: 0"),
]


def flight_workspace(tmp_path: Path, pipeline_bad: str | None, judge_bad: str | None, *, asynchronous=False):
    prefix = "async def" if asynchronous else "def"
    pipeline = (
        f"import sys\n{prefix} run(task, adapter):\n"
        + (f"    if task['id'] == 'bad':\n        {pipeline_bad}\n" if pipeline_bad else "")
        + "    return {'output': task['id'], 'cost_usd': 0.01}\n"
    )
    judge = (
        "import sys\ndef score(task, output):\n"
        + (f"    if task['id'] == 'bad':\n        {judge_bad}\n" if judge_bad else "")
        + "    return 1.0\n"
    )
    return workspace(tmp_path, ["good1", "bad", "good2"], pipeline, judge)


def every_flight_case_workspace(tmp_path: Path, *, asynchronous=False) -> Path:
    """Every case of FLIGHT_CASES in one workspace: task ``bad<i>`` misbehaves as case i says, between good tasks."""
    prefix = "async def" if asynchronous else "def"
    pipeline = (
        f"import sys\n{prefix} run(task, adapter):\n"
        + "".join(
            f"    if task['id'] == 'bad{i}':\n        {bad}\n"
            for i, (_, bad, _, _, _) in enumerate(FLIGHT_CASES)
            if bad
        )
        + "    return {'output': task['id'], 'cost_usd': 0.01}\n"
    )
    judge = (
        "import sys\ndef score(task, output):\n"
        + "".join(
            f"    if task['id'] == 'bad{i}':\n        {bad}\n"
            for i, (_, _, bad, _, _) in enumerate(FLIGHT_CASES)
            if bad
        )
        + "    return 1.0\n"
    )
    ids = ["good1", *(f"bad{i}" for i in range(len(FLIGHT_CASES))), "good2"]
    return workspace(tmp_path, ids, pipeline, judge)


@pytest.mark.parametrize("executor", ["threads", "processes", "async"])
def test_sys_exit_and_keyboard_interrupt_in_flight_are_that_attempts_error(executor, tmp_path):
    """Every case of FLIGHT_CASES in one launch per executor (a command per case was a process start each): each
    decides its own attempt only, whichever attempts share its worker or come after it."""
    path = every_flight_case_workspace(tmp_path, asynchronous=executor == "async")
    before = snapshot(path.parent)
    out = evaluate(path, executor="threads" if executor == "async" else executor)
    payload = ran_cleanly(out)  # exit 0: neither the gate's 3 nor a green run that evaluated nothing
    bad = len(FLIGHT_CASES)
    assert payload["attempts"] == bad + 2 and payload["errors"] == bad and payload["complete"] is True
    rows = rows_of(path.parent)
    assert rows["good1"]["status"] == rows["good2"]["status"] == "ok"
    recorded = {
        name: (rows[f"bad{i}"]["status"], rows[f"bad{i}"]["error"]) for i, (name, *_) in enumerate(FLIGHT_CASES)
    }
    assert recorded == {name: (status, error) for name, _, _, status, error in FLIGHT_CASES}
    assert snapshot(path.parent, exclude=(EVAL,)) == before


def test_sys_exit_in_flight_never_becomes_the_gates_exit_code(tmp_path):
    """`eval --require`: the gate decides on the evaluation, not on a judge's sys.exit(3) or a pipeline's exit(0)."""
    path = flight_workspace(tmp_path, "sys.exit(0)", None)
    out = evaluate(path, "--max-error-rate", "0.5")
    assert out.returncode == 0, out.stderr[-2000:]  # 1 error in 3 attempts passes
    out = evaluate(path, "--max-error-rate", "0.1")
    assert out.returncode == 3 and "Traceback" not in out.stderr  # the gate's own failure, measured


FORKS = """
import os, pathlib
{prefix} run(task, adapter):
    child = os.fork()  # the child returns into hermit-tui's code too
    if child:
        pathlib.Path({log!r}).open("a").write(f"{{child}}\\n")
    return {{"output": task["id"], "cost_usd": 0.01}}
"""
FORKING_JUDGE = """
import os, pathlib
def score(task, output):
    child = os.fork()
    if child:
        pathlib.Path({log!r}).open("a").write(f"{{child}}\\n")
    return 1.0
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # ended (a zombie waits for a parent that is not ours to reap)


@pytest.mark.parametrize("executor", ["threads", "processes", "async"])
@pytest.mark.parametrize("what", ["pipeline", "judge"])
def test_a_pipeline_or_judge_that_forks_does_not_leave_the_command_running(what, executor, tmp_path):
    ids = ["a", "b", "c", "d"]
    log = str(tmp_path / "children")
    pipeline = FORKS.format(prefix="async def" if executor == "async" else "def", log=log)
    judge = FORKING_JUDGE.format(log=log)
    path = workspace(
        tmp_path, ids, pipeline if what == "pipeline" else OK_PIPELINE, judge if what == "judge" else OK_JUDGE
    )
    before = snapshot(path.parent)
    out = evaluate(path, executor="threads" if executor == "async" else executor)  # a lingering child: TimeoutExpired
    payload = ran_cleanly(out)
    assert payload["attempts"] == 4 and payload["errors"] == 0 and payload["mean_score"] == 1.0
    rows = rows_of(path.parent)  # each attempt recorded once, by the parent
    assert sorted(rows) == ids and all(r["status"] == "ok" for r in rows.values())
    children = [int(x) for x in Path(log).read_text().split()]
    assert len(children) == 4
    wait_until(lambda: all(map(_gone, children)), timeout=30, what=f"the children {children} to be gone")
    assert snapshot(path.parent, exclude=(EVAL,)) == before


# -- what eval accepts, every reader accepts --------------------------------------------------------------------------
SURROGATES = [
    # (name, pipeline's return for "bad" or a raise, judge's return for "bad", status, the fields replaced)
    ("an output with a lone surrogate", "return {'output': 'x\\udc80y'}", "1.0", "ok", ["output"]),
    ("an output list with a lone high surrogate", "return {'output': ['\\ud800']}", "1.0", "ok", ["output"]),
    (
        "feedback with a lone surrogate",
        "return {'output': 'x'}",
        "{'score': 1.0, 'feedback': 'no \\ud800'}",
        "ok",
        ["judge"],
    ),
    (
        "a judge extra key with a lone surrogate",
        "return {'output': 'x'}",
        "{'score': 1.0, 'k\\udfff': 1}",
        "ok",
        ["judge"],
    ),
    ("an error with a lone surrogate", "raise ValueError('oops \\udc80')", "1.0", "error", ["error", "judge"]),
    (
        "a judge error with a lone surrogate",
        "return {'output': 'x'}",
        "getattr(object(), 'x\\udc80')",
        "judge_error",
        ["error", "judge"],
    ),
    ("tokens with a lone surrogate", "return {'output': 'x', 'tokens': {'\\udc80': 1}}", "1.0", "ok", ["tokens"]),
]


# under processes the output crosses a process boundary and an error record is built in the driver: those two
PROCESS_SURROGATES = ("an output with a lone surrogate", "an error with a lone surrogate")


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_text_with_lone_surrogates_is_written_as_unicode_and_read_back(executor, tmp_path):
    """Every case of SURROGATES (under processes, the two of PROCESS_SURROGATES) in one launch, task ``bad<i>`` for
    case i beside a good one: one eval, report and resume per executor and a show per case, not all four per case."""
    cases = [case for case in SURROGATES if executor == "threads" or case[0] in PROCESS_SURROGATES]
    pipeline = (
        "def run(task, adapter):\n"
        + "".join(f"    if task['id'] == 'bad{i}':\n        {returned}\n" for i, (_, returned, *_) in enumerate(cases))
        + "    return {'output': 1}\n"
    )
    judge = (
        "def score(task, output):\n"
        + "".join(
            f"    if task['id'] == 'bad{i}':\n        return {verdict}\n" for i, (_, _, verdict, *_) in enumerate(cases)
        )
        + "    return 1.0\n"
    )
    ids = ["good", *(f"bad{i}" for i in range(len(cases)))]
    path = workspace(tmp_path, ids, pipeline, judge)
    before = snapshot(path.parent)
    ran_cleanly(evaluate(path, executor=executor))
    results_file = path.parent / EVAL / "results.jsonl"
    results_file.read_bytes().decode("utf-8")  # strict UTF-8, as any reader decodes it
    rows = rows_of(path.parent)
    for i, (name, _, _, status, fields) in enumerate(cases):
        bad = rows[f"bad{i}"]
        assert bad["status"] == status, (name, bad)
        assert set(fields) <= set(bad.get("replaced_surrogates", [])), (name, bad)
        assert "\ufffd" in json.dumps(bad, ensure_ascii=False), (name, bad)
    assert "replaced_surrogates" not in rows["good"]
    commands = [["report", "--config", str(path), "--format", "json"]] + [
        ["show", "--config", str(path), "--adapter", "none", "--task", f"bad{i}"] for i in range(len(cases))
    ]
    for command in commands:
        read = hermit_tui(*command)
        assert read.returncode == 0 and "Traceback" not in read.stderr, (command, read.stderr[-2000:])
    resumed = evaluate(path, "--resume", executor=executor)  # reads the run's own file back
    assert ran_cleanly(resumed)["attempts"] == len(ids)
    assert snapshot(path.parent, exclude=(EVAL,)) == before


def test_a_transcript_with_a_lone_surrogate_is_kept_and_read_back(tmp_path):
    pipeline = (
        "def run(task, adapter):\n"
        "    return {'output': 'x', 'messages': [{'role': 'user', 'content': 'hi \\udc80 there'}, 'bare \\ud800']}\n"
    )
    path = workspace(tmp_path, ["a", "b"], pipeline)
    payload = ran_cleanly(evaluate(path))
    assert payload["attempts"] == 2 and payload["errors"] == 0  # the run did not end at the first transcript
    sidecar = path.parent / EVAL / "transcripts.jsonl"
    lines = [json.loads(line) for line in sidecar.read_bytes().decode("utf-8").splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert line["messages"] == [{"role": "user", "content": "hi \ufffd there"}, "bare \ufffd"]
        assert line["replaced_surrogates"] is True
    shown = hermit_tui("show", "--config", str(path), "--adapter", "none", "--task", "a")
    assert shown.returncode == 0 and "hi \ufffd there" in shown.stdout, shown.stderr[-2000:]


NUMBERS = [
    # (name, pipeline's return, judge's return, status, what the error names)
    ("costs of 1e308", "{'output': 'x', 'cost_usd': 1e308}", "1.0", "error", "cost_usd"),
    ("costs of -1e308", "{'output': 'x', 'cost_usd': -1e308}", "1.0", "error", "cost_usd"),
    ("scores of 1e308", "{'output': 'x'}", "1e308", "judge_error", "score"),
    ("scores of -1.7e308", "{'output': 'x'}", "{'score': -1.7e308}", "judge_error", "score"),
    ("wall times of 1e308", "{'output': 'x', 'wall_s': 1e308}", "1.0", "error", "wall_s"),
    ("a NaN score", "{'output': 'x'}", "float('nan')", "judge_error", "score"),
    ("an infinite score", "{'output': 'x'}", "float('inf')", "judge_error", "score"),
    ("a negative infinite score", "{'output': 'x'}", "{'score': -float('inf')}", "judge_error", "score"),
    ("a NaN cost", "{'output': 'x', 'cost_usd': float('nan')}", "1.0", "error", "cost_usd"),
    ("an infinite cost", "{'output': 'x', 'cost_usd': float('inf')}", "1.0", "error", "cost_usd"),
]


# the overflowing ones under both executors; NaN and infinity (checked before, by tests/test_hostile.py for costs)
# under threads only (below)


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_numbers_whose_sums_overflow_are_each_attempts_error(executor, tmp_path):
    """Two attempts each reporting 1e308 would sum to infinity: each is refused as that attempt's error; the run
    goes on and its summary counts every attempt. Every case of NUMBERS (under processes, the overflowing ones) in one
    launch: tasks ``c<i>-big1`` and ``c<i>-big2`` report case i's numbers, task ``ok`` fine ones."""
    cases = [case for case in NUMBERS if executor == "threads" or "e308" in case[0]]
    pipeline = (
        "def run(task, adapter):\n"
        + "".join(
            f"    if task['id'].startswith('c{i}-'):\n        return {returned}\n"
            for i, (_, returned, *_) in enumerate(cases)
        )
        + "    return {'output': 'fine', 'cost_usd': 0.25}\n"
    )
    judge = (
        "def score(task, output):\n"
        + "".join(
            f"    if task['id'].startswith('c{i}-'):\n        return {verdict}\n"
            for i, (_, _, verdict, *_) in enumerate(cases)
        )
        + "    return 1.0\n"
    )
    ids = [f"c{i}-big1" for i in range(len(cases))] + ["ok"] + [f"c{i}-big2" for i in range(len(cases))]
    path = workspace(tmp_path, ids, pipeline, judge)
    before = snapshot(path.parent)
    payload = ran_cleanly(evaluate(path, executor=executor))
    assert payload["attempts"] == len(ids) and payload["errors"] == 2 * len(cases) and payload["complete"] is True
    assert math.isclose(payload["mean_score"], 1 / len(ids))
    summary = json.loads((path.parent / EVAL / "summary.json").read_text(), parse_constant=_refuse)
    assert summary["attempts"] == len(ids)
    rows = rows_of(path.parent)
    for i, (name, _, _, status, needle) in enumerate(cases):
        for big in (f"c{i}-big1", f"c{i}-big2"):
            assert rows[big]["status"] == status and needle in rows[big]["error"], (name, rows[big])
            assert "\n" not in rows[big]["error"]
            if status == "judge_error":
                assert rows[big]["output"] == "x"  # the pipeline's work is kept
    assert rows["ok"]["status"] == "ok" and rows["ok"]["cost_usd"] == 0.25
    assert snapshot(path.parent, exclude=(EVAL,)) == before


def _refuse(token):
    raise ValueError(f"non-standard JSON token {token}")


def test_a_summary_of_another_tools_overflowing_records_says_so_and_stays_json():
    """hermit writes what its pipeline returned: two costs of 1e308 in its results.jsonl sum to infinity. The summary
    hermit-tui computes from them names the overflow and writes the cost as null (unknown), never Infinity."""
    from hermit_tui.core.records.results import AttemptRecord, Judged, summarize

    records = [
        AttemptRecord(repeat=1, id=i, status="ok", judge=Judged(score=1e308, extra={}), cost_usd=1e308)
        for i in ("a", "b")
    ]
    summary = summarize(records, adapter="none", commit=None, task_ids=["a", "b"], repeats=1, wall_s=0)
    assert summary.cost_usd is None and summary.known_cost_usd is None
    assert summary.overflowed == ["cost_usd"]
    assert summary.mean_score == 1e308  # the mean of finite scores is finite
    data = json.loads(summary.to_json(), parse_constant=_refuse)
    assert data["overflowed"] == ["cost_usd"] and data["cost_usd"] is None


def test_the_files_eval_writes_load_as_hermit_reads_json(tmp_path):
    """hermit-harness 0.1.0 has no reader of eval files of its own; it reads JSON with the standard library, strict
    UTF-8 text: the files written after every case above load that way (checked here on the hardest mix)."""
    import hermit  # the real hermit-harness, installed by the test extra

    assert hermit.__name__ == "hermit"
    pipeline = (
        "def run(task, adapter):\n"
        "    if task['id'] == 'big':\n        return {'output': 'x', 'cost_usd': 1e308}\n"
        "    return {'output': 'caf\\udce9', 'cost_usd': 0.5, 'messages': ['\\ud83d\\ude00 \\udc80']}\n"
    )
    path = workspace(tmp_path, ["big", "text"], pipeline)
    ran_cleanly(evaluate(path))
    folder = path.parent / EVAL
    for name in ("results.jsonl", "summary.json", "transcripts.jsonl"):
        text = (folder / name).read_text(encoding="utf-8", errors="strict")
        for part in text.splitlines() if name.endswith(".jsonl") else [text]:
            json.loads(part, parse_constant=_refuse)
    rows = rows_of(path.parent)
    assert rows["text"]["output"] == "caf\ufffd"
    sidecar = json.loads((folder / "transcripts.jsonl").read_text().splitlines()[0])
    assert sidecar["messages"] == ["\U0001f600 \ufffd"]  # a pair is its character, a lone one U+FFFD


SLOW = """
import pathlib, time
def run(task, adapter):
    pathlib.Path({marks!r}, task["id"]).touch()
    time.sleep(0.4)  # the scenario: attempts still running when the interrupt comes
    return {{"output": task["id"], "cost_usd": 0.01}}
"""


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_a_real_ctrl_c_still_stops_the_run_and_resume_completes_it(executor, tmp_path):
    """The user's SIGINT is not a pipeline's KeyboardInterrupt: it stops scheduling (exit 1, the summary
    incomplete, no attempt recorded as an error for it), and --resume runs every missing attempt once."""
    marks = tmp_path / "marks"
    marks.mkdir()
    ids = [f"t{i}" for i in range(8)]
    path = workspace(tmp_path, ids, SLOW.format(marks=str(marks)), concurrency=1)
    command = [sys.executable, "-m", "hermit_tui", "eval", "--config", str(path), "--adapter", "none"]
    proc = interruptible_popen(
        [*command, "--executor", executor], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_until(lambda: alive(proc) and len(list(marks.iterdir())) >= 2, what="two attempts to start")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=LIMIT_S)
    finally:
        proc.kill()
    assert proc.returncode == 1 and "cancel" in stderr and "Traceback" not in stderr, stderr[-2000:]
    summary = json.loads((path.parent / EVAL / "summary.json").read_text())
    assert summary["complete"] is False and 1 <= summary["attempts"] < len(ids)
    recorded = rows_of(path.parent)
    assert all(r["status"] == "ok" for r in recorded.values()), recorded  # nothing became a KeyboardInterrupt error
    payload = ran_cleanly(evaluate(path, "--resume", executor=executor))
    assert payload["attempts"] == len(ids) and payload["errors"] == 0 and payload["complete"] is True
    assert sorted(rows_of(path.parent)) == ids  # every attempt once


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_launch_started_with_sigint_ignored_keeps_ignoring_it(tmp_path):
    """nohup, or a job started in the background of a script, starts eval with SIGINT ignored: a SIGINT mid-run
    then changes nothing (eval installs no handler of its own over the ignore), and the launch completes."""
    marks = tmp_path / "marks"
    marks.mkdir()
    ids = [f"t{i}" for i in range(6)]
    path = workspace(tmp_path, ids, SLOW.format(marks=str(marks)), concurrency=1)
    command = [sys.executable, "-m", "hermit_tui", "eval", "--config", str(path), "--adapter", "none"]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ignore_sigint
    )
    try:
        wait_until(lambda: alive(proc) and len(list(marks.iterdir())) >= 2, what="two attempts to start")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=LIMIT_S)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "cancel" not in stderr and "Traceback" not in stderr, stderr[-2000:]
    payload = json.loads(stdout)
    assert payload["attempts"] == len(ids) and payload["complete"] is True and payload["errors"] == 0
    assert sorted(rows_of(path.parent)) == ids
