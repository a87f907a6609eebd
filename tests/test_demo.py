"""The built-in demo workspace: its files, its adapter tree, its run records and the pipeline's designed behaviour."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from hermit_tui.core.errors import InputError
from hermit_tui.core.outputs import RunOutput
from hermit_tui.demo import DEMO_RUN, FILES, build_demo, default_demo_dir, is_demo_config

HERMIT = Path(sys.executable).with_name("hermit")  # hermit-harness is in the test extra
INVALID_MARK = "[invalid: fails check_spec; the next commit repairs it]"
TAGS = ["demo/ckpt-step-1", "demo/ckpt-step-2", "demo/ckpt-step-3", "demo/final", "root"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def ids(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def rows(ws: Path) -> dict[str, dict]:
    return {row["id"]: row for row in map(json.loads, (ws / "tasks.jsonl").read_text().splitlines())}


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    assert spec is not None
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def export(tree: Path, ref: str, target: Path) -> Path:
    data = subprocess.run(
        ["git", "-C", str(tree), "archive", "--format=tar", ref], capture_output=True, check=True
    ).stdout
    target.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(target, filter="data")
    return target


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    return build_demo(tmp_path_factory.mktemp("demo") / "ws").parent


@pytest.fixture(scope="module")
def tree(ws) -> Path:
    return ws / "runs" / "trees" / "demo-notes"


def test_run_yaml_is_hermit_shaped(ws):
    text = (ws / "run.yaml").read_text()
    assert text.startswith("#") and "teaching demonstration" in text.split("\ndata:")[0].lower()
    cfg = yaml.safe_load(text)
    assert cfg["data"] == {
        **cfg["data"],
        "tasks": "tasks.jsonl",
        "train": "train.txt",
        "val": "val.txt",
        "test": "test.txt",
    }
    assert cfg["agent"]["name"] == "pipeline.py:run" and cfg["agent"]["concurrency"] == 4
    assert cfg["agent"]["params"] == {"latency_scale": 1.0}
    assert cfg["judge"] == {"path": "judge.py", "name": "score"}
    assert cfg["template"] == "template" and cfg["evolver"]["name"]
    assert cfg["trainer"]["run_name"] == DEMO_RUN and cfg["trainer"]["output_dir"] == "runs"
    assert cfg["sandbox"]["enabled"] is False and cfg["eval"]["repeats"] == 3
    manifest = yaml.safe_load((ws / "template" / "adapter.yaml").read_text())
    assert manifest["template"]["id"] == "demo-notes"
    assert {p.name for p in (ws / "template").iterdir()} >= {"adapter.yaml", "ADAPTER.md"}


def test_tasks_and_splits(ws):
    tasks = rows(ws)
    train, val, test = (ids(ws / f"{s}.txt") for s in ("train", "val", "test"))
    assert 36 <= len(tasks) <= 44
    assert 14 <= len(train) <= 18 and 6 <= len(val) <= 10 and len(test) >= 16
    assert len(set(train + val + test)) == len(train) + len(val) + len(test)
    assert set(train + val + test) <= set(tasks)
    assert all(row["category"] and row["input"] for row in tasks.values())


def test_answers_live_only_in_judge_data(ws):
    answers = json.loads((ws / "judge_data" / "answers.json").read_text())
    assert len(answers) >= 30
    for tid, row in rows(ws).items():
        assert not {"answer", "expected", "solution", "target", "label"} & set(row)
        if tid in answers:
            assert answers[tid] not in row.values() and json.dumps(answers[tid]) not in row.values()


def test_judge_scores_by_hand(ws):
    judge = load(ws / "judge.py", "_demo_judge_hand")
    t = rows(ws)
    assert judge.score(t["arith-01"], RunOutput("1776"))["score"] == 1.0  # 37 * 48 = 1776
    assert judge.score(t["arith-01"], RunOutput("1775"))["score"] == 0.0
    assert judge.score(t["unit-01"], RunOutput("7.46"))["score"] == 1.0  # 12 km = 7.456 mi
    assert judge.score(t["unit-01"], RunOutput("7.7"))["score"] == 0.5  # 3.2% off: half credit
    assert judge.score(t["unit-01"], RunOutput("19.31"))["score"] == 0.0  # the inverse factor
    assert judge.score(t["sort-01"], RunOutput("3, 7, 25, 19, 42"))["score"] == pytest.approx(3 / 5)
    verdict = judge.score(t["date-01"], {"output": "2024-03-01"})  # 2024 is a leap year
    assert verdict["score"] == 1.0 and verdict["expected"] == "2024-03-01" and verdict["category"] == "date_math"


def test_tree_tags_branches_and_dates(ws, tree):
    assert git(tree, "tag", "--list").split() == TAGS
    assert sorted(git(tree, "branch", "--format=%(refname:short)").split()) == ["demo", "trunk"]
    sha = {t: git(tree, "rev-parse", f"{t}^{{commit}}") for t in TAGS}
    assert git(tree, "rev-parse", "trunk") == sha["root"]
    assert git(tree, "rev-list", "--count", "trunk") == "1"
    assert git(tree, "rev-parse", "demo") == sha["demo/final"]
    order = ["root", "demo/ckpt-step-1", "demo/ckpt-step-2", "demo/ckpt-step-3", "demo/final"]
    for older, newer in zip(order, order[1:]):
        subprocess.run(["git", "-C", str(tree), "merge-base", "--is-ancestor", sha[older], sha[newer]], check=True)
    for name in ("adapter.yaml", "ADAPTER.md", "README.md"):
        assert git(tree, "show", f"root:{name}") == (ws / "template" / name).read_text().strip()
    notes = [git(tree, "show", f"{t}:ADAPTER.md") for t in order]
    assert len(set(notes[:4])) == 4 and notes[4] == notes[3]
    assert "CARD.md" in git(tree, "ls-tree", "--name-only", "demo/final").split()
    log = git(tree, "log", "--format=%an <%ae>|%cn <%ce>|%cI", "demo").splitlines()
    assert len(log) == 6 and {line.split("|")[0] for line in log} == {"hermit-tui demo <demo@localhost>"}
    assert {line.split("|")[1] for line in log} == {"hermit-tui demo <demo@localhost>"}
    dates = [line.split("|")[2] for line in log]
    assert dates == [f"2026-01-01T0{h}:00:00+00:00" for h in range(5, -1, -1)]


def test_invalid_commit_is_repaired_and_untagged(tree):
    commits = git(tree, "log", "--format=%H", "demo").split()
    invalid = [c for c in commits if INVALID_MARK in git(tree, "log", "-1", "--format=%B", c)]
    assert len(invalid) == 1
    tagged = {git(tree, "rev-parse", f"{t}^{{commit}}") for t in TAGS}
    assert invalid[0] not in tagged
    repair = commits[commits.index(invalid[0]) - 1]  # its child on the branch
    assert git(tree, "rev-parse", f"{repair}^") == invalid[0]
    assert repair == git(tree, "rev-parse", "demo/ckpt-step-2")
    assert "worked_examples.txt" in git(tree, "ls-tree", "--name-only", invalid[0]).split()
    assert "worked_examples.txt" not in git(tree, "ls-tree", "--name-only", repair).split()


def test_checkout_is_a_worktree_of_demo_with_a_card(ws, tree):
    checkout = ws / "runs" / DEMO_RUN / "checkout"
    pointer = (checkout / ".git").read_text()
    assert (checkout / ".git").is_file() and pointer.startswith("gitdir: ")
    assert Path(pointer.split(":", 1)[1].strip()).resolve().is_relative_to((tree / ".git").resolve())
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD") == DEMO_RUN
    assert git(checkout, "rev-parse", "HEAD") == git(tree, "rev-parse", "demo/final^{commit}")
    assert git(checkout, "status", "--porcelain") == ""
    card = (checkout / "CARD.md").read_text()
    assert card.startswith("# Adapter card: demo")
    evaluation = card.split("## Evaluation", 1)[1].strip().splitlines()
    assert evaluation[0] == "Not evaluated yet (`hermit eval`)."
    assert evaluation[2].startswith("Where it has not been tested")
    assert git(tree, "show", "demo/final:CARD.md") == card.strip()


def test_run_records(ws, tree):
    run = ws / "runs" / DEMO_RUN
    train = ids(ws / "train.txt")
    steps = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2, 3]
    seen = []
    for s in steps:
        assert {
            "step",
            "epoch",
            "tasks",
            "rollout",
            "evolver",
            "commit",
            "changed",
            "check",
            "budget_after",
            "time",
        } <= set(s)
        scores = s["rollout"]["scores"]
        assert set(scores) == set(s["tasks"]) and set(scores) <= set(train)
        assert s["rollout"]["mean_score"] == pytest.approx(sum(scores.values()) / len(scores), abs=1e-4)
        assert {"mean_score", "scores", "cost_usd", "unknown_cost_tasks", "wall_s"} <= set(s["rollout"])
        assert {"status", "summary"} <= set(s["evolver"])
        assert s["commit"] == git(tree, "rev-parse", f"demo/ckpt-step-{s['step']}")
        seen += s["tasks"]
    assert sorted(seen) == sorted(train)
    assert steps[1]["check"]["passed"] is False and steps[1]["check"]["after_repair"]["passed"] is True
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final_commit"] == git(tree, "rev-parse", "demo/final^{commit}") and summary["steps"] == 3
    resolved = yaml.safe_load((run / "config.yaml").read_text())
    assert resolved["config"]["trainer"]["run_name"] == DEMO_RUN and resolved["branch"] == DEMO_RUN


def _attempts(ws: Path, adapter: Path | None, name: str) -> dict[str, list[dict]]:
    """Every test task × repeats 1..3 through the pipeline and the judge, as an evaluator records them."""
    pipeline = load(ws / "pipeline.py", f"_demo_pipeline_{name}")
    judge = load(ws / "judge.py", f"_demo_judge_{name}")
    tasks = rows(ws)
    out: dict[str, list[dict]] = {}
    for tid in ids(ws / "test.txt"):
        out[tid] = []
        for repeat in (1, 2, 3):
            pipeline.current_repeat = lambda r=repeat: r  # what hermit-tui's runner would report
            record = {"status": "ok", "cost": None, "score": 0.0}
            try:
                result = pipeline.run(dict(tasks[tid]), adapter, params={"latency_scale": 0})
            except Exception as exc:
                record.update(status="error", error=f"{type(exc).__name__}: {exc}")
                out[tid].append(record)
                continue
            # hermit's RunOutput when hermit-harness is installed (as in the tests), else hermit-tui's
            assert type(result).__name__ == "RunOutput" and result.tokens > 0
            record.update(cost=result.cost_usd, output=result.output)
            try:
                verdict = judge.score(dict(tasks[tid]), result)
                record["score"] = float(verdict["score"] if isinstance(verdict, dict) else verdict)
            except Exception as exc:
                record.update(status="judge_error", error=f"{type(exc).__name__}: {exc}")
            out[tid].append(record)
    return out


@pytest.fixture(scope="module")
def protocol(ws, tree, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adapters")
    return {
        "none": _attempts(ws, None, "none"),
        "root": _attempts(ws, export(tree, "root", tmp / "root"), "root"),
        "final": _attempts(ws, export(tree, "demo/final", tmp / "final"), "final"),
    }


def test_designed_behaviour_on_the_test_split(protocol):
    mean = {
        k: sum(r["score"] for v in res.values() for r in v) / sum(len(v) for v in res.values())
        for k, res in protocol.items()
    }
    assert mean["none"] + 0.1 < mean["root"] < mean["final"] - 0.1
    per_task = {k: {t: sum(r["score"] for r in v) for t, v in res.items()} for k, res in protocol.items()}
    regressions = [t for t in per_task["root"] if per_task["final"][t] < per_task["root"][t]]
    assert len(regressions) >= 2
    flaky = [t for res in protocol.values() for t, v in res.items() if len({r["score"] for r in v}) > 1]
    assert flaky
    every = [r for res in protocol.values() for v in res.values() for r in v]
    assert all(0.0 <= r["score"] <= 1.0 for r in every)
    assert any(0.0 < r["score"] < 1.0 for r in every)  # partial credit
    assert any(r["status"] == "ok" and r["cost"] is None for r in every)  # unknown cost
    assert any(r["cost"] is not None for r in every)


def test_one_pipeline_error_and_one_judge_error(protocol):
    for status in ("error", "judge_error"):
        failing = {t for res in protocol.values() for t, v in res.items() if any(r["status"] == status for r in v)}
        assert len(failing) == 1
        (tid,) = failing
        assert all(r["status"] == status for res in protocol.values() for r in res[tid])  # always, everywhere
        assert tid in protocol["none"][tid][0]["error"]  # the message names it


def test_repeat_counter_stands_in_for_hermit(ws, tree, tmp_path):
    """Without hermit-tui's context, calls in order count as repeats 1, 2, 3 per task and adapter."""
    root = export(tree, "root", tmp_path / "root")
    task = rows(ws)["arith-04"]
    explicit = load(ws / "pipeline.py", "_demo_pipeline_explicit")
    counted = load(ws / "pipeline.py", "_demo_pipeline_counted")
    counted.current_repeat = lambda: None
    want = []
    for repeat in (1, 2, 3):
        explicit.current_repeat = lambda r=repeat: r
        want.append(explicit.run(dict(task), root, params={"latency_scale": 0}).output)
    got = []
    for _ in range(3):
        got.append(counted.run(dict(task), root, params={"latency_scale": 0}).output)
        counted.run(dict(task), None, params={"latency_scale": 0})  # another adapter: its own count
    assert got == want
    assert counted.run(dict(task), root, params={"latency_scale": 0}).extra["repeat"] == 4


def test_build_is_idempotent_and_never_overwrites(tmp_path):
    run_yaml = build_demo(tmp_path / "ws")
    before = {p: p.stat().st_mtime_ns for p in run_yaml.parent.rglob("*")}
    assert build_demo(tmp_path / "ws") == run_yaml
    assert {p: p.stat().st_mtime_ns for p in run_yaml.parent.rglob("*")} == before
    assert is_demo_config(run_yaml) and is_demo_config(run_yaml.parent)

    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    for force in (False, True):
        with pytest.raises(InputError, match="not empty"):
            build_demo(foreign, force=force)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"] and (foreign / "notes.txt").read_text() == "keep me"
    assert not is_demo_config(foreign / "run.yaml")
    with pytest.raises(InputError):
        build_demo(foreign / "notes.txt")

    inside = run_yaml.parent / "sub"  # a new folder inside a demo is not a demo
    assert build_demo(inside) == inside / "run.yaml"
    (tmp_path / "empty").mkdir()
    assert build_demo(tmp_path / "empty") == (tmp_path / "empty" / "run.yaml").resolve()
    (run_yaml.parent / "run.yaml").write_text("changed")
    assert build_demo(tmp_path / "ws", force=True) == run_yaml
    assert (run_yaml).read_text() == (FILES / "run.yaml").read_text()


def test_same_tree_every_build(ws, tmp_path):
    other = build_demo(tmp_path / "again").parent
    for ref in ("root", "demo/ckpt-step-2", "demo/final"):
        a = git(ws / "runs/trees/demo-notes", "rev-parse", f"{ref}:ADAPTER.md")
        b = git(other / "runs/trees/demo-notes", "rev-parse", f"{ref}:ADAPTER.md")
        assert a == b
    assert git(ws / "runs/trees/demo-notes", "rev-parse", "root") == git(
        other / "runs/trees/demo-notes", "rev-parse", "root"
    )


def test_default_demo_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("HERMIT_TUI_DEMO_DIR", str(tmp_path / "d"))
    assert default_demo_dir() == tmp_path / "d"
    monkeypatch.delenv("HERMIT_TUI_DEMO_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_demo_dir() == tmp_path / "cache" / "hermit-tui" / "demo"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_demo_dir() == tmp_path / "home" / ".cache" / "hermit-tui" / "demo"


def test_package_files_at_most_one_folder_deep():
    files = [p.relative_to(FILES) for p in FILES.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert files and all(len(p.parts) <= 2 for p in files)


def test_real_hermit_evaluates_the_demo(tmp_path):
    assert HERMIT.is_file(), f"hermit-harness's CLI is not beside {sys.executable}"
    run_yaml = build_demo(tmp_path / "ws")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [
            str(HERMIT),
            "eval",
            "--config",
            str(run_yaml),
            "--adapter",
            "root",
            "eval.repeats=1",
            "agent.params.latency_scale=0.01",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((run_yaml.parent / "runs/demo/eval/root/summary.json").read_text())
    assert summary["tasks"] == 16 and summary["repeats"] == 1 and summary["errors"] == 2
    assert summary["commit"] == git(run_yaml.parent / "runs/trees/demo-notes", "rev-parse", "root")
    lines = (run_yaml.parent / "runs/demo/eval/root/results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["status"] for line in lines).count("ok") == 14
    check = subprocess.run(
        [str(HERMIT), "check", "--config", str(run_yaml), "--no-probe"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout[-2000:]


FIXTURES = Path(__file__).parent / "fixtures" / "hermit_eval"


@pytest.mark.parametrize("label", ["none", "root", "final"])
def test_hermit_fixtures_match_the_demo(protocol, label):
    """The saved outputs of the real hermit eval agree attempt by attempt with the demo as it is now."""
    lines = [json.loads(line) for line in (FIXTURES / label / "results.jsonl").read_text().splitlines()]
    saved = {(r["id"], r["repeat"]): (r["status"], r["judge"]["score"], r["cost_usd"]) for r in lines}
    mine = {
        (tid, n): (r["status"], r["score"], r["cost"] if r["status"] != "error" else None)
        for tid, attempts in protocol[label].items()
        for n, r in enumerate(attempts, start=1)
    }
    assert saved == mine
    summary = json.loads((FIXTURES / label / "summary.json").read_text())
    assert summary["mean_score"] == pytest.approx(sum(s for _, s, _ in mine.values()) / len(mine))


def test_each_attempt_returns_a_short_trajectory(ws, tree, tmp_path):
    """A question, one tool call with its arguments, the tool's (right) result, and the answer that was output."""
    pipeline = load(ws / "pipeline.py", "_demo_pipeline_trajectory")
    answers = json.loads((ws / "judge_data" / "answers.json").read_text())
    root = export(tree, "root", tmp_path / "root")
    tasks = rows(ws)
    tools = set()
    for tid in ids(ws / "test.txt"):
        task = tasks[tid]
        try:
            out = pipeline.run(dict(task), root, params={"latency_scale": 0})
        except ValueError:
            continue  # the task that always makes the pipeline fail has no trajectory
        system, user, call, result, final = out.messages
        assert system["role"] == "system" and "Notes for the solver" in system["content"]  # the adapter's notes
        assert user == {"role": "user", "content": task["input"]}
        (tool_call,) = call["tool_calls"]
        assert call["role"] == "assistant" and tool_call["type"] == "function"
        tools.add(tool_call["function"]["name"])
        assert json.loads(tool_call["function"]["arguments"])  # JSON arguments
        assert result == {"role": "tool", "tool_call_id": tool_call["id"], "content": result["content"]}
        if tid in answers:
            assert json.loads(result["content"]) == answers[tid]  # the tool is right
        assert final == {"role": "assistant", "content": out.output}
    assert {"calculator", "convert", "calendar", "python"} <= tools
    none = pipeline.run(dict(tasks["arith-01"]), None, params={"latency_scale": 0})
    assert "adapter" not in none.messages[0]["content"]
