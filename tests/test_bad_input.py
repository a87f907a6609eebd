"""A corpus of malformed inputs: each gives one line naming the file, key or line, exit code 2, no traceback, and
leaves every file already on disk as it was."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hermit_tui.cli import main

Mutation = Callable[[Path], None]


def edit(path: str, old: str, new: str) -> Mutation:
    def apply(ws: Path) -> None:
        text = (ws / path).read_text()
        assert old in text, (path, old)
        (ws / path).write_text(text.replace(old, new, 1))
    return apply


def write(path: str, content: str | bytes) -> Mutation:
    def apply(ws: Path) -> None:
        target = ws / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return apply


def remove(path: str) -> Mutation:
    def apply(ws: Path) -> None:
        target = ws / path
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    return apply


def nothing(ws: Path) -> None:
    pass


def invalid_commit(ws: Path) -> str:
    out = subprocess.run(["git", "log", "--all", "--fixed-strings", "--grep=[invalid:", "--format=%h"],
                         cwd=ws / "runs/trees/demo-notes", capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


# (name, mutation, extra CLI args after `eval --config run.yaml`, what the one line must name)
CASES: list[tuple[str, Mutation, list[str], str]] = [
    # the config
    ("missing config", remove("run.yaml"), ["--adapter", "none"], "run.yaml"),
    ("config is a folder", lambda ws: (remove("run.yaml")(ws), (ws / "run.yaml").mkdir()), ["--adapter", "none"],
     "run.yaml"),
    ("config not utf-8", write("run.yaml", b"data:\n  tasks: \xff\xfe\n"), ["--adapter", "none"], "run.yaml"),
    ("yaml syntax error", edit("run.yaml", "  tasks: tasks.jsonl", "  tasks: [tasks.jsonl"), ["--adapter", "none"],
     "run.yaml"),
    ("top level a list", write("run.yaml", "- a\n- b\n"), ["--adapter", "none"], "run.yaml"),
    ("unknown top-level key", edit("run.yaml", "judge:", "judges: 1\njudge:"), ["--adapter", "none"], "judges"),
    ("unknown nested key", edit("run.yaml", "  concurrency: 4", "  concurency: 4"), ["--adapter", "none"],
     "agent.concurency"),
    ("section as scalar", edit("run.yaml", "judge:\n  path: judge.py\n  name: score", "judge: 3"),
     ["--adapter", "none"], "judge"),
    ("repeats a word", nothing, ["--adapter", "none", "eval.repeats=three"], "eval.repeats"),
    ("repeats zero", nothing, ["--adapter", "none", "eval.repeats=0"], "eval.repeats"),
    ("repeats negative", nothing, ["--adapter", "none", "eval.repeats=-1"], "eval.repeats"),
    ("repeats fractional", nothing, ["--adapter", "none", "eval.repeats=1.5"], "eval.repeats"),
    ("concurrency zero", nothing, ["--adapter", "none", "agent.concurrency=0"], "agent.concurrency"),
    ("timeout a word", nothing, ["--adapter", "none", "agent.timeout_min=soon"], "agent.timeout_min"),
    ("shuffle not a boolean", nothing, ["--adapter", "none", "data.shuffle=maybe"], "data.shuffle"),
    ("bad run name", nothing, ["--adapter", "none", "trainer.run_name=bad name!"], "trainer.run_name"),
    ("override of an unknown key", nothing, ["--adapter", "none", "eval.repets=2"], "eval.repets"),
    ("override without =", nothing, ["--adapter", "none", "eval.repeats"], "eval.repeats"),
    # tasks and splits
    ("missing tasks file", remove("tasks.jsonl"), ["--adapter", "none"], "tasks.jsonl"),
    ("bad JSON line", edit("tasks.jsonl", '"id"', '"id":: '), ["--adapter", "none"], "tasks.jsonl:1"),
    ("line not an object", write("tasks.jsonl", "[1, 2]\n"), ["--adapter", "none"], "tasks.jsonl:1"),
    ("row without id", write("tasks.jsonl", '{"question": "x"}\n'), ["--adapter", "none"], "tasks.jsonl:1"),
    ("duplicate ids", lambda ws: write("tasks.jsonl", (ws / "tasks.jsonl").read_text()
                                       + (ws / "tasks.jsonl").read_text().splitlines()[0] + "\n")(ws),
     ["--adapter", "none"], "tasks.jsonl"),
    ("unknown id in a split", lambda ws: write("test.txt", (ws / "test.txt").read_text() + "no-such-task\n")(ws),
     ["--adapter", "none"], "test.txt"),
    ("duplicate id in a split", lambda ws: write("test.txt", (ws / "test.txt").read_text()
                                                 + (ws / "test.txt").read_text().split()[0] + "\n")(ws),
     ["--adapter", "none"], "test.txt"),
    ("empty test split", write("test.txt", "# nothing here\n"), ["--adapter", "none"], "test"),
    ("data.test not set", edit("run.yaml", "  test: test.txt\n", ""), ["--adapter", "none"], "data.test"),
    ("missing split file", remove("test.txt"), ["--adapter", "none"], "test.txt"),
    ("tasks not utf-8", lambda ws: write("tasks.jsonl", (ws / "tasks.jsonl").read_bytes().replace(
        b'"', b'"\xff', 1))(ws), ["--adapter", "none"], "tasks.jsonl"),
    # pipeline and judge
    ("judge file missing", remove("judge.py"), ["--adapter", "none"], "judge.py"),
    ("judge.path unset", edit("run.yaml", "  path: judge.py\n", ""), ["--adapter", "none"], "judge.path"),
    ("judge name not defined", edit("run.yaml", "  name: score", "  name: grade"), ["--adapter", "none"], "grade"),
    ("judge not callable", lambda ws: write("judge.py", (ws / "judge.py").read_text() + "\nscore = 3\n")(ws),
     ["--adapter", "none"], "judge"),
    ("pipeline import error", lambda ws: write("pipeline.py", "def run(task, adapter)\n    pass\n")(ws),
     ["--adapter", "none"], "pipeline.py"),
    ("pipeline raises at import", write("pipeline.py", "import no_such_module_xyz\n"), ["--adapter", "none"],
     "no_such_module_xyz"),
    ("pipeline file missing", remove("pipeline.py"), ["--adapter", "none"], "pipeline.py"),
    ("agent.name without a colon", edit("run.yaml", "name: pipeline.py:run", "name: pipeline.py"),
     ["--adapter", "none"], "agent.name"),
    ("agent.name unset", edit("run.yaml", "  name: pipeline.py:run\n", ""), ["--adapter", "none"], "agent.name"),
    ("pipeline function missing", edit("run.yaml", "name: pipeline.py:run", "name: pipeline.py:go"),
     ["--adapter", "none"], "go"),
    # selectors and the tree
    ("unknown selector", nothing, ["--adapter", "nosuchtag"], "nosuchtag"),
    ("selector like an option", nothing, ["--adapter=--output=pwned.txt"], "--output"),
    ("selector with a space", nothing, ["--adapter", "root --all"], "root --all"),
    ("selector with a control character", nothing, ["--adapter", "root\x1b[2J"], "selector"),
    ("adapter dir without adapter.yaml", write("adapters/empty/ADAPTER.md", "# no manifest\n"),
     ["--adapter", "adapters/empty"], "adapter.yaml"),
    ("missing tree", remove("runs/trees"), ["--adapter", "root"], "trees"),
    ("tree not a git repository", lambda ws: (remove("runs/trees/demo-notes")(ws),
                                              (ws / "runs/trees/demo-notes").mkdir()),
     ["--adapter", "root"], "git"),
    ("two selectors, one label", write("adapters/root/adapter.yaml", "template: {id: demo-notes}\n"),
     ["--adapter", "root", "--adapter", "adapters/root"], "root"),
    ("the same selector twice", nothing, ["--adapter", "none", "--adapter", "none"], "none"),
    # launch settings and output
    ("limit zero", nothing, ["--adapter", "none", "--limit", "0"], "--limit"),
    ("concurrency negative", nothing, ["--adapter", "none", "--concurrency", "-2"], "concurrency"),
    ("no --adapter", nothing, [], "--adapter"),
    ("output folder is a file", lambda ws: (ws / "out").write_text("a file, not a folder\n"),
     ["--adapter", "none", "trainer.output_dir=out", "trainer.tree_dir=runs/trees/demo-notes"], "out"),
]


def snapshot(ws: Path) -> dict[str, str]:
    """Every file under the workspace and its content hash (git internals included)."""
    out = {}
    for path in sorted(ws.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[str(path.relative_to(ws))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    from hermit_tui.demo import build_demo
    return build_demo(tmp_path_factory.mktemp("pristine") / "ws").parent


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize("name, mutate, args, needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input(name, mutate, args, needle, pristine, tmp_path, capsys, monkeypatch):
    from hermit_tui.demo import build_demo
    ws = build_demo(tmp_path / "ws").parent  # a private workspace: git worktrees do not survive a copy
    monkeypatch.chdir(ws)
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    mutate(ws)
    before = snapshot(ws)
    code = main(["eval", "--config", "run.yaml", *args])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, captured.err
    assert len(lines) == 1, captured.err
    assert needle in lines[0], lines[0]
    assert "Traceback" not in captured.err and captured.out == ""
    assert snapshot(ws) == before  # nothing on disk was written, overwritten or removed
    assert not (ws / "pwned.txt").exists()


def test_bad_config_in_the_dashboard_is_a_notification(tmp_path):
    """The dashboard reports the same errors as notifications; the app keeps running."""
    import asyncio

    from hermit_tui.app import HermitApp
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "run.yaml").write_text("data: {tasks: tasks.jsonl, test: test.txt}\n")
    (ws / "tasks.jsonl").write_text('{"id": "a"}\n{"id": "a"}\n')

    async def scenario():
        app = HermitApp(ws / "run.yaml")
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(100):
                if app._notifications:
                    break
                await pilot.pause(0.05)
            notes = list(app._notifications)
            assert notes and notes[0].severity == "error" and "tasks.jsonl" in notes[0].message
            assert app.is_running
    asyncio.run(scenario())


def test_attempt_level_problems_are_recorded_not_fatal(tmp_path):
    """Judge returning inf, a score outside [0, 1] (recorded and flagged), a pipeline output of several MB."""
    from hermit_tui.core import events as ev
    from hermit_tui.core.config import load_config
    from hermit_tui.core.runner import EvalRun
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ("inf", "big", "out")))
    (tmp_path / "test.txt").write_text("inf\nbig\nout\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(
        "def run(task, adapter):\n"
        "    return {'output': 'x' * 3_000_000 if task['id'] == 'big' else task['id'], 'cost_usd': 0.0}\n")
    (tmp_path / "judge.py").write_text(
        "def score(task, output):\n"
        "    return {'inf': float('inf'), 'big': 1.0, 'out': 7.5}[task['id']]\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run}\njudge: {path: judge.py}\ntrainer: {run_name: t, tree_dir: tree}\n")
    seen = []
    summary = EvalRun(load_config(tmp_path / "run.yaml"), ["none"], on_event=seen.append).run_sync()["none"]
    rows = {json.loads(l)["id"]: json.loads(l) for l in
            (tmp_path / "runs/t/eval/none/results.jsonl").read_text().splitlines()}
    assert rows["inf"]["status"] == "judge_error" and "finite" in rows["inf"]["error"]
    assert rows["big"]["status"] == "ok" and len(rows["big"]["output"]) == 3_000_000
    assert rows["out"]["judge"]["score"] == 7.5  # recorded as given ...
    assert summary.model_extra["scores_outside_unit"] == 1  # ... and flagged
    assert any(isinstance(e, ev.RunLog) and "outside [0, 1]" in e.message for e in seen)
    assert os.path.getsize(tmp_path / "runs/t/eval/none/results.jsonl") > 3_000_000
