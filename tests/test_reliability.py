"""Nothing lost: a killed run resumes without losing or repeating attempts, locks, isolation, disk full."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from demo_copies import copy_workspace
from waiting import wait_until

from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def demo(demo_template, tmp_path):
    """A private copy of the demo built once per session (building one is git work: a second or more)."""
    return copy_workspace(demo_template, tmp_path / "demo")


def test_sigkill_mid_run_then_resume_loses_and_repeats_nothing(demo):
    eval_dir = demo.parent / "runs" / "demo" / "eval"
    args = [
        sys.executable,
        "-m",
        "hermit_tui",
        "eval",
        "--config",
        str(demo),
        "--adapter",
        "none",
        "--adapter",
        "root",
        "eval.repeats=2",
        "agent.params.latency_scale=0.3",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    results = eval_dir / "none" / "results.jsonl"
    wait_until(lambda: results.exists() and len(results.read_text().splitlines()) >= 6, what="six attempts recorded")
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    before = {label: lines_of(eval_dir / label / "results.jsonl") for label in ("none", "root")}
    assert 0 < len(before["none"]) < 32
    interrupted = json.loads((eval_dir / "none" / "summary.json").read_text())
    assert interrupted["complete"] is False and "in_progress" in interrupted  # never read as finished
    assert (eval_dir / "none" / ".hermit-tui.lock").exists()  # left behind by the killed process

    out = subprocess.run(args + ["--resume"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "took over the lock" in out.stderr
    for label in ("none", "root"):
        after = lines_of(eval_dir / label / "results.jsonl")
        keys = Counter((r["id"], r["repeat"]) for r in after)
        assert len(keys) == 32 and max(keys.values()) == 1  # every attempt once: none lost, none repeated
        by_key = {(r["id"], r["repeat"]): r for r in after}
        for old in before[label]:  # what was recorded before the kill is kept as it was, not re-run
            assert by_key[(old["id"], old["repeat"])] == old
        summary = json.loads((eval_dir / label / "summary.json").read_text())
        assert summary["complete"] is True and "in_progress" not in summary
        assert summary["mean_score"] == pytest.approx(sum(r["judge"]["score"] for r in after) / 32)
        assert not (eval_dir / label / ".hermit-tui.lock").exists()


def test_resume_refuses_another_protocol(demo):
    config = load_config(demo, ["agent.params.latency_scale=0.01"])
    EvalRun(config, ["none"], repeats=1, limit=4).run_sync()
    with pytest.raises(InputError, match=r"repeats 1 -> 2"):
        EvalRun(config, ["none"], repeats=2, limit=4, resume=True)


def test_a_live_lock_refuses_and_names_the_process(demo):
    config = load_config(demo, ["agent.params.latency_scale=0.01"])
    folder = config.run_dir / "eval" / "none"
    folder.mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (folder / ".hermit-tui.lock").write_text(
            json.dumps({"pid": sleeper.pid, "host": os.uname().nodename, "started_at": "2026-11-29T10:00:00+00:00"})
        )
        with pytest.raises(InputError, match=rf"process {sleeper.pid}"):
            EvalRun(config, ["none"], repeats=1).run_sync()
        assert not (folder / "results.jsonl").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    # the same lock, now of a dead process, is taken over
    summary = EvalRun(config, ["none"], repeats=1).run_sync()["none"]
    assert summary.complete and not (folder / ".hermit-tui.lock").exists()


CRASHY = """
import os, signal, sys, time
def run(task, adapter):
    kind = task["id"]
    if kind == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "exit":
        sys.exit(3)
    if kind == "hardexit":
        os._exit(7)
    if kind == "hang":
        time.sleep(60)  # the scenario: an attempt that never returns (the timeout ends it)
    return {"output": kind, "cost_usd": 0.01}
"""


def crashy_workspace(tmp_path: Path) -> Path:
    ids = ["ok1", "segv", "exit", "hardexit", "hang", "ok2"]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    (tmp_path / "test.txt").write_text("\n".join(ids) + "\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(CRASHY)
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return 1.0\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 2, timeout_min: 0.03}\njudge: {path: judge.py}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    return tmp_path / "run.yaml"


def test_process_isolation_records_crashes_and_kills_hung_attempts(tmp_path):
    config = load_config(crashy_workspace(tmp_path))
    started = time.monotonic()
    summary = EvalRun(config, ["none"], executor="processes").run_sync()["none"]
    assert time.monotonic() - started < 30  # the hung attempt was killed at its timeout, not waited for
    rows = {r["id"]: r for r in lines_of(tmp_path / "runs/t/eval/none/results.jsonl")}
    assert rows["ok1"]["status"] == rows["ok2"]["status"] == "ok"
    assert "SIGSEGV" in rows["segv"]["error"]
    assert rows["exit"]["error"] == "SystemExit: 3"
    assert "exited with code 7" in rows["hardexit"]["error"]
    assert "timeout_min" in rows["hang"]["error"] and "killed" in rows["hang"]["error"]
    assert summary.errors == 4 and summary.attempts == 6 and summary.executor == "processes"


def test_sys_exit_in_a_thread_pipeline_is_an_error_attempt(tmp_path):
    path = crashy_workspace(tmp_path)
    (tmp_path / "test.txt").write_text("ok1\nexit\nok2\n")
    summary = EvalRun(load_config(path), ["none"]).run_sync()["none"]
    rows = {r["id"]: r for r in lines_of(tmp_path / "runs/t/eval/none/results.jsonl")}
    assert rows["exit"]["status"] == "error" and rows["exit"]["error"] == "SystemExit: 3"
    assert summary.attempts == 3 and summary.errors == 1


def test_disk_full_stops_cleanly_and_keeps_whole_lines(demo, monkeypatch):
    from hermit_tui.core.records import journal as journal_mod

    config = load_config(demo, ["agent.params.latency_scale=0.01"])
    real_append = journal_mod.SelectorJournal.append
    calls = {"n": 0}

    def filling_up(self, record):
        calls["n"] += 1
        if self.broken is not None:  # after the failure the journal refuses on its own (an attempt still in flight)
            return real_append(self, record)
        if calls["n"] > 5:
            # half a line reaches the file, then the disk is full
            self._lines.fh.write(record.to_json_line().encode()[:20])
            self._lines.fh.flush()
            original = self._lines.fh.write

            def boom(data):
                raise OSError(errno.ENOSPC, "No space left on device")

            self._lines.fh.write = boom
            try:
                return real_append(self, record)
            finally:
                if self._lines.fh is not None:
                    self._lines.fh.write = original
        return real_append(self, record)

    monkeypatch.setattr(journal_mod.SelectorJournal, "append", filling_up)
    with pytest.raises(RunFailed, match="No space left"):
        EvalRun(config, ["none"], repeats=1, concurrency=1).run_sync()
    results = (config.run_dir / "eval" / "none" / "results.jsonl").read_text()
    assert results.endswith("\n") and len(lines_of(config.run_dir / "eval" / "none" / "results.jsonl")) == 5
    summary = json.loads((config.run_dir / "eval" / "none" / "summary.json").read_text())
    assert summary["complete"] is False and summary["attempts"] == 5


def test_resume_refuses_when_the_judge_changed(demo):
    config = load_config(demo, ["agent.params.latency_scale=0.01"])
    EvalRun(config, ["none"], repeats=1, limit=3).run_sync()
    judge = demo.parent / "judge.py"
    judge.write_text(judge.read_text() + "\n# edited after the evaluation\n")
    with pytest.raises(InputError, match="the judge's source"):
        EvalRun(config, ["none"], repeats=1, limit=3, resume=True)


def test_an_executor_that_cannot_start_leaves_earlier_evaluations_in_place(demo, monkeypatch):
    """E.g. a Ray cluster that cannot be reached: nothing is archived, nothing is written."""
    from hermit_tui.core.run import executors

    config = load_config(demo, ["agent.params.latency_scale=0.01"])
    EvalRun(config, ["none"], repeats=1, limit=2).run_sync()
    folder = config.run_dir / "eval" / "none" / "smoke"  # --limit: the smoke folder
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert "results.jsonl" in before and "summary.json" in before

    async def cannot_start(self):
        raise InputError("the cluster at 10.0.0.1:6379 cannot be reached")

    monkeypatch.setattr(executors.ThreadExecutor, "start", cannot_start)
    with pytest.raises(InputError, match="cannot be reached"):
        EvalRun(config, ["none"], repeats=1, limit=2).run_sync()
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert not (folder / "archive").exists() and not (folder / ".hermit-tui.lock").exists()
