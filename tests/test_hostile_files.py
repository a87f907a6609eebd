"""Hostile run folders (issue 29): links that lead out of the run folder, special files where data files belong,
read-only folders, full disks and arguments that would climb out of ``eval/``.

Every case runs under a time limit (a FIFO must never hang a command) and compares the file hashes of the
workspace's surroundings before and after: hermit-tui writes nothing outside the run folder, and a refusal is one
line naming the file, with exit code 2.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from demo_copies import copy_workspace
from hostile_util import snapshot, time_limit

from hermit_tui.cli import main
from hermit_tui.core.records.folders import LOCK
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

LIMIT_S = 60
FAST = ["agent.params.latency_scale=0"]
RUN = Path("runs") / "demo"
EVAL = RUN / "eval"


@pytest.fixture(autouse=True)
def limited():
    with time_limit(LIMIT_S, "the case"):
        yield


@pytest.fixture(scope="session")
def evaluated(demo_template, tmp_path_factory) -> Path:
    """The demo with none and final evaluated (none with a transcript-less pipeline, as the demo's), once."""
    config = copy_workspace(demo_template, tmp_path_factory.mktemp("hostile-files") / "demo")
    EvalRun(load_config(config, FAST), ["none", "final"], update_card=False).run_sync()
    return config.parent


@pytest.fixture
def ws(evaluated, tmp_path) -> Path:
    """A private copy (``<tmp>/demo``) beside a folder ``<tmp>/outside`` that holds a file and an empty folder."""
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "file.jsonl").write_text('{"precious": true}\n')
    return copy_workspace(evaluated, tmp_path / "demo").parent


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def first_task(ws: Path, label: str = "none") -> str:
    return json.loads((ws / EVAL / label / "results.jsonl").read_text().splitlines()[0])["id"]


def replace_by_link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def outside_state(ws: Path) -> dict[str, str]:
    return snapshot(ws.parent, exclude=("demo",))


def assert_refused(code: int, err: str, link: Path) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(link) in lines[0] and "symbolic link" in lines[0], err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------------------- links

# (the path replaced by a link, relative to the workspace; what it points at: a file, a folder or nothing)
LINKS = [
    (EVAL / "none" / "results.jsonl", "file.jsonl"),
    (EVAL / "none" / "results.jsonl", "missing.jsonl"),
    (EVAL / "none" / "transcripts.jsonl", "file.jsonl"),
    (EVAL / "none" / "transcripts.jsonl", "missing.jsonl"),
    (EVAL / "none" / "annotations.jsonl", "missing.jsonl"),
    (EVAL / "none" / "summary.json", "missing.json"),
    (EVAL / "none" / "logs", "folder"),
    (EVAL / "none" / "logs", "missing-folder"),
    (EVAL / "none" / "archive", "folder"),
    (EVAL / "none", "folder"),
    (EVAL / "none", "missing-folder"),
    (EVAL, "folder"),
]


@pytest.mark.parametrize("resume", [False, True], ids=["eval", "resume"])
@pytest.mark.parametrize("where, to", LINKS, ids=[f"{p.relative_to(RUN)}->{t}" for p, t in LINKS])
def test_eval_and_resume_refuse_a_link_where_they_would_write(ws, where, to, resume):
    link = ws / where
    replace_by_link(link, ws.parent / "outside" / to)
    before = outside_state(ws)
    code, _, err = cli(["eval", "--config", str(ws / "run.yaml"), "--adapter", "none", *(["--resume"] * resume), *FAST])
    assert_refused(code, err, link)
    assert outside_state(ws) == before


@pytest.mark.parametrize(
    "where, to",
    [(EVAL / "none" / "annotations.jsonl", "file.jsonl"), (EVAL / "none" / "annotations.jsonl", "missing.jsonl")],
)
def test_annotate_refuses_a_link_where_it_would_write(ws, where, to):
    link = ws / where
    replace_by_link(link, ws.parent / "outside" / to)
    before = outside_state(ws)
    code, _, err = cli(
        ["annotate", "--config", str(ws / "run.yaml"), "--adapter", "none", "--task", first_task(ws)]
        + ["--repeat", "1", "--note", "x", *FAST]
    )
    assert_refused(code, err, link)
    assert outside_state(ws) == before


def test_annotate_refuses_an_evaluation_folder_that_is_a_link_out(ws, tmp_path):
    task = first_task(ws)
    moved = tmp_path / "outside" / "none-moved"
    shutil.move(ws / EVAL / "none", moved)
    (ws / EVAL / "none").symlink_to(moved)
    before = outside_state(ws)
    code, _, err = cli(
        ["annotate", "--config", str(ws / "run.yaml"), "--adapter", "none", "--task", task, "--repeat", "1"]
        + ["--note", "x", *FAST]
    )
    assert_refused(code, err, ws / EVAL / "none")
    assert outside_state(ws) == before


@pytest.mark.parametrize(
    "where",
    [EVAL / "final" / "summary.json", EVAL / ".hermit-tui-publish.jsonl", RUN / "checkout" / "CARD.md"],
    ids=["summary", "publish-log", "card"],
)
def test_publish_refuses_a_link_where_it_would_write(ws, where):
    link = ws / where
    target = ws.parent / "outside" / "file.jsonl"
    if link.exists():
        shutil.copy(link, target)
    replace_by_link(link, target)
    before = outside_state(ws)
    code, _, err = cli(["publish", "--config", str(ws / "run.yaml"), "--yes", *FAST])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    # a linked card is already an uncommitted change of the checkout: refused as such
    assert str(link) in err or (where.name == "CARD.md" and "uncommitted changes" in err), err
    assert outside_state(ws) == before


# ---------------------------------------------------------------------------------------------------- special files


@pytest.mark.parametrize("name", ["annotations.jsonl", "results.jsonl", "transcripts.jsonl", "summary.json"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_special_files_are_refused_by_the_readers_without_hanging(ws, name, kind):
    path = ws / EVAL / "none" / name
    task = first_task(ws)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    before = outside_state(ws)
    config = str(ws / "run.yaml")
    for argv in (
        ["report", "--config", config, *FAST],
        ["show", "--config", config, "--adapter", "none", "--task", task, *FAST],
        ["annotate", "--config", config, "--adapter", "none", "--task", task, "--repeat", "1", *FAST],
        ["annotate", "--config", config, "--adapter", "none", "--task", task, "--repeat", "1", "--note", "n", *FAST],
    ):
        code, out, err = cli(argv)
        assert "Traceback" not in err and "MemoryError" not in err, (argv, err)
        assert code in (0, 2), (argv, code, err)
    assert outside_state(ws) == before


@pytest.mark.parametrize("name", ["run.yaml", "tasks.jsonl"])
def test_a_fifo_for_the_config_or_the_tasks_is_one_line(ws, name):
    (ws / name).unlink()
    os.mkfifo(ws / name)
    code, _, err = cli(["report", "--config", str(ws / "run.yaml"), *FAST])
    assert code == 2 and len(err.strip().splitlines()) == 1 and name in err, err


# ---------------------------------------------------------------------------------------------------- read-only


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
@pytest.mark.parametrize("resume", [False, True])
def test_a_read_only_evaluation_folder_is_one_line_not_a_traceback(ws, resume):
    folder = ws / EVAL / "none"
    folder.chmod(0o555)
    try:
        code, _, err = cli(
            ["eval", "--config", str(ws / "run.yaml"), "--adapter", "none", *(["--resume"] * resume), *FAST]
        )
    finally:
        folder.chmod(0o755)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_lock_that_cannot_be_written_is_one_line(ws, monkeypatch):
    """A read-only folder, as root sees it too: creating the lock fails with EROFS."""

    real = os.open

    def read_only(path, flags, *args, **kwargs):
        if str(path).endswith(LOCK) and flags & os.O_CREAT:
            raise OSError(30, "Read-only file system", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    code, _, err = cli(["eval", "--config", str(ws / "run.yaml"), "--adapter", "none", *FAST])
    assert code == 2 and "Read-only file system" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("command", ["show", "annotate", "report", "eval"])
def test_a_selector_too_long_for_a_file_name_is_one_line(ws, command):
    argv = [command, "--config", str(ws / "run.yaml"), "--adapter", "a" * 256]
    if command in ("show", "annotate"):
        argv += ["--task", "x", "--repeat", "1"]
    code, _, err = cli([*argv, *FAST])
    assert code == 2 and "too long" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("selector", ["../..", "..", "../../runs/demo", "./..", "a/../.."])
@pytest.mark.parametrize("command", ["show", "annotate"])
def test_a_selector_never_climbs_out_of_eval(ws, command, selector):
    (ws / RUN / "annotations.jsonl").write_text("")
    (ws / RUN / "results.jsonl").write_text((ws / EVAL / "none" / "results.jsonl").read_text())
    before = snapshot(ws.parent, exclude=("demo/runs/demo/eval",))
    argv = [command, "--config", str(ws / "run.yaml"), "--adapter", selector, "--task", first_task(ws)]
    code, _, err = cli([*argv, "--repeat", "1", *(["--note", "x"] if command == "annotate" else []), *FAST])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert snapshot(ws.parent, exclude=("demo/runs/demo/eval",)) == before


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("kind", ["link", "dangling-link", "fifo", "dev-stdout"])
def test_report_output_never_replaces_a_link_nor_writes_to_a_special_file(ws, tmp_path, kind, force):
    target = tmp_path / "outside" / "file.jsonl"
    out = tmp_path / "report.md"
    if kind == "link":
        out.symlink_to(target)
    elif kind == "dangling-link":
        out.symlink_to(tmp_path / "outside" / "missing.md")
    elif kind == "fifo":
        os.mkfifo(out)
    else:  # what /dev/stdout is; never the real one, which a regression would replace for the whole machine
        out = tmp_path / "stdout"
        out.symlink_to("/proc/self/fd/1")
    before = snapshot(tmp_path, exclude=("demo",))
    code, stdout, err = cli(
        ["report", "--config", str(ws / "run.yaml"), "--output", str(out), *(["--force"] * force), *FAST]
    )
    assert code == 2 and str(out) in err and len(err.strip().splitlines()) == 1, err
    assert stdout == "" and snapshot(tmp_path, exclude=("demo",)) == before


@pytest.mark.parametrize("kind", ["fifo", "dev-null-link"])
def test_a_step_summary_naming_a_special_file_is_a_warning_not_a_hang(ws, tmp_path, monkeypatch, kind):
    summary = tmp_path / "step-summary"
    if kind == "fifo":
        os.mkfifo(summary)
    else:
        summary.symlink_to("/dev/null")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, _, err = cli(["gate", "--config", str(ws / "run.yaml"), "--baseline", "none", "--candidate", "final", *FAST])
    assert code in (0, 3), err
    assert "warning: $GITHUB_STEP_SUMMARY" in err and "not a regular file" in err, err


# ---------------------------------------------------------------------------------------------------- full disks


class FullDisk:
    """A fault-injecting file wrapper: the appended files (results, transcripts) share ``room`` bytes; the write
    that does not fit lands in part, then fails with ENOSPC, as on a disk that fills."""

    def __init__(self, room: int):
        self.room = room

    def wrap(self, fh):
        disk = self

        class Wrapped:
            def __getattr__(self, name):
                return getattr(fh, name)

            def write(self, data):
                if len(data) > disk.room:
                    fh.write(data[: disk.room])
                    disk.room = 0
                    raise OSError(28, "No space left on device")
                disk.room -= len(data)
                return fh.write(data)

        return Wrapped()


def small_workspace(tmp_path: Path, n: int) -> Path:
    ws = tmp_path / "small"
    ws.mkdir()
    ids = [f"t{i}" for i in range(n)]
    (ws / "tasks.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    (ws / "test.txt").write_text("".join(i + "\n" for i in ids))
    (ws / "train.txt").write_text("")
    (ws / "pipe.py").write_text(
        "def run(task, adapter):\n"
        "    n = int(task['id'][1:])\n"
        "    messages = [{'role': 'assistant', 'content': 'x' * 200}] if n % 3 else None\n"
        "    return {'output': task['id'], 'cost_usd': 0.0, 'messages': messages}\n"
    )
    (ws / "judge.py").write_text("def score(task, output):\n    return 1.0\n")
    (ws / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 2}\njudge: {path: judge.py}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    return ws / "run.yaml"


@pytest.mark.parametrize("room", [900, 2500, 4000])
def test_when_the_disk_fills_the_stop_message_counts_what_is_on_disk(tmp_path, monkeypatch, room):
    import re

    from hermit_tui.core.records import appending

    config = small_workspace(tmp_path, 24)
    disk = FullDisk(room)
    real_open = appending.AppendedLines.open

    def filling(self, *, append):
        real_open(self, append=append)
        self.fh = disk.wrap(self.fh)
        return self.fh

    monkeypatch.setattr(appending.AppendedLines, "open", filling)
    code, _, err = cli(["eval", "--config", str(config), "--adapter", "none"])
    assert code == 1 and "No space left on device" in err and "Traceback" not in err, err
    folder = config.parent / "runs/t/eval/none"
    results = [json.loads(line) for line in (folder / "results.jsonl").read_bytes().splitlines()]
    said = re.search(r"holds (\d+) recorded attempts?", err)
    assert said and int(said.group(1)) == len(results), err
    transcripts = folder / "transcripts.jsonl"
    lines = transcripts.read_bytes().splitlines() if transcripts.exists() else []
    recorded = {(r["id"], r["repeat"]) for r in results}
    for line in lines:  # every trajectory kept belongs to a recorded attempt
        entry = json.loads(line)
        assert (entry["id"], entry["repeat"]) in recorded
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] is False


def test_annotate_on_a_full_disk_says_nothing_was_changed_only_when_true(ws, monkeypatch):

    path = ws / EVAL / "none" / "annotations.jsonl"
    assert not path.exists()
    real_write = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}") == str(path):
            real_write(fd, data[:5])
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    argv = ["annotate", "--config", str(ws / "run.yaml"), "--adapter", "none", "--task", first_task(ws)]
    code, _, err = cli([*argv, "--repeat", "1", "--note", "x", *FAST])
    assert code == 2 and "nothing was changed" in err, err
    assert not path.exists()  # the file it created could not be filled: gone again
    path.write_text("")
    code, _, err = cli([*argv, "--repeat", "1", "--note", "x", *FAST])
    assert code == 2 and "nothing was changed" in err and path.read_bytes() == b"", err


@pytest.mark.parametrize("resume", [False, True])
def test_a_folder_made_read_only_during_a_run_ends_in_the_runs_stop_not_a_traceback(tmp_path, monkeypatch, resume):
    """What a folder made read-only mid-run does to every later write (root ignores chmod, so it is injected)."""
    import hermit_tui.core.records.journal as journal
    import hermit_tui.core.run.summaries as summaries
    from hermit_tui.core.records import appending

    config = small_workspace(tmp_path, 6)
    if resume:  # a killed run to continue: its results cut after two attempts
        assert cli(["eval", "--config", str(config), "--adapter", "none", "eval.repeats=2"])[0] == 0
        results = config.parent / "runs/t/eval/none/results.jsonl"
        results.write_bytes(b"".join(results.read_bytes().splitlines(keepends=True)[:2]))
    real_write = appending.AppendedLines.write
    calls = []

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    def appended(self, line):
        calls.append(line)
        if len(calls) > 2:
            monkeypatch.setattr(journal, "write_atomic", read_only)
            monkeypatch.setattr(summaries, "write_atomic", read_only)
            raise OSError(30, "Read-only file system")
        return real_write(self, line)

    monkeypatch.setattr(appending.AppendedLines, "write", appended)
    argv = ["eval", "--config", str(config), "--adapter", "none", "eval.repeats=2"]
    code, _, err = cli([*argv, *(["--resume"] * resume)])
    assert code in (1, 2) and "Read-only file system" in err and "Traceback" not in err, err
