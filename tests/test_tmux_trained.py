"""The installed dashboard in a real terminal (tmux) on a project trained by the real ``hermit train``, with the
evaluations ``hermit eval`` wrote on disk (a one-repeat commit evaluation among them): a launch of five versions
shows those five and their attempts only, on every screen from the first, at 80×24 and 200×50."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from test_tmux import TMUX, keys, needs_bin, screen, start, wait_screen
from trained_project import RUN, RUN_DIR, copy_trained_project
from waiting import wait_until

pytestmark = [pytest.mark.tmux, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]
PICKS = ["none", "root", f"{RUN}/ckpt-step-1", "final", "adapters/shouty"]
STATUS = re.compile(r"(running|finished)\s+(\d+)/(\d+) attempts\s+·\s+(\d+) tasks × (\d+) selectors")


@pytest.fixture(scope="module")
def trained(trained_template) -> Path:
    """The session's trained project: each test copies it."""
    return trained_template


@needs_bin
@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_a_launch_shows_what_was_launched_and_nothing_else(trained, tmp_path, size):
    config = copy_trained_project(trained, tmp_path / "project")
    eval_root = config.parent / RUN_DIR / "eval"
    commit = next(
        p.parent.name for p in eval_root.glob("*/summary.json") if json.loads(p.read_text())["repeats"] == 1
    )  # hermit's evaluation of a commit by its id: not launched here
    tasks = len((config.parent / "test.txt").read_text().split())
    settings = {"launch": {str(config.resolve()): {"picks": PICKS, "added": ["adapters/shouty"], "repeats": "1"}}}
    socket, _ = start(tmp_path, size, "--config", str(config), settings=settings)
    try:
        wait_screen(socket, lambda s: "Launch 5 side by side" in s)
        keys(socket, "l")
        statuses = []

        def finished() -> bool:  # every screen of the launch, from the first
            text = screen(socket)
            found = STATUS.search(text)
            if found:
                statuses.append(found.groups())
                bars = [line for line in text.splitlines() if "━" in line or "attempts" in line]
                assert not any(commit[:8] in line for line in bars), text
            return bool(found and found.group(1) == "finished")

        wait_until(finished, timeout=180, what="the launch to finish")
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
    assert statuses
    for _, done, total, n_tasks, selectors in statuses:
        assert (int(total), int(n_tasks), int(selectors)) == (5 * tasks, tasks, 5)
        assert int(done) <= 5 * tasks
    assert statuses[-1][1] == str(5 * tasks)


def _latest_labels(eval_root: Path) -> dict[tuple[str, str, int], list[str]]:
    out = {}
    for path in eval_root.glob("*/annotations.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            out[(path.parent.name, entry["id"], entry["repeat"])] = entry["labels"]
    return out


@needs_bin
def test_a_label_key_on_an_error_kind_labels_every_attempt_of_it_and_shift_u_undoes(trained, tmp_path):
    """Issue 27 (finding 8) in a real terminal at 80x24, on hermit's own evaluations: 2 on the errors screen's first
    row (the largest kind) labels each of its attempts on disk; shift+u takes every label off again."""
    config = copy_trained_project(trained, tmp_path / "project")
    eval_root = config.parent / RUN_DIR / "eval"
    kinds: dict[str, set] = {}
    for results in eval_root.glob("*/results.jsonl"):
        for line in results.read_text().splitlines():
            r = json.loads(line)
            if r["status"] != "ok":
                head, sep, _ = (r["error"] or "").partition(":")
                kind = f"{r['status']} · {head.strip()}" if sep and " " not in head.strip() else r["status"]
                kinds.setdefault(kind, set()).add((results.parent.name, r["id"], r["repeat"]))
    kind, expected = min(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    socket, _ = start(tmp_path, (80, 24), "--config", str(config))

    def keys(*k: str) -> None:
        subprocess.run([TMUX, "-L", socket, "send-keys", "-t", "hermit", *k], check=True)

    def wait(predicate, what: str) -> str:
        deadline = time.monotonic() + 60
        while not predicate(text := screen(socket)):
            assert time.monotonic() < deadline, f"{what}:\n{text}"
            time.sleep(0.1)
        return text

    try:
        wait(lambda t: "Launch" in t and "versions" in t, "setup")
        keys("t")
        wait(lambda t: "tasks ·" in t, "the per-task table")
        keys("e")
        wait(lambda t: kind in t and "ended in an error" in t, "the errors screen")
        keys("down", "up")  # the cursor on the first row: the largest kind
        keys("2")
        wait(lambda t: "shift+u undoes" in t, "the bulk label's toast")
        deadline = time.monotonic() + 30
        while {k for k, v in _latest_labels(eval_root).items() if "format error" in v} != expected:
            assert time.monotonic() < deadline, _latest_labels(eval_root)
            time.sleep(0.1)
        keys("U")
        deadline = time.monotonic() + 30
        while any(_latest_labels(eval_root).get(k) for k in expected):
            assert time.monotonic() < deadline, _latest_labels(eval_root)
            time.sleep(0.1)
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
