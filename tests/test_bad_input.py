"""A corpus of malformed inputs: each gives one line naming the file, key or line, exit code 2, no traceback, and
leaves every file already on disk as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from demo_copies import copy_workspace
from hostile_util import snapshot, time_limit
from waiting import wait_for

from hermit_tui.cli import main

Mutation = Callable[[Path], None]


def edit(path: str, old: str, new: str) -> Mutation:
    def apply(ws: Path) -> None:
        text = (ws / path).read_text()
        assert old in text, (path, old)
        (ws / path).write_text(text.replace(old, new, 1))

    return apply


def replace_with_folder(path: str) -> Mutation:
    def apply(ws: Path) -> None:
        remove(path)(ws)
        (ws / path).mkdir()

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
    out = subprocess.run(
        ["git", "log", "--all", "--fixed-strings", "--grep=[invalid:", "--format=%h"],
        cwd=ws / "runs/trees/demo-notes",
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()[0]


# (name, mutation, extra CLI args after `eval --config run.yaml`, what the one line must name)
CASES: list[tuple[str, Mutation, list[str], str]] = [
    # the config
    ("missing config", remove("run.yaml"), ["--adapter", "none"], "run.yaml"),
    ("config is a folder", replace_with_folder("run.yaml"), ["--adapter", "none"], "run.yaml"),
    ("config not utf-8", write("run.yaml", b"data:\n  tasks: \xff\xfe\n"), ["--adapter", "none"], "run.yaml"),
    (
        "yaml syntax error",
        edit("run.yaml", "  tasks: tasks.jsonl", "  tasks: [tasks.jsonl"),
        ["--adapter", "none"],
        "run.yaml",
    ),
    ("top level a list", write("run.yaml", "- a\n- b\n"), ["--adapter", "none"], "run.yaml"),
    ("unknown top-level key", edit("run.yaml", "judge:", "judges: 1\njudge:"), ["--adapter", "none"], "judges"),
    (
        "unknown nested key",
        edit("run.yaml", "  concurrency: 4", "  concurency: 4"),
        ["--adapter", "none"],
        "agent.concurency",
    ),
    (
        "section as scalar",
        edit("run.yaml", "judge:\n  path: judge.py\n  name: score", "judge: 3"),
        ["--adapter", "none"],
        "judge",
    ),
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
    (
        "duplicate ids",
        lambda ws: write(
            "tasks.jsonl", (ws / "tasks.jsonl").read_text() + (ws / "tasks.jsonl").read_text().splitlines()[0] + "\n"
        )(ws),
        ["--adapter", "none"],
        "tasks.jsonl",
    ),
    (
        "unknown id in a split",
        lambda ws: write("test.txt", (ws / "test.txt").read_text() + "no-such-task\n")(ws),
        ["--adapter", "none"],
        "test.txt",
    ),
    (
        "duplicate id in a split",
        lambda ws: write("test.txt", (ws / "test.txt").read_text() + (ws / "test.txt").read_text().split()[0] + "\n")(
            ws
        ),
        ["--adapter", "none"],
        "test.txt",
    ),
    ("empty test split", write("test.txt", "# nothing here\n"), ["--adapter", "none"], "test"),
    ("data.test not set", edit("run.yaml", "  test: test.txt\n", ""), ["--adapter", "none"], "data.test"),
    ("missing split file", remove("test.txt"), ["--adapter", "none"], "test.txt"),
    (
        "tasks not utf-8",
        lambda ws: write("tasks.jsonl", (ws / "tasks.jsonl").read_bytes().replace(b'"', b'"\xff', 1))(ws),
        ["--adapter", "none"],
        "tasks.jsonl",
    ),
    # pipeline and judge
    ("judge file missing", remove("judge.py"), ["--adapter", "none"], "judge.py"),
    ("judge.path unset", edit("run.yaml", "  path: judge.py\n", ""), ["--adapter", "none"], "judge.path"),
    ("judge name not defined", edit("run.yaml", "  name: score", "  name: grade"), ["--adapter", "none"], "grade"),
    (
        "judge not callable",
        lambda ws: write("judge.py", (ws / "judge.py").read_text() + "\nscore = 3\n")(ws),
        ["--adapter", "none"],
        "judge",
    ),
    (
        "pipeline import error",
        lambda ws: write("pipeline.py", "def run(task, adapter)\n    pass\n")(ws),
        ["--adapter", "none"],
        "pipeline.py",
    ),
    (
        "pipeline raises at import",
        write("pipeline.py", "import no_such_module_xyz\n"),
        ["--adapter", "none"],
        "no_such_module_xyz",
    ),
    ("pipeline file missing", remove("pipeline.py"), ["--adapter", "none"], "pipeline.py"),
    (
        "agent.name without a colon",
        edit("run.yaml", "name: pipeline.py:run", "name: pipeline.py"),
        ["--adapter", "none"],
        "agent.name",
    ),
    ("agent.name unset", edit("run.yaml", "  name: pipeline.py:run\n", ""), ["--adapter", "none"], "agent.name"),
    (
        "pipeline function missing",
        edit("run.yaml", "name: pipeline.py:run", "name: pipeline.py:go"),
        ["--adapter", "none"],
        "go",
    ),
    # selectors and the tree
    ("unknown selector", nothing, ["--adapter", "nosuchtag"], "nosuchtag"),
    ("selector like an option", nothing, ["--adapter=--output=pwned.txt"], "--output"),
    ("selector with a space", nothing, ["--adapter", "root --all"], "root --all"),
    ("selector with a control character", nothing, ["--adapter", "root\x1b[2J"], "selector"),
    (
        "adapter dir without adapter.yaml",
        write("adapters/empty/ADAPTER.md", "# no manifest\n"),
        ["--adapter", "adapters/empty"],
        "adapter.yaml",
    ),
    ("missing tree", remove("runs/trees"), ["--adapter", "root"], "trees"),
    ("tree not a git repository", replace_with_folder("runs/trees/demo-notes"), ["--adapter", "root"], "git"),
    (
        "two selectors, one label",
        write("adapters/root/adapter.yaml", "template: {id: demo-notes}\n"),
        ["--adapter", "root", "--adapter", "adapters/root"],
        "root",
    ),
    ("the same selector twice", nothing, ["--adapter", "none", "--adapter", "none"], "none"),
    # launch settings and output
    ("limit zero", nothing, ["--adapter", "none", "--limit", "0"], "--limit"),
    ("concurrency negative", nothing, ["--adapter", "none", "--concurrency", "-2"], "concurrency"),
    ("no --adapter", nothing, [], "--adapter"),
    (
        "output folder is a file",
        write("out", "a file, not a folder\n"),
        ["--adapter", "none", "trainer.output_dir=out", "trainer.tree_dir=runs/trees/demo-notes"],
        "out",
    ),
]


# -- part 2 (issue 12): inputs that crashed or hung instead of giving one line ----------------------------------------
EVAL = "runs/demo/eval"
FAST = ["agent.params.latency_scale=0"]
RESUME = ["--limit", "2", "eval.repeats=1", *FAST, "--resume"]  # resumes the smoke subsets (eval/<label>/smoke/)


def smoke_of(label: str) -> str:
    return f"{EVAL}/{label}/smoke"


def fifo(path: str) -> Mutation:
    """Replace ``path`` by a named pipe nobody writes to: reading it would block forever."""

    def apply(ws: Path) -> None:
        target = ws / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() or target.is_symlink():
            remove(path)(ws)
        os.mkfifo(target)

    return apply


def link(path: str, to: str) -> Mutation:
    def apply(ws: Path) -> None:
        target = ws / path
        if target.exists() or target.is_symlink():
            remove(path)(ws)
        target.symlink_to(to)

    return apply


def socket_file(path: str) -> Mutation:
    """A Unix socket: it cannot be opened for reading, even by root."""

    def apply(ws: Path) -> None:
        import socket

        target = ws / path
        target.parent.mkdir(parents=True, exist_ok=True)
        sock = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(target.parent)  # bound by its name: a socket's path may be at most 107 bytes, a temp folder's longer
        try:
            sock.bind(target.name)
        finally:
            os.chdir(here)
            sock.close()

    return apply


def steps(*mutations: Mutation) -> Mutation:
    def apply(ws: Path) -> None:
        for m in mutations:
            m(ws)

    return apply


def earlier(label: str = "none") -> Mutation:
    """An earlier evaluation, as hermit eval writes it: it must be neither archived nor touched."""
    record = {
        "repeat": 1,
        "id": "arith-01",
        "status": "ok",
        "error": None,
        "output": "1776",
        "judge": {"score": 1.0, "feedback": "right", "extra": {}},
        "cost_usd": 0.001,
        "wall_s": 0.1,
        "api_speed": None,
        "tokens": 10,
        "log": None,
    }
    summary = {
        "adapter": label,
        "commit": None,
        "tasks": 1,
        "repeats": 1,
        "mean_score": 1.0,
        "solved_once": 1.0,
        "cost_usd": 0.001,
        "unknown_cost_tasks": 0,
        "errors": 0,
        "wall_s": 0.1,
    }
    return steps(
        write(f"{EVAL}/{label}/results.jsonl", json.dumps(record) + "\n"),
        write(f"{EVAL}/{label}/summary.json", json.dumps(summary, indent=1)),
    )


def evaluated(*labels: str) -> Mutation:
    """Earlier hermit-tui evaluations of ``labels`` under the RESUME protocol (2 tasks, 1 repeat)."""

    def apply(ws: Path) -> None:
        from hermit_tui.core.run.runner import EvalRun
        from hermit_tui.core.workspace.config import load_config

        EvalRun(load_config(ws / "run.yaml", FAST), list(labels), repeats=1, limit=2, update_card=False).run_sync()

    return apply


def cut_last_line(label: str) -> Mutation:
    def apply(ws: Path) -> None:
        path = ws / smoke_of(label) / "results.jsonl"
        path.write_bytes(path.read_bytes()[:-25])

    return apply


def garble_first_line(label: str) -> Mutation:
    def apply(ws: Path) -> None:
        path = ws / smoke_of(label) / "results.jsonl"
        lines = path.read_bytes().split(b"\n")
        path.write_bytes(b"\n".join([lines[0][:30], *lines[1:]]))

    return apply


def lock(content: str | bytes) -> Mutation:
    return steps(earlier(), write(f"{EVAL}/none/.hermit-tui.lock", content))


def adapter_dir(name: str) -> Mutation:
    return write(f"adapters/{name}/adapter.yaml", "template: {id: demo-notes}\n")


HOST = os.uname().nodename
RECURSIVE = "agent:\n  name: pipeline.py:run\n  params: &loop\n    again: *loop\n"
BOMB = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 12))
DEEP = 3000

CASES += [
    # YAML that recurses, explodes or nests too deep: in run.yaml, in an override, in a template manifest
    (
        "recursive yaml alias in run.yaml",
        edit("run.yaml", "agent:\n  name: pipeline.py:run\n", RECURSIVE),
        ["--adapter", "none"],
        "run.yaml",
    ),
    (
        "recursive alias at the top level",
        lambda ws: write("run.yaml", "&top {data: *top}\n")(ws),
        ["--adapter", "none"],
        "run.yaml",
    ),
    (
        "recursive alias in a list",
        edit(
            "run.yaml",
            "agent:\n  name: pipeline.py:run\n",
            "agent:\n  name: pipeline.py:run\n  params: {x: &l [1, *l]}\n",
        ),
        ["--adapter", "none"],
        "run.yaml",
    ),
    (
        "alias bomb in run.yaml",
        edit(
            "run.yaml",
            "agent:\n  name: pipeline.py:run\n",
            "agent:\n  name: pipeline.py:run\n  params:\n    " + BOMB.replace("\n", "\n    ").rstrip() + "\n",
        ),
        ["--adapter", "none"],
        "run.yaml",
    ),
    (
        "deeply nested yaml flow",
        edit(
            "run.yaml",
            "agent:\n  name: pipeline.py:run\n",
            "agent:\n  name: pipeline.py:run\n  params: {x: " + "[" * DEEP + "]" * DEEP + "}\n",
        ),
        ["--adapter", "none"],
        "run.yaml",
    ),
    (
        "nested yaml past the depth limit",
        edit(
            "run.yaml",
            "agent:\n  name: pipeline.py:run\n",
            "agent:\n  name: pipeline.py:run\n  params: {x: " + "[" * 400 + "]" * 400 + "}\n",
        ),
        ["--adapter", "none"],
        "run.yaml",
    ),
    (
        "deeply nested yaml blocks",
        edit(
            "run.yaml",
            "agent:\n  name: pipeline.py:run\n",
            "agent:\n  name: pipeline.py:run\n  params:\n"
            + "".join("  " * (i + 2) + f"k{i}:\n" for i in range(300))
            + "\n",
        ),
        ["--adapter", "none"],
        "run.yaml",
    ),
    ("recursive alias in an override", nothing, ["--adapter", "none", "agent.params.x=&a [*a]"], "override"),
    (
        "alias bomb in an override",
        nothing,
        [
            "--adapter",
            "none",
            "agent.params.x="
            + "{"
            + ", ".join(
                f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" if i else "l0: &l0 [x]" for i in range(12)
            )
            + "}",
        ],
        "override",
    ),
    ("deeply nested override", nothing, ["--adapter", "none", "agent.params.x=" + "[" * DEEP + "]" * DEEP], "override"),
    (
        "nested override past the depth limit",
        nothing,
        ["--adapter", "none", "agent.params.x=" + "{a: " * 300 + "1" + "}" * 300],
        "override",
    ),
    (
        "recursive alias in the template manifest",
        lambda ws: write("template/adapter.yaml", (ws / "template/adapter.yaml").read_text() + "loop: &m [*m]\n")(ws),
        ["--adapter", "root"],
        "adapter.yaml",
    ),
    # task rows nested too deep
    (
        "deeply nested task row",
        lambda ws: write(
            "tasks.jsonl", (ws / "tasks.jsonl").read_text() + '{"id": "deep", "x": ' + "[" * DEEP + "]" * DEEP + "}\n"
        )(ws),
        ["--adapter", "none"],
        "tasks.jsonl:41",
    ),
    (
        "task row past the depth limit",
        lambda ws: write(
            "tasks.jsonl",
            (ws / "tasks.jsonl").read_text() + '{"id": "deep", "x": ' + '{"a": ' * 400 + "1" + "}" * 400 + "}\n",
        )(ws),
        ["--adapter", "none"],
        "tasks.jsonl:41",
    ),
    # FIFOs, devices and sockets where files are read
    ("run.yaml is a FIFO", fifo("run.yaml"), ["--adapter", "none"], "run.yaml"),
    ("tasks file is a FIFO", fifo("tasks.jsonl"), ["--adapter", "none"], "tasks.jsonl"),
    ("test split is a FIFO", fifo("test.txt"), ["--adapter", "none"], "test.txt"),
    ("train split is a FIFO", fifo("train.txt"), ["--adapter", "none"], "train.txt"),
    ("judge file is a FIFO", fifo("judge.py"), ["--adapter", "none"], "judge.py"),
    ("pipeline file is a FIFO", fifo("pipeline.py"), ["--adapter", "none"], "pipeline.py"),
    ("tasks file is /dev/zero", link("tasks.jsonl", "/dev/zero"), ["--adapter", "none"], "/dev/zero"),
    ("test split is /dev/zero", link("test.txt", "/dev/zero"), ["--adapter", "none"], "/dev/zero"),
    ("run.yaml is /dev/zero", link("run.yaml", "/dev/zero"), ["--adapter", "none"], "run.yaml"),
    (
        "tasks file is a socket",
        steps(remove("tasks.jsonl"), socket_file("tasks.jsonl")),
        ["--adapter", "none"],
        "tasks.jsonl",
    ),
    ("template manifest is a FIFO", fifo("template/adapter.yaml"), ["--adapter", "root"], "adapter.yaml"),
    (
        "a FIFO inside an adapter folder",
        steps(adapter_dir("piped"), fifo("adapters/piped/notes.md")),
        ["--adapter", "adapters/piped"],
        "notes.md",
    ),
    (
        "adapter.yaml is a FIFO",
        fifo("adapters/piped2/adapter.yaml"),
        ["--adapter", "adapters/piped2"],
        "adapters/piped2",
    ),
    (
        "a socket inside an adapter folder",
        steps(adapter_dir("sock"), socket_file("adapters/sock/agent.sock")),
        ["--adapter", "adapters/sock"],
        "agent.sock",
    ),
    (
        "a FIFO deep inside an adapter folder",
        steps(adapter_dir("deep"), fifo("adapters/deep/skills/a/b/c.md")),
        ["--adapter", "adapters/deep"],
        "c.md",
    ),
    (
        "ADAPTER.md is a socket",
        steps(adapter_dir("sock2"), socket_file("adapters/sock2/ADAPTER.md")),
        ["--adapter", "adapters/sock2"],
        "ADAPTER.md",
    ),
    # absurd numbers, with an earlier evaluation that must not be archived first
    ("repeats astronomically many", earlier(), ["--adapter", "none", "eval.repeats=1000000000000"], "eval.repeats"),
    ("repeats past a 64-bit integer", earlier(), ["--adapter", "none", "eval.repeats=" + "9" * 25], "eval.repeats"),
    ("concurrency a billion", earlier(), ["--adapter", "none", "agent.concurrency=1000000000"], "agent.concurrency"),
    ("--concurrency a billion", earlier(), ["--adapter", "none", "--concurrency", "1000000000"], "concurrency"),
    (
        "old pipeline.concurrency a billion",
        earlier(),
        ["--adapter", "none", "pipeline.concurrency=1000000000"],
        "concurrency",
    ),
    (
        "processes a hundred thousand",
        earlier(),
        ["--adapter", "none", "--executor", "processes", "--concurrency", "100000"],
        "concurrency",
    ),
    ("timeout infinite", earlier(), ["--adapter", "none", "agent.timeout_min=.inf"], "agent.timeout_min"),
    ("timeout 1e308 minutes", earlier(), ["--adapter", "none", "agent.timeout_min=1e308"], "agent.timeout_min"),
    (
        "timeout a million years",
        earlier(),
        ["--adapter", "none", "agent.timeout_min=525600000000"],
        "agent.timeout_min",
    ),
    ("timeout a boolean", earlier(), ["--adapter", "none", "agent.timeout_min=true"], "agent.timeout_min"),
    ("--limit past a 64-bit integer", earlier(), ["--adapter", "none", "--limit", "9" * 30], "--limit"),
    (
        "attempts beyond any machine",
        earlier(),
        ["--adapter", "none", "--adapter", "root", "eval.repeats=100000"],
        "repeats",
    ),
    # lock files holding garbage, with an earlier evaluation beside them
    ("lock holds a list", lock("[1, 2, 3]"), ["--adapter", "none"], ".hermit-tui.lock"),
    (
        "lock holds a 20-digit pid",
        lock(json.dumps({"pid": 10**20, "host": HOST})),
        ["--adapter", "none"],
        ".hermit-tui.lock",
    ),
    (
        "lock holds a negative pid",
        lock(json.dumps({"pid": -1, "host": HOST})),
        ["--adapter", "none"],
        ".hermit-tui.lock",
    ),
    ("lock holds pid 0", lock(json.dumps({"pid": 0, "host": HOST})), ["--adapter", "none"], ".hermit-tui.lock"),
    (
        "lock holds a text pid",
        lock(json.dumps({"pid": "4242", "host": HOST})),
        ["--adapter", "none"],
        ".hermit-tui.lock",
    ),
    (
        "lock holds a float pid",
        lock(json.dumps({"pid": 1e300, "host": HOST})),
        ["--adapter", "none"],
        ".hermit-tui.lock",
    ),
    ("lock holds a number", lock("12345"), ["--adapter", "none"], ".hermit-tui.lock"),
    ("lock holds binary garbage", lock(b"\xff\xfe\x00garbage"), ["--adapter", "none"], ".hermit-tui.lock"),
    ("lock holds a deep json", lock("[" * DEEP + "]" * DEEP), ["--adapter", "none"], ".hermit-tui.lock"),
    (
        "lock is a folder",
        steps(earlier(), lambda ws: (ws / EVAL / "none/.hermit-tui.lock").mkdir()),
        ["--adapter", "none"],
        ".hermit-tui.lock",
    ),
    (
        "lock is a FIFO",
        steps(earlier(), fifo(f"{EVAL}/none/.hermit-tui.lock")),
        ["--adapter", "none"],
        ".hermit-tui.lock",
    ),
    (
        "second selector's lock is garbage",
        steps(earlier("root"), lock("[]")),
        ["--adapter", "root", "--adapter", "none"],
        ".hermit-tui.lock",
    ),
    # the evaluation folders themselves
    ("eval/<label> is a file", write(f"{EVAL}/none", "not a folder\n"), ["--adapter", "none"], "eval/none"),
    (
        "second eval/<label> is a file",
        steps(earlier("none"), write(f"{EVAL}/root", "x\n")),
        ["--adapter", "none", "--adapter", "root"],
        "eval/root",
    ),
    ("eval is a file", write(f"{EVAL}", "not a folder\n"), ["--adapter", "none"], "eval"),
    ("archive is a file", steps(earlier(), write(f"{EVAL}/none/archive", "x\n")), ["--adapter", "none"], "archive"),
    (
        "results.jsonl is a folder",
        lambda ws: (ws / EVAL / "none/results.jsonl").mkdir(parents=True),
        ["--adapter", "none"],
        "results.jsonl",
    ),
    (
        "summary.json is a FIFO",
        steps(earlier(), fifo(f"{EVAL}/none/summary.json")),
        ["--adapter", "none"],
        "summary.json",
    ),
    # resume: validate every selector's files before touching any
    (
        "refused resume leaves a cut line alone",
        steps(evaluated("none", "root"), cut_last_line("none"), garble_first_line("root")),
        ["--adapter", "none", "--adapter", "root", *RESUME],
        "root/smoke/results.jsonl",
    ),
    (
        "resume under another protocol",
        steps(evaluated("none", "root"), cut_last_line("none")),
        ["--adapter", "none", "--adapter", "root", "--limit", "2", "eval.repeats=2", *FAST, "--resume"],
        "repeats",
    ),
    (
        "resume of a results.jsonl FIFO",
        steps(evaluated("none"), fifo(f"{smoke_of('none')}/results.jsonl")),
        ["--adapter", "none", *RESUME],
        "results.jsonl",
    ),
    (
        "resume of a summary.json FIFO",
        steps(evaluated("none"), fifo(f"{smoke_of('none')}/summary.json")),
        ["--adapter", "none", *RESUME],
        "summary.json",
    ),
    (
        "resume with a garbled summary",
        steps(evaluated("none"), write(f"{smoke_of('none')}/summary.json", "[1]")),
        ["--adapter", "none", *RESUME],
        "summary.json",
    ),
    (
        "resume with a results line nested too deep",
        steps(
            evaluated("none"),
            lambda ws: write(
                f"{smoke_of('none')}/results.jsonl",
                "[" * DEEP + "]" * DEEP + "\n" + (ws / smoke_of("none") / "results.jsonl").read_text(),
            )(ws),
        ),
        ["--adapter", "none", *RESUME],
        "results.jsonl:1",
    ),
    (
        "resume whose results lock is garbage",
        steps(evaluated("none"), write(f"{smoke_of('none')}/.hermit-tui.lock", "[]")),
        ["--adapter", "none", *RESUME],
        ".hermit-tui.lock",
    ),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    from hermit_tui.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("pristine") / "ws").parent


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 90


@pytest.mark.parametrize("name, mutate, args, needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input(name, mutate, args, needle, pristine, tmp_path, capsys, monkeypatch):
    # a private copy of the demo built once for the module, its git worktree pointed at the copy (a build per case
    # was 0.2 s of git work each, over 130 cases)
    ws = copy_workspace(pristine, tmp_path / "ws").parent
    monkeypatch.chdir(ws)
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    mutate(ws)
    before = snapshot(ws)
    with time_limit(60, name):
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

    from hermit_tui.dashboard.app import HermitApp

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "run.yaml").write_text("data: {tasks: tasks.jsonl, test: test.txt}\n")
    (ws / "tasks.jsonl").write_text('{"id": "a"}\n{"id": "a"}\n')

    async def scenario():
        app = HermitApp(ws / "run.yaml")
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app._notifications, what="a notification")
            notes = list(app._notifications)
            assert notes and notes[0].severity == "error" and "tasks.jsonl" in notes[0].message
            assert app.is_running

    asyncio.run(scenario())


def test_attempt_level_problems_are_recorded_not_fatal(tmp_path):
    """Judge returning inf, a score outside [0, 1] (recorded and flagged), a pipeline output of several MB."""
    from hermit_tui.core.run import events as ev
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ("inf", "big", "out")))
    (tmp_path / "test.txt").write_text("inf\nbig\nout\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(
        "def run(task, adapter):\n"
        "    return {'output': 'x' * 3_000_000 if task['id'] == 'big' else task['id'], 'cost_usd': 0.0}\n"
    )
    (tmp_path / "judge.py").write_text(
        "def score(task, output):\n    return {'inf': float('inf'), 'big': 1.0, 'out': 7.5}[task['id']]\n"
    )
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run}\njudge: {path: judge.py}\ntrainer: {run_name: t, tree_dir: tree}\n"
    )
    seen: list[ev.Event] = []
    summary = EvalRun(load_config(tmp_path / "run.yaml"), ["none"], on_event=seen.append).run_sync()["none"]
    rows = {
        json.loads(line)["id"]: json.loads(line)
        for line in (tmp_path / "runs/t/eval/none/results.jsonl").read_text().splitlines()
    }
    assert rows["inf"]["status"] == "judge_error" and "finite" in rows["inf"]["error"]
    assert rows["big"]["status"] == "ok" and len(rows["big"]["output"]) == 3_000_000
    assert rows["out"]["judge"]["score"] == 7.5  # recorded as given ...
    assert summary.scores_outside_unit == 1  # ... and flagged
    assert any(isinstance(e, ev.RunLog) and "outside [0, 1]" in e.message for e in seen)
    assert os.path.getsize(tmp_path / "runs/t/eval/none/results.jsonl") > 3_000_000
