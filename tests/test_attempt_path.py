"""The per-attempt path made cheap (issue: engine overhead) keeps issue 12's guarantees.

- the pool of attempt threads (core.run.threads): a free thread for every attempt, abandoned threads leave the
  pool and are replaced, their late results are dropped, every thread is a daemon, context and BaseException as a
  thread of its own had them;
- the JSON checks that skip json.dumps for plain values answer exactly as json.dumps does;
- the results line encoded once in the attempt's thread is the line the record encodes to when written;
- the fast copy of task rows is a deep copy.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermit_tui.core.records.results import AttemptRecord, Judged
from hermit_tui.core.run import threads as attempt_threads
from hermit_tui.core.run.attempts import Attempt, fresh_copy, json_problem, judge_output, run_attempt
from hermit_tui.core.run.threads import AttemptThreads

WAIT_S = 20  # a guard against a hang, never a speed assertion


# -- the pool of attempt threads ----------------------------------------------------------------------------------
async def test_results_exceptions_and_system_exit_reach_the_waiting_coroutine():
    pool = AttemptThreads()
    squares = [pool.submit(lambda i: i * i, i)[0] for i in range(200)]
    assert await asyncio.gather(*squares) == [i * i for i in range(200)]

    def fails():
        raise ValueError("no")

    def exits():
        raise SystemExit(3)

    with pytest.raises(ValueError, match="no"):
        await pool.submit(fails)[0]
    with pytest.raises(RuntimeError, match="^SystemExit: 3$"):  # never SystemExit on the event loop
        await pool.submit(exits)[0]
    pool.close()


async def test_an_attempt_runs_in_a_copy_of_the_submitting_context():
    var: contextvars.ContextVar[str] = contextvars.ContextVar("which", default="unset")
    pool = AttemptThreads()
    token = var.set("first")
    first = pool.submit(var.get)[0]
    var.reset(token)
    second = pool.submit(var.get)[0]
    assert await first == "first" and await second == "unset"
    pool.close()


async def test_every_attempt_gets_a_free_thread_at_once_and_threads_are_daemons():
    """Five attempts that each wait for all five to have started: they can only finish if none waited for a
    thread."""
    pool = AttemptThreads()
    barrier = threading.Barrier(5, timeout=WAIT_S)
    names: list[str] = []

    def meet() -> bool:
        names.append(threading.current_thread().name)
        barrier.wait()  # BrokenBarrierError (the attempt's failure) if one of the five never started
        return threading.current_thread().daemon

    futures = [pool.submit(meet)[0] for _ in range(5)]
    assert await asyncio.gather(*futures) == [True] * 5
    assert len(set(names)) == 5 and pool.size == 5
    # finished threads are reused: five more attempts start no new thread
    assert await asyncio.gather(*(pool.submit(lambda: 1)[0] for _ in range(5))) == [1] * 5
    assert pool.size == 5
    pool.close()


async def test_an_abandoned_thread_leaves_the_pool_is_replaced_and_its_late_result_is_dropped():
    pool = AttemptThreads()
    release, started = threading.Event(), threading.Event()

    def hangs() -> str:
        started.set()
        release.wait(WAIT_S)
        return "late"

    future, job = pool.submit(hangs)
    assert await asyncio.to_thread(started.wait, WAIT_S)
    future.cancel()  # what wait_for does at the timeout
    hung = pool.abandon(job)
    assert hung is not None and hung.is_alive() and hung.daemon and pool.size == 0
    # a healthy attempt is not held up by the hung one: a new thread takes it
    assert await pool.submit(lambda: "healthy")[0] == "healthy"
    assert pool.size == 1 and hung.is_alive()
    release.set()
    await asyncio.to_thread(hung.join, WAIT_S)
    assert not hung.is_alive()  # it ended instead of serving more attempts
    assert await pool.submit(lambda: "again")[0] == "again" and pool.size == 1
    pool.close()


async def test_an_attempt_given_up_before_a_thread_took_it_never_runs(monkeypatch):
    pool = AttemptThreads()
    start_thread = pool._start_thread
    monkeypatch.setattr(pool, "_start_thread", lambda: None)  # hold every thread back
    ran: list[str] = []
    _, job = pool.submit(ran.append, "dropped")
    assert pool.abandon(job) is None  # nothing was running it: no thread to count as hung
    start_thread()
    done, _ = pool.submit(ran.append, "kept")
    await done
    assert ran == ["kept"]
    pool.close()


async def test_a_result_handed_back_after_the_loop_gave_up_on_it_is_ignored():
    """A forced cancel cancels the future; the thread's result must not raise InvalidStateError on the loop."""
    pool = AttemptThreads()
    go = threading.Event()
    future, _ = pool.submit(go.wait, WAIT_S)
    future.cancel()
    go.set()
    assert await pool.submit(lambda: "next")[0] == "next"  # the drain went past the cancelled one
    assert future.cancelled()
    pool.close()


def test_a_hung_attempt_does_not_keep_the_process_alive(tmp_path):
    """The command exits after its last attempt while a thread of the pool still hangs (daemon threads)."""
    import subprocess
    import sys

    script = tmp_path / "hang.py"
    script.write_text(
        "import asyncio, threading\n"
        "from hermit_tui.core.run.threads import AttemptThreads\n"
        "async def main():\n"
        "    pool = AttemptThreads()\n"
        "    future, job = pool.submit(threading.Event().wait)\n"
        "    try:\n"
        "        await asyncio.wait_for(future, 0.05)\n"
        "    except TimeoutError:\n"
        "        print('abandoned', pool.abandon(job) is not None, flush=True)\n"
        "    print(await pool.submit(lambda: 'healthy')[0], flush=True)\n"
        "    pool.close()\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["abandoned", "True", "healthy"]


def test_the_threads_never_import_the_ui():
    assert "textual" not in Path(attempt_threads.__file__).read_text()


# -- return values that cannot be written: the same one-line errors ---------------------------------------------
def _attempt() -> Attempt:
    return Attempt("none", {"id": "t1", "q": [1, {"a": 2}]}, 1, None)


def _dumps_error(value) -> str:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return " ".join(str(exc).split())[:200]
    raise AssertionError(f"{value!r} is JSON")


class Opaque:
    pass


@pytest.mark.parametrize(
    "output",
    [
        float("nan"),
        [1.0, float("inf")],
        {"k": Opaque()},
        {1: "int key", 2: {3}},
        Opaque(),
        {"deep": [[float("-inf")]]},
        10**5000,
    ],
    ids=["nan", "inf-in-list", "object-in-dict", "set", "object", "deep-inf", "huge-int"],
)
def test_an_output_that_cannot_be_written_is_the_attempts_error_with_the_json_message(output):
    judged: list[object] = []

    def judge(task, out) -> float:
        judged.append(out)
        return 1.0

    record, tb = judge_output(judge, _attempt(), {"output": output}, 0.0)
    assert record.status == "error" and tb is None and judged == []  # the judge never saw it
    assert record.error == f"TypeError: the pipeline's output cannot be written as JSON ({_dumps_error(output)})"
    assert "\n" not in record.error
    json.loads(record.take_line())  # the error record itself is written


def test_a_judge_extra_that_cannot_be_written_is_a_judge_error_with_the_json_message():
    extra = {"ratio": float("nan")}
    record, tb = judge_output(
        lambda task, out: {"score": 1.0, **extra}, _attempt(), {"output": "x", "cost_usd": 0.5}, 0.0
    )
    assert record.status == "judge_error" and tb
    assert record.error == f"TypeError: the judge's extra cannot be written as JSON ({_dumps_error(extra)})"
    assert record.output == "x" and record.cost_usd == 0.5


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from([10**400, float("nan"), float("inf"), Opaque(), {1, 2}, b"x", (1, 2)])
    | st.builds(lambda: -(10**5000)),  # too many digits for int-to-text (built: hypothesis shows the sample list)
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_the_fast_json_check_answers_as_json_dumps_does(value):
    try:
        json.dumps(value, allow_nan=False)
        expected = None
    except (TypeError, ValueError):
        expected = "problem"
    assert (json_problem(value) is None) == (expected is None)


# -- the results line, encoded once -------------------------------------------------------------------------------
def test_the_line_kept_from_the_check_is_the_line_the_record_encodes_to():
    record, _ = run_attempt(
        lambda task, adapter: {"output": {"answer": [1, 2.5, None]}, "cost_usd": 0.25, "tokens": {"in": 3}},
        lambda task, out: {"score": 0.5, "feedback": "half", "why": "x"},
        _attempt(),
    )
    kept = record._line
    assert kept is not None and record.take_line() == kept and record._line is None
    expected = (
        json.dumps(
            {
                "repeat": 1,
                "id": "t1",
                "status": "ok",
                "error": None,
                "output": {"answer": [1, 2.5, None]},
                "judge": {"score": 0.5, "feedback": "half", "extra": {"why": "x"}},
                "cost_usd": 0.25,
                "wall_s": record.wall_s,
                "api_speed": None,
                "tokens": {"in": 3},
                "log": None,
            }
        )
        + "\n"
    )
    assert kept == expected.encode()  # hermit's keys, in hermit's order, as json.dumps writes them


def test_setting_a_field_after_encoding_drops_the_kept_line():
    record = AttemptRecord(repeat=1, id="a", status="ok", judge=Judged(score=1.0))
    record.encode_line()
    record.error = "changed"
    assert json.loads(record.take_line())["error"] == "changed"


def test_a_run_writes_the_lines_its_records_encode_to(tmp_path):
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": f"t{i}", "n": i}) + "\n" for i in range(6)))
    (tmp_path / "test.txt").write_text("".join(f"t{i}\n" for i in range(6)))
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(
        "def run(task, adapter):\n"
        "    if task['n'] == 4:\n        return {'output': float('nan')}\n"
        "    return {'output': {'n': task['n']}, 'cost_usd': task['n'] / 10}\n"
    )
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return task['n'] % 2\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 3}\njudge: {path: judge.py}\ntrainer: {run_name: t, tree_dir: tree}\n"
    )
    seen: list[AttemptRecord] = []
    from hermit_tui.core.run import events as ev

    run = EvalRun(
        load_config(tmp_path / "run.yaml"),
        ["none"],
        repeats=2,
        on_event=lambda e: seen.append(e.record) if isinstance(e, ev.AttemptFinished) else None,
    )
    run.run_sync()
    lines = (tmp_path / "runs/t/eval/none/results.jsonl").read_text().splitlines(keepends=True)
    assert sorted(lines) == sorted(r.to_json_line() for r in seen) and len(lines) == 12
    assert all(r._line is None for r in seen)  # the dashboard's records keep no encoded line
    rows = [json.loads(line) for line in lines]
    assert sum(r["status"] == "error" for r in rows) == 2  # t4, both repeats: its NaN output
    assert {r["id"]: r["judge"]["score"] for r in rows if r["status"] == "ok"} == {
        "t0": 0,
        "t1": 1,
        "t2": 0,
        "t3": 1,
        "t5": 1,
    }


# -- task rows copied for the pipeline and the judge --------------------------------------------------------------
def _shares_mutable(a, b) -> bool:
    if isinstance(a, (dict, list, set)) and a is b:
        return True
    if isinstance(a, dict):
        return any(_shares_mutable(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return any(_shares_mutable(x, y) for x, y in zip(a, b, strict=True))
    return False


def test_a_task_row_is_copied_deeply():
    row: dict[str, Any] = {
        "id": "t1",
        "n": 1.5,
        "ok": True,
        "none": None,
        "nested": {"list": [1, [2, {"x": "y"}]]},
        "tags": {"a", "b"},
        "path": Path("/tmp/x"),
    }
    copied = fresh_copy(row)
    assert copied == row == copy.deepcopy(row)
    assert not _shares_mutable(row, copied) and copied["tags"] is not row["tags"]
    copied["nested"]["list"][1][1]["x"] = "changed"
    assert row["nested"]["list"][1][1]["x"] == "y"


def test_a_row_that_holds_itself_is_still_copied():
    row: dict = {"id": "loop"}
    row["self"] = row
    copied = fresh_copy(row)
    assert copied is not row and copied["self"] is copied  # deepcopy's memo keeps the cycle


def test_the_pipeline_and_the_judge_each_get_their_own_copy():
    attempt = _attempt()
    rows: list[dict] = []

    def pipeline(task, adapter):
        rows.append(task)
        task["q"][1]["a"] = "pipeline"
        return {"output": 1}

    def judge(task, out):
        rows.append(task)
        return 1.0 if task["q"][1]["a"] == 2 else 0.0

    record, _ = run_attempt(pipeline, judge, attempt)
    assert record.judge.score == 1.0 and attempt.task == {"id": "t1", "q": [1, {"a": 2}]}
    assert rows[0] is not rows[1] and not math.isnan(record.judge.score)
