"""The Ray executor on a local Ray cluster (two CPUs, started once for the module): the demo gives the same figures as
the local threads, results stream, cancel keeps finished attempts, a dead worker is an error record (or one retry),
and the task's code reaches the workers through Ray's working_dir, never imported by the driver.

Skipped without Ray (``pip install 'hermit-tui[ray]'``), except the checks that need no cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
from demo_copies import repair_worktree
from waiting import wait_until

from hermit_tui.core.errors import InputError
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.ray_executor import LOST_PREFIX, RayExecutor, check_shippable, pack_adapter, ray_runtime_env
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0.01"]
COMPARED = (
    "mean_score",
    "solved_once",
    "errors",
    "unknown_cost_tasks",
    "cost_usd",
    "tasks",
    "repeats",
    "attempts",
    "complete",
)

# A pipeline beside the demo's: crashes its worker process (os._exit) on the task named by params.crash_task, once
# per attempt when params.marks names a folder (the retry then succeeds), else every time; hangs on params.hang_tasks
# after writing its pid (into params.pids, else params.marks); otherwise the demo's pipeline.
WRAPPER = """\
import os
import time
from pathlib import Path

from pipeline import run as demo_run


def run(task, adapter, params=None, base=None):
    params = params or {}
    tid = str(task["id"])
    if tid in params.get("hang_tasks", []):
        Path(params.get("pids") or params["marks"], tid + ".pid").write_text(str(os.getpid()))
        time.sleep(60)  # the scenario: a hung attempt, which a cancel must end
    if tid == params.get("crash_task"):
        marks = params.get("marks")
        if marks is None:
            os._exit(3)
        mark = Path(marks, tid + ".crashed")
        if not mark.exists():
            mark.write_text("")
            os._exit(3)
    return demo_run(task, adapter, params=params, base=base)
"""


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def comparable(record: dict) -> dict:
    """A record without what differs between two runs or machines: timings, log paths, tracebacks."""
    return {k: v for k, v in record.items() if k not in ("wall_s", "log", "traceback")}


def pipeline_modules(folder: Path) -> list[str]:
    """Modules of this process loaded from ``folder``'s pipeline files."""
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().parent == folder.resolve() and Path(file).name != "judge.py":
            found.append(name)
    return found


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster with two CPUs; each evaluation connects to it as its own Ray job (with its own
    working_dir), as ``--ray-address`` does."""
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    local = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 2, "include_dashboard": False})
    yield local.address
    local.shutdown()


@pytest.fixture(scope="module")
def workspaces(demo_template, tmp_path_factory):
    """A fresh copy of the demo workspace on each call, with the wrapper pipeline beside the demo's."""
    root = tmp_path_factory.mktemp("ray")

    def make(name: str) -> Path:
        dest = root / name
        shutil.copytree(demo_template, dest, symlinks=True)
        repair_worktree(demo_template, dest)
        (dest / "wrapper.py").write_text(WRAPPER)
        return dest

    return make


@pytest.fixture(scope="module")
def demo_runs(cluster, workspaces):
    """The demo's none and final evaluated with local threads (one copy) and with Ray (another copy)."""
    local, remote = workspaces("threads"), workspaces("ray")
    threads = EvalRun(load_config(local / "run.yaml", FAST), ["none", "final"], update_card=False).run_sync()
    seen: dict = {"events": []}

    def on_event(event) -> None:
        seen["events"].append(type(event).__name__)
        if isinstance(event, ev.AttemptFinished) and "first" not in seen:
            results = remote / "runs" / "demo" / "eval" / event.label / "results.jsonl"
            seen["first"] = {"started": seen["events"].count("AttemptStarted"), "lines": len(rows(results))}

    run = EvalRun(
        load_config(remote / "run.yaml", FAST),
        ["none", "final"],
        update_card=False,
        executor="ray",
        ray_address=cluster,
        on_event=on_event,
    )
    ray_summaries = run.run_sync()
    seen["modules"] = pipeline_modules(remote)
    return {
        "local": local,
        "remote": remote,
        "threads": threads,
        "ray": ray_summaries,
        "seen": seen,
        "total": run.total,
    }


def test_the_demo_on_ray_gives_the_local_summaries_and_records(demo_runs):
    for label in ("none", "final"):
        local, remote = demo_runs["threads"][label], demo_runs["ray"][label]
        # sums over records in completion order: equal up to the last bit of a float, whichever executor ran them
        assert {k: getattr(remote, k) for k in COMPARED} == pytest.approx(
            {k: getattr(local, k) for k in COMPARED}, rel=1e-12
        )
        assert remote.complete and remote.attempts == 16 * 3 and remote.executor == "ray"
        a = rows(demo_runs["local"] / "runs/demo/eval" / label / "results.jsonl")
        b = rows(demo_runs["remote"] / "runs/demo/eval" / label / "results.jsonl")
        key = lambda r: (r["id"], r["repeat"])  # noqa: E731
        assert [comparable(r) for r in sorted(b, key=key)] == [comparable(r) for r in sorted(a, key=key)]
    assert demo_runs["ray"]["final"].mean_score > demo_runs["ray"]["none"].mean_score  # the adapter was shipped


def test_results_stream_while_the_run_goes_on(demo_runs):
    seen = demo_runs["seen"]
    assert seen["first"]["lines"] == 1  # on disk as soon as reported
    assert seen["first"]["started"] < demo_runs["total"]  # while most attempts were still to be handed out
    assert seen["events"].count("AttemptFinished") == demo_runs["total"] == 96
    assert seen["events"][-1] == "RunFinished"


def test_the_pipeline_ran_on_the_workers_from_the_shipped_folder_only(demo_runs):
    remote = demo_runs["remote"]
    assert demo_runs["seen"]["modules"] == []  # the driver never imported the pipeline
    logs = [Path(r["log"]) for r in rows(remote / "runs/demo/eval/final/results.jsonl") if r.get("log")]
    assert logs, "the demo pipeline writes a log beside its own folder"
    shipped = {p.parents[2] for p in logs}  # <base>/logs/<adapter sha>/<task>.log: base is the pipeline's folder
    assert len(shipped) == 1
    base = shipped.pop()
    assert not base.is_relative_to(remote)
    assert (base / "pipeline.py").read_bytes() == (remote / "pipeline.py").read_bytes()
    assert not (base / "runs").exists()  # run outputs and the adapter tree are not shipped
    assert not (base / "judge.py").exists()  # the driver judges: the judge stays with it


@pytest.fixture(scope="module")
def judged_on_workers(cluster, workspaces) -> dict:
    """The demo's final evaluated on Ray with the judge on the workers (another copy): its folder and summary. One
    Ray job for the two tests that read it (each job starts its own workers)."""
    folder = workspaces("judge-on-workers")
    summary = EvalRun(
        load_config(folder / "run.yaml", FAST),
        ["final"],
        update_card=False,
        executor="ray",
        ray_address=cluster,
        judge_on_workers=True,
    ).run_sync()["final"]
    return {"folder": folder, "summary": summary}


def test_judging_on_the_workers_keeps_the_task_folder_off_the_driver(judged_on_workers, demo_runs):
    folder, summary = judged_on_workers["folder"], judged_on_workers["summary"]
    assert summary.mean_score == pytest.approx(demo_runs["threads"]["final"].mean_score, rel=1e-12)
    assert summary.errors == demo_runs["threads"]["final"].errors
    assert str(folder) not in sys.path and str(folder.resolve()) not in sys.path
    files = [getattr(m, "__file__", None) for m in list(sys.modules.values())]  # built-in modules have none
    assert not any(f is not None and Path(f).resolve().is_relative_to(folder.resolve()) for f in files)


def test_trajectories_come_back_from_the_workers_whoever_judges(judged_on_workers, demo_runs):
    """RunOutput.messages crosses from the Ray workers to the driver's transcripts.jsonl, as with local threads."""

    def sidecar(folder: Path, label: str) -> dict:
        return {
            (r["id"], r["repeat"]): r["messages"] for r in rows(folder / "runs/demo/eval" / label / "transcripts.jsonl")
        }

    local = sidecar(demo_runs["local"], "final")
    assert len(local) == 16 * 3 - 3  # every attempt but the pipeline's failures
    assert sidecar(demo_runs["remote"], "final") == local  # the driver judged
    # the workers judged: the record and the trajectory came back together
    folder = judged_on_workers["folder"]
    assert sidecar(folder, "final") == local
    recorded = rows(folder / "runs/demo/eval/final/results.jsonl")
    assert set(local) == {(r["id"], r["repeat"]) for r in recorded if r["status"] != "error"}


def test_force_cancel_keeps_finished_attempts_and_cancels_the_cluster_work(cluster, workspaces, tmp_path):
    """Ray initialised by the caller (as a notebook would): the run uses that connection and leaves it open, so
    the hung attempts stop because their Ray tasks were cancelled, not because the job ended."""
    import ray

    folder = workspaces("cancel")
    marks = tmp_path / "marks"
    marks.mkdir()
    hang = (folder / "test.txt").read_text().split()[:2]
    config = load_config(
        folder / "run.yaml",
        [
            *FAST,
            "agent.name=wrapper.py:run",
            f"agent.params.marks={marks}",
            f"agent.params.hang_tasks=[{','.join(hang)}]",
        ],
    )
    finished: list[tuple[str, int]] = []

    def on_event(event) -> None:
        if isinstance(event, ev.AttemptFinished):
            finished.append((event.record.id, event.record.repeat))

    def cancel_when_both_hang() -> None:  # and a few attempts are done
        try:
            wait_until(
                lambda: len(finished) >= 3 and all((marks / f"{tid}.pid").exists() for tid in hang),
                timeout=90,
                what="both hung attempts and three finished ones",
            )
        finally:
            run.cancel(force=True)

    ray.init(address=cluster, runtime_env=ray_runtime_env(config), log_to_driver=False)
    try:
        run = EvalRun(config, ["none"], repeats=1, concurrency=4, update_card=False, executor="ray", on_event=on_event)
        watcher = threading.Thread(target=cancel_when_both_hang)
        watcher.start()
        summary = run.run_sync()["none"]
        watcher.join()
        assert ray.is_initialized()
        assert run.cancelled and summary.cancelled and not summary.complete
        recorded = rows(folder / "runs/demo/eval/none/results.jsonl")
        assert [(r["id"], r["repeat"]) for r in recorded] == finished
        assert not {r["id"] for r in recorded} & set(hang)
        pids = [int((marks / f"{tid}.pid").read_text()) for tid in hang]
        assert not any(alive_after_a_while(pids))  # the hung attempts' worker processes were stopped
    finally:
        ray.shutdown()


def alive_after_a_while(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running after up to 60 s."""
    deadline = time.monotonic() + 60
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # the process may end between the two calls: reading its status then fails with ESRCH
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_a_dead_worker_and_a_late_attempt_are_error_records_and_the_run_goes_on(cluster, workspaces, tmp_path):
    folder = workspaces("crash")
    victim, late = (folder / "test.txt").read_text().split()[1:3]
    config = load_config(
        folder / "run.yaml",
        [
            *FAST,
            "agent.name=wrapper.py:run",
            f"agent.params.crash_task={victim}",
            f"agent.params.hang_tasks=[{late}]",
            f"agent.params.pids={tmp_path}",
            "agent.timeout_min=0.05",
        ],
    )
    summary = EvalRun(config, ["none"], repeats=1, update_card=False, executor="ray", ray_address=cluster).run_sync()[
        "none"
    ]
    recorded = {r["id"]: r for r in rows(folder / "runs/demo/eval/none/results.jsonl")}
    assert summary.complete and len(recorded) == 16
    assert recorded[victim]["status"] == "error"
    assert recorded[victim]["error"].startswith(LOST_PREFIX + ": WorkerCrashedError")
    assert recorded[late]["status"] == "error"
    assert recorded[late]["error"] == (
        "TimeoutError: the attempt ran longer than agent.timeout_min (0.05 min); its Ray task was cancelled"
    )
    assert not alive_after_a_while([int((tmp_path / f"{late}.pid").read_text())])
    others = [r for tid, r in recorded.items() if tid not in (victim, late)]
    assert not any((r["error"] or "").startswith(("WorkerLost", "TimeoutError")) for r in others)
    assert sum(r["status"] == "ok" for r in others) > 0


def test_retry_lost_runs_a_lost_attempt_once_more_and_counts_it(cluster, workspaces, tmp_path):
    folder = workspaces("retry")
    victim = (folder / "test.txt").read_text().split()[0]
    config = load_config(
        folder / "run.yaml",
        [*FAST, "agent.name=wrapper.py:run", f"agent.params.crash_task={victim}", f"agent.params.marks={tmp_path}"],
    )
    run = EvalRun(
        config, ["none"], repeats=1, limit=4, update_card=False, executor="ray", ray_address=cluster, retry_lost=True
    )
    summary = run.run_sync()["none"]
    recorded = {r["id"]: r for r in rows(folder / "runs/demo/eval/none/smoke/results.jsonl")}  # --limit
    shown = {tid: (r["status"], r["error"]) for tid, r in recorded.items()}
    assert (tmp_path / f"{victim}.crashed").exists()  # the first try did crash its worker
    assert recorded[victim]["status"] != "error", shown
    assert isinstance(run.executor, RayExecutor)
    assert summary.attempts == 4 and dict(run.executor.ray_retries) == {"none": 1}, shown
    assert summary.retry_lost is True and summary.ray_retries == 1  # the summary says it ran once more


def test_a_caller_initialised_ray_needs_the_working_dir(cluster, workspaces):
    import ray

    config = load_config(workspaces("caller") / "run.yaml", FAST)
    ray.init(address=cluster, log_to_driver=False)
    try:
        with pytest.raises(InputError, match="without a working_dir: initialise it with runtime_env="):
            EvalRun(config, ["none"], update_card=False, executor="ray", limit=1).run_sync()
    finally:
        ray.shutdown()


# -- without a cluster ----------------------------------------------------------------------------------------------


def test_asking_for_ray_without_it_says_how_to_install(demo_config, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(InputError, match=r"^the Ray executor needs Ray: pip install 'hermit-tui\[ray\]'$"):
        EvalRun(load_config(demo_config), ["none"], executor="ray")


def test_a_pipeline_outside_the_shipped_folder_is_refused(demo_config, tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def run(task, adapter):\n    return {'output': 1}\n")
    config = load_config(demo_config, [f"agent.name={outside}:run"])
    with pytest.raises(InputError, match="lies outside .* the folder the Ray executor ships"):
        check_shippable(config)
    check_shippable(load_config(demo_config))


def test_the_runtime_env_leaves_out_outputs_and_the_drivers_judge(demo_config):
    config = load_config(demo_config)
    env = ray_runtime_env(config)
    assert env["working_dir"] == str(demo_config.parent.resolve())
    assert {"/runs/", "/judge.py", "/logs/", ".git"} <= set(env["excludes"])
    assert "/judge.py" not in ray_runtime_env(config, judge_on_workers=True)["excludes"]


def test_adapter_archives_are_reproducible_and_complete(tmp_path):
    import io
    import tarfile

    a = tmp_path / "a"
    (a / "sub").mkdir(parents=True)
    (a / "ADAPTER.md").write_text("- [arithmetic] carry the one\n")
    (a / "sub" / "notes.txt").write_text("x")
    digest, data = pack_adapter(a)
    os.utime(a / "ADAPTER.md", (1, 1))  # a later export: same content, other times
    assert pack_adapter(a) == (digest, data)
    (a / "sub" / "notes.txt").write_text("y")
    assert pack_adapter(a)[0] != digest
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["ADAPTER.md", "sub", "sub/notes.txt"]


# A pipeline that misbehaves in every way issue 29 names, one way per test task (by its place in test.txt).
HOSTILE = """\
import os
import sys
from pathlib import Path


def run(task, adapter):
    ids = Path(__file__).with_name("test.txt").read_text().split()
    kind = ids.index(str(task["id"])) % 5
    if kind == 0:
        raise KeyboardInterrupt
    if kind == 1:
        sys.exit(3)
    if kind == 2:
        os.fork()  # the child returns into hermit-tui's code on the worker
        return {"output": "forked", "cost_usd": 0.5}
    if kind == 3:
        return {"output": "not unicode \\udc80", "cost_usd": 0.5, "messages": ["lone \\ud800"]}
    return {"output": "big", "cost_usd": 1e308}
"""


@pytest.mark.parametrize("judge_on_workers", [False, True])
def test_a_hostile_pipeline_on_ray_is_each_attempts_error(cluster, workspaces, judge_on_workers):
    """sys.exit, KeyboardInterrupt, a fork, a lone surrogate and a cost of 1e308 on the Ray workers: each decides
    only its own attempt; the files read back (strict JSON, UTF-8)."""
    from hermit_tui.core.records.results import read_results

    folder = workspaces(f"hostile-{judge_on_workers}")
    (folder / "hostile.py").write_text(HOSTILE)
    (folder / "plain_judge.py").write_text("def score(task, output):\n    return 1.0\n")
    ids = (folder / "test.txt").read_text().split()
    summary = EvalRun(
        load_config(
            folder / "run.yaml", ["agent.name=hostile.py:run", "judge.path=plain_judge.py", "judge.name=score"]
        ),
        ["none"],
        repeats=1,
        executor="ray",
        ray_address=cluster,
        judge_on_workers=judge_on_workers,
    ).run_sync()["none"]
    assert summary.attempts == len(ids) and summary.complete
    path = folder / "runs/demo/eval/none/results.jsonl"
    path.read_bytes().decode("utf-8")  # strict
    by_id = {r["id"]: r for r in rows(path)}
    assert len(by_id) == len(ids)  # once each: the forked children recorded nothing
    expected = {0: "KeyboardInterrupt", 1: "SystemExit: 3", 4: "cost_usd is 1e+308"}
    for i, tid in enumerate(ids):
        record, kind = by_id[tid], i % 5
        if kind in expected:
            assert record["status"] == "error" and expected[kind] in record["error"], record
        else:
            assert record["status"] == "ok", record
        if kind == 3:
            assert record["output"] == "not unicode \ufffd" and record["replaced_surrogates"] == ["output"]
    assert len(read_results(path).records) == len(ids)  # hermit-tui's own reader
    sidecar = rows(folder / "runs/demo/eval/none/transcripts.jsonl")
    assert sidecar and all(line["messages"] == ["lone \ufffd"] for line in sidecar)
