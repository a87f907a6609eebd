"""The processes executor's workers are warm: each imports the pipeline once, before it is handed its first attempt,
so a slow import is never counted against an attempt's timeout, and a worker whose import fails or hangs makes its
attempts errors that say so (core/run/process_executor.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from waiting import wait_until

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

IDS = ["a", "b", "c", "d", "e", "f"]

#: The worker processes (never the driver, which imports the pipeline too, to check it) note their import and take
#: IMPORT_S to import; each attempt takes ATTEMPT_S. The timeout (3 s) is above each but below their sum: a worker
#: that imported inside its first attempt's timeout would time that attempt out.
PIPELINE = """\
import multiprocessing, os, time
from pathlib import Path
IN_WORKER = multiprocessing.current_process().name == "hermit-tui-worker"
if IN_WORKER:
    with open(Path(__file__).with_name("imports.log"), "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    time.sleep({import_s})
def run(task, adapter):
    time.sleep({attempt_s})
    return {{"output": str(os.getpid()), "cost_usd": 0.0}}
"""


def workspace(tmp_path: Path, *, import_s: float, attempt_s: float, timeout_min: float | str = 0.05) -> Path:
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in IDS))
    (tmp_path / "test.txt").write_text("\n".join(IDS) + "\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(PIPELINE.format(import_s=import_s, attempt_s=attempt_s))
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return 1.0\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        f"agent: {{name: pipe.py:run, concurrency: 2, timeout_min: {timeout_min}}}\njudge: {{path: judge.py}}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    return tmp_path / "run.yaml"


def rows(tmp_path: Path) -> list[dict]:
    path = tmp_path / "runs" / "t" / "eval" / "none" / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_worker_imports_the_pipeline_once_and_its_import_is_not_an_attempts_time(tmp_path):
    config = load_config(workspace(tmp_path, import_s=2.0, attempt_s=1.5))
    summary = EvalRun(config, ["none"], executor="processes").run_sync()["none"]
    got = rows(tmp_path)
    assert [r["status"] for r in got] == ["ok"] * len(IDS), [r["error"] for r in got]
    assert summary.errors == 0 and summary.attempts == len(IDS)
    imports = (tmp_path / "imports.log").read_text().split()
    assert len(imports) == len(set(imports)) == 2  # two workers, one import each: none per attempt, no replacement
    assert {r["output"] for r in got} == set(imports)  # every attempt ran in one of those two warm workers


def test_a_worker_whose_import_outlasts_the_timeout_makes_its_attempts_errors_that_say_so(tmp_path):
    config = load_config(workspace(tmp_path, import_s=5.0, attempt_s=0.0, timeout_min=0.02))  # 1.2 s
    summary = EvalRun(config, ["none"], executor="processes").run_sync()["none"]
    got = rows(tmp_path)
    assert summary.errors == len(IDS) == len(got)
    assert all("did not load the pipeline within agent.timeout_min" in r["error"] for r in got), got[0]["error"]


def test_a_forced_cancel_ends_a_launch_whose_workers_never_finish_importing(tmp_path):
    """No timeout bounds the workers' import here (it never ends): a forced cancel still ends the launch, the
    loading workers killed rather than waited for."""
    config = load_config(workspace(tmp_path, import_s=3600.0, attempt_s=0.0, timeout_min="null"))
    run = EvalRun(config, ["none"], executor="processes")
    done = threading.Event()
    result: dict = {}

    def launch() -> None:
        try:
            result["summary"] = run.run_sync()["none"]
        finally:
            done.set()

    threading.Thread(target=launch, daemon=True).start()
    log = tmp_path / "imports.log"
    wait_until(lambda: log.exists() and len(log.read_text().split()) == 2, what="both workers importing")
    run.cancel(force=True)
    wait_until(done.is_set, what="the launch to end after the forced cancel")
    summary = result["summary"]
    assert summary.attempts == 0 and summary.complete is False


def test_workers_that_cannot_be_started_make_their_attempts_errors(tmp_path, monkeypatch):
    from hermit_tui.core.run import process_executor

    def refuse(self, *args):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(process_executor._Worker, "__init__", refuse)
    config = load_config(workspace(tmp_path, import_s=0.0, attempt_s=0.0))
    summary = EvalRun(config, ["none"], executor="processes").run_sync()["none"]
    got = rows(tmp_path)
    assert summary.errors == summary.attempts == len(IDS) == len(got)
    assert all("could not be started" in r["error"] and "Resource temporarily" in r["error"] for r in got)


PARENT = """\
import os, time
def run(task, adapter):
    time.sleep(0.05)
    return {"output": f"{os.getppid()} {task['id']}", "cost_usd": 0.0}
"""


def test_workers_are_forked_from_a_single_threaded_driver_and_come_from_the_forkserver_otherwise(tmp_path, monkeypatch):
    """A driver with one thread forks its workers itself as the launch is built (no fresh interpreter to start);
    one with other threads running (the dashboard; here pytest-xdist's) takes them from the forkserver. Either way
    every attempt runs in a worker and records the same thing."""
    import os

    from hermit_tui.core.run import process_executor

    outputs = {}
    for forkable in (True, False):
        project = tmp_path / str(forkable)
        project.mkdir()
        (project / "pipe.py").write_text(PARENT)
        run_yaml = workspace(project, import_s=0.0, attempt_s=0.0)
        (project / "pipe.py").write_text(PARENT)
        monkeypatch.setattr(process_executor, "_forkable", lambda forkable=forkable: forkable)
        summary = EvalRun(load_config(run_yaml), ["none"], executor="processes").run_sync()["none"]
        got = rows(project)
        assert summary.errors == 0 and summary.attempts == len(IDS)
        parents = {r["output"].split()[0] for r in got}
        assert len(parents) == 1
        outputs[forkable] = (parents.pop(), sorted(r["output"].split()[1] for r in got))
    assert outputs[True][0] == str(os.getpid())  # the driver's own children
    assert outputs[False][0] != str(os.getpid())  # the forkserver's
    assert outputs[True][1] == outputs[False][1] == sorted(IDS)


PARAMS = """\
import os
def run(task, adapter, params=None):
    return {"output": f"{os.getpid()} {params['tag']}", "cost_usd": 0.0}
"""


def _alive(pid: int) -> bool:
    """``pid`` is a process that has not exited (a zombie, exited but not yet waited for, counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_forked_workers_run_the_config_the_launch_was_built_from_and_all_exit_after_it(tmp_path, monkeypatch):
    """A worker forked from the driver takes the driver's config (run.yaml is not read again: an edit after the
    launch was built changes nothing of it), and once the launch has returned every worker exits, though the launch
    did not wait for their exits."""
    from hermit_tui.core.run import process_executor

    run_yaml = workspace(tmp_path, import_s=0.0, attempt_s=0.0)
    (tmp_path / "pipe.py").write_text(PARAMS)
    text = run_yaml.read_text().replace("concurrency: 2,", "concurrency: 2, params: {tag: built},")
    run_yaml.write_text(text)
    monkeypatch.setattr(process_executor, "_forkable", lambda: True)
    run = EvalRun(load_config(run_yaml), ["none"], executor="processes")
    run_yaml.write_text(text.replace("tag: built", "tag: edited"))  # after the workers were forked
    summary = run.run_sync()["none"]
    got = rows(tmp_path)
    assert summary.errors == 0 and summary.attempts == len(IDS) == len(got)
    assert {r["output"].split()[1] for r in got} == {"built"}
    pids = {int(r["output"].split()[0]) for r in got}
    assert len(pids) == 2 and all(pid != __import__("os").getpid() for pid in pids)
    wait_until(lambda: not any(_alive(pid) for pid in pids), what="every worker to exit after the launch")
