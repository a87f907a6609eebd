"""What pipelines and judges print: kept per attempt (eval/<label>/logs/<start>/<task>.r<N>.printed.txt, named by the
record's ``printed``), never on the command's stdout (hermit-tui eval prints exactly its JSON there)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hermit_tui.core.records.results import read_results
from hermit_tui.core.run.printed import PRINT_LIMIT, Tail, capturing, routed, save_printed
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

BIN = Path(sys.executable).parent / "hermit-tui"
needs_bin = pytest.mark.skipif(not BIN.exists(), reason="the hermit-tui console script is not installed here")

# Prints on every path a pipeline can take: Python-level stdout and stderr, straight to fds 1 and 2, and from a
# subprocess it starts. The judge prints too. Each line names the task and repeat, so its owner can be checked.
PRINTER = """
import os, subprocess, sys
from hermit_tui.core.context import current_repeat

def run(task, adapter):
    tag = f"{task['id']}.r{current_repeat()}"
    print(f"PYOUT {tag}")
    print(f"PYERR {tag}", file=sys.stderr)
    os.write(1, f"FDOUT {tag}\\n".encode())
    os.write(2, f"FDERR {tag}\\n".encode())
    subprocess.run(["sh", "-c", f"echo SUBOUT {tag}; echo SUBERR {tag} >&2"], check=True)
    if task["id"].endswith("5"):
        raise ValueError(f"boom {tag}")
    return {"output": "x", "cost_usd": 0.0}

def score(task, output):
    print(f"JUDGE {task['id']}")
    return 0.5
"""
PY_LINES = ("PYOUT", "PYERR")
FD_LINES = ("FDOUT", "FDERR", "SUBOUT", "SUBERR")


def printing_project(demo_config: Path) -> tuple[Path, list[str]]:
    (demo_config.parent / "printer.py").write_text(PRINTER)
    overrides = ["agent.name=printer.py:run", "judge.path=printer.py", "judge.name=score", "eval.repeats=2"]
    return demo_config, overrides


def evaluation_folder(config: Path, label: str, smoke: bool = True) -> Path:
    folder = config.parent / "runs/demo/eval" / label
    return folder / "smoke" if smoke else folder


def check_kept(folder: Path, tasks: int, repeats: int, *, fd_level: bool) -> None:
    """Every attempt names its own file, which holds its own lines (and no other attempt's)."""
    records = read_results(folder / "results.jsonl").records
    assert len(records) == tasks * repeats
    for rec in records:
        tag = f"{rec.id}.r{rec.repeat}"
        assert rec.printed, rec
        path = Path(rec.printed)
        assert path.parent.parent == folder / "logs" and path.name == f"{rec.id}.r{rec.repeat}.printed.txt"
        lines = path.read_text().splitlines()
        expected = {f"{kind} {tag}" for kind in PY_LINES + (FD_LINES if fd_level else ())}
        assert expected <= set(lines), (tag, lines)
        assert all(line.endswith(tag) for line in lines if line.split(" ")[0] in PY_LINES + FD_LINES), lines
        failed = rec.id.endswith("5")
        assert rec.status == ("error" if failed else "ok")
        assert (f"JUDGE {rec.id}" in lines) is (not failed)  # the judge ran (and printed) only when it could


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_each_attempt_keeps_what_it_printed(demo_config, executor):
    path, overrides = printing_project(demo_config)
    config = load_config(path, overrides)
    EvalRun(config, ["none"], limit=4, executor=executor, concurrency=3).run_sync()
    # under threads, fd-level output cannot be told apart per attempt: only the Python-level lines are the attempt's
    check_kept(evaluation_folder(path, "none"), 4, 2, fd_level=executor == "processes")


@needs_bin
@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_the_eval_commands_stdout_is_exactly_its_json(demo_config, executor):
    path, overrides = printing_project(demo_config)
    out = subprocess.run(
        [
            str(BIN),
            "eval",
            "--config",
            str(path),
            "--adapter",
            "none",
            "--adapter",
            "root",
            "--limit",
            "3",
            "--no-card",
            "--executor",
            executor,
            *overrides,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)  # the whole stdout: nothing else was printed there
    assert set(data) == {"none", "root"} and data["none"]["tasks"] == 3 and data["none"]["errors"] == 2
    for marker in PY_LINES + FD_LINES + ("JUDGE",):
        assert marker not in out.stdout
        assert marker not in out.stderr  # nor among the progress lines: each attempt's lines are in its file
    for label in ("none", "root"):
        folder = evaluation_folder(path, label)
        check_kept(folder, 3, 2, fd_level=executor == "processes")
    if executor == "threads":  # fd-level output of the driver: one file for the launch, every line of it kept
        stray = next((evaluation_folder(path, "none") / "logs").glob("*/printed-outside-attempts.txt"))
        lines = set(stray.read_text().splitlines())
        tags = {f"{t}.r{r}" for t in ("arith-04", "arith-05", "unit-04") for r in (1, 2)}
        assert lines == {f"{kind} {tag}" for kind in FD_LINES for tag in tags}, lines
        assert "printed-outside-attempts.txt" in out.stderr  # the run says where it is


@needs_bin
def test_show_names_the_file(demo_config):
    path, overrides = printing_project(demo_config)
    config = load_config(path, overrides)
    EvalRun(config, ["none"], repeats=1).run_sync()
    out = subprocess.run(
        [
            str(BIN),
            "show",
            "--config",
            str(path),
            "--adapter",
            "none",
            "--task",
            "arith-04",
            "--format",
            "json",
            *overrides,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)["attempts"][0]["printed"]
    assert "PYOUT arith-04.r1" in Path(printed).read_text()


def test_tail_keeps_the_last_characters_and_says_how_many_went():
    tail = Tail(limit=10)
    for piece in ("abcdef", "ghij", "klmno"):
        tail.write(piece)
    assert tail.text() == "[... 5 earlier characters not kept]\nfghijklmno"
    assert not Tail()


def test_save_printed_bounds_the_file_and_writes_nothing_for_nothing(tmp_path):
    assert save_printed(tmp_path, "t", 1, "", "") is None and not list(tmp_path.iterdir())
    assert save_printed(None, "t", 1, "x") is None
    text = "y" * (PRINT_LIMIT + 7)
    saved = save_printed(tmp_path, "../t/x", 2, text)
    assert saved is not None
    path = Path(saved)
    assert path.parent == tmp_path  # a task id cannot place the file elsewhere
    kept = path.read_text()
    assert kept.startswith("[... 7 earlier characters not kept]\n") and kept.endswith("y" * PRINT_LIMIT)


def test_the_router_sends_each_threads_prints_to_its_own_attempt(capsys):
    tails = {name: Tail() for name in ("a", "b")}
    barrier = threading.Barrier(2)

    def attempt(name: str) -> None:
        with capturing(tails[name]):
            for i in range(200):
                print(f"{name}{i}")
                if i == 100:
                    barrier.wait()  # both threads print at the same time
            print(f"{name}-err", file=sys.stderr)

    with routed():
        threads = [threading.Thread(target=attempt, args=(n,)) for n in tails]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("not an attempt's")
    for name, tail in tails.items():
        assert tail.text().splitlines() == [f"{name}{i}" for i in range(200)] + [f"{name}-err"]
    seen = capsys.readouterr()
    assert seen.out == "not an attempt's\n" and seen.err == ""
    assert not isinstance(sys.stdout, type(None)) and type(sys.stdout).__name__ != "_Router"  # put back
