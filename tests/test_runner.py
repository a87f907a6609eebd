"""The runner end to end on the demo workspace: summaries recomputed independently from the files, hermit's
contract, side-by-side scheduling, archives, the card, cancel, retries and timeouts."""

from __future__ import annotations

import json
import subprocess
import threading
from collections import defaultdict
from pathlib import Path

import pytest
from demo_copies import copy_workspace

from hermit_tui.core.errors import InputError
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0.01"]
FIXTURES = Path(__file__).parent / "fixtures" / "hermit_eval"
HERMIT_KEYS = [
    "adapter",
    "commit",
    "tasks",
    "repeats",
    "mean_score",
    "solved_once",
    "cost_usd",
    "unknown_cost_tasks",
    "errors",
    "wall_s",
]


def independent_summary(results: Path, n_tasks: int) -> dict:
    """hermit's summary figures, recomputed from results.jsonl with nothing from hermit_tui."""
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    scores = [r["judge"]["score"] for r in rows]
    by_task = defaultdict(list)
    for r in rows:
        by_task[r["id"]].append(r["judge"]["score"])
    unknown = sum(1 for r in rows if r["cost_usd"] is None)
    return {
        "mean_score": sum(scores) / len(scores),
        "solved_once": sum(1 for v in by_task.values() if max(v) >= 1.0) / n_tasks,
        "unknown_cost_tasks": unknown,
        "cost_usd": None if unknown else sum(r["cost_usd"] for r in rows),
        "errors": sum(1 for r in rows if r["status"] != "ok"),
        "attempts": len(rows),
        "keys": {(r["id"], r["repeat"]) for r in rows},
    }


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def demo(demo_template, tmp_path):
    """A private copy of the demo built once per session (building one is git work: a second or more)."""
    return copy_workspace(demo_template, tmp_path / "demo")


def test_demo_none_root_final_side_by_side(demo):
    config = load_config(demo, FAST)
    seen: list[ev.Event] = []
    summaries = EvalRun(config, ["none", "root", "final"], on_event=seen.append).run_sync()
    assert list(summaries) == ["none", "root", "final"]
    test_ids = [
        line.strip()
        for line in (demo.parent / "test.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    eval_dir = config.run_dir / "eval"
    means = {}
    for label in summaries:
        written = json.loads((eval_dir / label / "summary.json").read_text())
        assert list(written)[:10] == HERMIT_KEYS
        again = independent_summary(eval_dir / label / "results.jsonl", len(test_ids))
        assert again["attempts"] == len(test_ids) * 3
        assert again["keys"] == {(t, r) for t in test_ids for r in (1, 2, 3)}
        for key in ("mean_score", "solved_once", "unknown_cost_tasks", "cost_usd", "errors"):
            assert written[key] == pytest.approx(again[key]), (label, key)
        assert written["tasks"] == len(test_ids) and written["repeats"] == 3
        assert written["complete"] is True
        means[label] = written["mean_score"]
    assert means["none"] < means["root"] < means["final"]
    # commits: none has none, root and final the tags' commits at measurement time
    tree = config.tree_dir
    assert summaries["none"].commit is None
    assert summaries["root"].commit == git(tree, "rev-parse", "root^{commit}")
    # the events: one AttemptFinished per attempt, in between the selector starts and finishes
    finished = [e for e in seen if isinstance(e, ev.AttemptFinished)]
    assert len(finished) == 3 * len(test_ids) * 3
    assert isinstance(seen[-1], ev.RunFinished) and not seen[-1].cancelled


def test_same_figures_as_real_hermit(demo):
    """The fixtures were written by hermit-harness 0.1.0 itself on the same demo (see their README)."""
    if not FIXTURES.is_dir():
        pytest.skip("no hermit fixtures")
    config = load_config(demo, FAST)
    ours = EvalRun(config, ["none", "root", "final"], update_card=False).run_sync()
    for label in ("none", "root", "final"):
        theirs = json.loads((FIXTURES / label / "summary.json").read_text())
        mine = json.loads(ours[label].to_json())
        for key in (
            "adapter",
            "commit",
            "tasks",
            "repeats",
            "mean_score",
            "solved_once",
            "cost_usd",
            "unknown_cost_tasks",
            "errors",
        ):
            assert mine[key] == pytest.approx(theirs[key]), (label, key)

        # record by record: same statuses, scores, outputs and costs for every (task, repeat)
        def index(path):
            return {(r["id"], r["repeat"]): r for r in map(json.loads, path.read_text().splitlines())}

        a = index(FIXTURES / label / "results.jsonl")
        b = index(config.run_dir / "eval" / label / "results.jsonl")
        assert a.keys() == b.keys()
        for key in a:
            for field in ("status", "error", "output", "judge", "cost_usd", "tokens"):
                assert a[key][field] == b[key][field], (label, key, field)


def test_attempts_are_interleaved_so_partial_results_stay_paired(demo):
    config = load_config(demo, FAST)
    order = []
    run = EvalRun(
        config,
        ["none", "root"],
        concurrency=1,
        repeats=1,
        on_event=lambda e: order.append((e.label, e.task_id)) if isinstance(e, ev.AttemptStarted) else None,
    )
    run.run_sync()
    # with one slot, the start order is task by task, selector by selector
    assert order[:4] == [("none", order[0][1]), ("root", order[0][1]), ("none", order[2][1]), ("root", order[2][1])]
    assert order[0][1] != order[2][1]


def test_reevaluating_archives_the_earlier_pair(demo):
    config = load_config(demo, FAST)
    EvalRun(config, ["none"], repeats=1).run_sync()
    first = (config.run_dir / "eval" / "none" / "results.jsonl").read_bytes()
    EvalRun(config, ["none"], repeats=2).run_sync()
    archived = list((config.run_dir / "eval" / "none" / "archive").iterdir())
    assert len(archived) == 1
    assert (archived[0] / "results.jsonl").read_bytes() == first
    assert json.loads((archived[0] / "summary.json").read_text())["repeats"] == 1
    assert json.loads((config.run_dir / "eval" / "none" / "summary.json").read_text())["repeats"] == 2


def test_label_collision_and_duplicates_are_refused_before_anything_is_written(demo):
    config = load_config(demo, FAST)
    folder = demo.parent / "adapters" / "root"
    folder.mkdir(parents=True)
    (folder / "adapter.yaml").write_text("template: {id: demo-notes}\n")
    (folder / "ADAPTER.md").write_text("# a folder named root\n")
    with pytest.raises(InputError, match="root"):
        EvalRun(config, ["root", "adapters/root"])
    with pytest.raises(InputError):
        EvalRun(config, ["none", "none"])
    assert not (config.run_dir / "eval").exists()


def test_invalid_commit_is_refused(demo):
    config = load_config(demo, FAST)
    invalid = git(
        config.tree_dir, "log", "--all", "--fixed-strings", "--grep=[invalid: fails check_spec", "--format=%H"
    ).split()
    assert invalid, "the demo holds an invalid commit"
    with pytest.raises(InputError, match="invalid"):
        EvalRun(config, [invalid[0][:10]])


def test_option_looking_selector_writes_nothing(demo, tmp_path):
    config = load_config(demo, FAST)
    target = tmp_path / "pwned"
    for text in (f"--output={target}", "-p", "root --all"):
        with pytest.raises(InputError):
            EvalRun(config, [text])
    assert not target.exists()
    assert not (config.run_dir / "eval").exists()


def test_final_updates_the_card_on_the_run_branch_and_moves_the_tag(demo):
    config = load_config(demo, FAST)
    checkout = config.run_dir / "checkout"
    before = (checkout / "CARD.md").read_text()
    head_before = git(checkout, "rev-parse", "HEAD")
    # hermit eval's card update, asked for explicitly (the engine's default and the CLI's never publish)
    summary = EvalRun(config, ["final"], update_card=True).run_sync()["final"]
    after = (checkout / "CARD.md").read_text()
    head, mid, tail = before.partition("## Evaluation")
    assert after.startswith(head + "## Evaluation")
    assert after.endswith(tail[tail.index("Where it has not been tested") :])
    row = (
        f"| final | {summary.tasks} | {summary.repeats} | {summary.mean_score:.3f} | "
        f"{summary.solved_once:.3f} | unknown |"
    )
    assert row in after
    new_head = git(checkout, "rev-parse", "HEAD")
    assert git(checkout, "rev-parse", f"{new_head}^") == head_before
    assert git(checkout, "log", "-1", "--format=%s") == "card: eval results of demo/final"
    assert git(checkout, "diff", "--name-only", head_before, new_head) == "CARD.md"
    assert git(config.tree_dir, "rev-parse", "demo/final^{commit}") == new_head
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD") == "demo"
    assert summary.commit == head_before  # the measured commit, not the card commit


def test_smoke_subset_is_marked_and_never_touches_the_card(demo):
    config = load_config(demo, FAST)
    card = (config.run_dir / "checkout" / "CARD.md").read_bytes()
    summary = EvalRun(config, ["final"], limit=3, repeats=1, update_card=True).run_sync()["final"]
    assert summary.tasks == 3 and summary.smoke_limit == 3
    assert (config.run_dir / "checkout" / "CARD.md").read_bytes() == card


def test_cancel_keeps_finished_attempts_and_marks_incomplete(demo):
    config = load_config(demo, ["agent.params.latency_scale=0.2"])
    holder: dict[str, EvalRun] = {}
    done = threading.Event()

    def on_event(e):
        if isinstance(e, ev.AttemptFinished) and not done.is_set():
            done.set()
            holder["run"].cancel()

    run = holder["run"] = EvalRun(config, ["none", "root"], concurrency=2, on_event=on_event)
    summaries = run.run_sync()
    assert run.cancelled
    for label, s in summaries.items():
        lines = (config.run_dir / "eval" / label / "results.jsonl").read_text().splitlines()
        assert s.complete is False and s.cancelled is True
        assert s.expected_attempts is not None
        assert s.attempts == len(lines) < s.expected_attempts


def test_timeout_is_an_error_attempt_and_the_run_goes_on(tmp_path):
    (tmp_path / "tasks.jsonl").write_text('{"id": "slow"}\n{"id": "fast"}\n')
    (tmp_path / "test.txt").write_text("slow\nfast\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(
        "import time\n"
        "def run(task, adapter):\n"
        "    if task['id'] == 'slow':\n"
        "        time.sleep(3)\n"
        "    return {'output': task['id'], 'cost_usd': 0.0}\n"
    )
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return 1.0\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, timeout_min: 0.005}\njudge: {path: judge.py}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    summary = EvalRun(load_config(tmp_path / "run.yaml"), ["none"]).run_sync()["none"]
    rows = {
        json.loads(line)["id"]: json.loads(line)
        for line in (tmp_path / "runs" / "t" / "eval" / "none" / "results.jsonl").read_text().splitlines()
    }
    assert rows["slow"]["status"] == "error" and "timeout_min" in rows["slow"]["error"]
    assert rows["fast"]["status"] == "ok"
    assert summary.errors == 1 and summary.mean_score == 0.5


def test_retry_replaces_only_the_failed_attempts_and_counts_them(demo):
    config = load_config(demo, FAST)
    EvalRun(config, ["root"], repeats=1).run_sync()
    path = config.run_dir / "eval" / "root" / "results.jsonl"
    before = {(r["id"], r["repeat"]): r for r in map(json.loads, path.read_text().splitlines())}
    failed = [k for k, r in before.items() if r["status"] != "ok"]
    assert failed
    summary = EvalRun(config, [], retry={"root": failed}).run_sync()["root"]
    after = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(after) == len(before)  # one line per attempt again
    assert summary.retries == len(failed)
    assert {(r["id"], r["repeat"]) for r in after} == set(before)
    for r in after:
        if (r["id"], r["repeat"]) not in failed:
            assert r == before[(r["id"], r["repeat"])]
    assert list((config.run_dir / "eval" / "root" / "archive").iterdir())  # the earlier pair is kept


def test_pipeline_and_judge_shapes(tmp_path):
    """What pipelines and judges may return, and what becomes an error attempt."""
    (tmp_path / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": i}) + "\n" for i in ["dict", "obj", "wrong", "nan", "str", "none", "extra"])
    )
    (tmp_path / "test.txt").write_text("dict\nobj\nwrong\nnan\nstr\nnone\nextra\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(
        "from hermit_tui import RunOutput\n"
        "def run(task, adapter, params=None):\n"
        "    task['mutated'] = True\n"
        "    if task['id'] == 'wrong':\n"
        "        return 42\n"
        "    if task['id'] == 'obj':\n"
        "        return RunOutput(output='o', cost_usd=0.5, tokens=3)\n"
        "    return {'output': task['id'], 'cost_usd': 0.25}\n"
    )
    (tmp_path / "judge.py").write_text(
        "class R:\n    score = 0.5\n    feedback = 'half'\n    extra = {'k': 1}\n"
        "def score(task, output):\n"
        "    assert 'mutated' not in task\n"
        "    return {'dict': 1.0, 'obj': R(), 'nan': float('nan'), 'str': 'high', 'none': None,\n"
        "            'extra': {'score': 0.75, 'feedback': 'ok', 'why': 'x'}}[task['id']]\n"
    )
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run}\njudge: {path: judge.py}\ntrainer: {run_name: t, tree_dir: tree}\n"
    )
    EvalRun(load_config(tmp_path / "run.yaml"), ["none"]).run_sync()
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "runs/t/eval/none/results.jsonl").read_text().splitlines())}
    assert rows["dict"]["status"] == "ok" and rows["dict"]["judge"]["score"] == 1.0
    assert rows["obj"]["judge"] == {"score": 0.5, "feedback": "half", "extra": {"k": 1}}
    assert rows["obj"]["cost_usd"] == 0.5 and rows["obj"]["tokens"] == 3
    assert rows["wrong"]["status"] == "error" and "returned int" in rows["wrong"]["error"]
    assert rows["wrong"]["cost_usd"] is None
    for tid in ("nan", "str", "none"):
        assert rows[tid]["status"] == "judge_error", tid
        assert rows[tid]["cost_usd"] == 0.25 and rows[tid]["output"] == tid  # output and cost kept
    assert rows["extra"]["judge"] == {"score": 0.75, "feedback": "ok", "extra": {"why": "x"}}


def test_cancel_from_another_thread_with_force_abandons_hung_attempts(tmp_path):
    (tmp_path / "tasks.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
    (tmp_path / "test.txt").write_text("a\nb\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(
        "import threading\nE = threading.Event()\ndef run(task, adapter):\n    E.wait(20)\n    return {'output': 1}\n"
    )
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return 1.0\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 2}\njudge: {path: judge.py}\ntrainer: {run_name: t, tree_dir: tree}\n"
    )
    started = threading.Event()
    run = EvalRun(
        load_config(tmp_path / "run.yaml"),
        ["none"],
        on_event=lambda e: started.set() if isinstance(e, ev.AttemptStarted) else None,
    )

    def cancel_once_started() -> None:
        started.wait(10)
        run.cancel(force=True)

    timer = threading.Thread(target=cancel_once_started)
    timer.start()
    summary = run.run_sync()["none"]
    timer.join()
    assert run.cancelled and summary.attempts == 0 and summary.complete is False
