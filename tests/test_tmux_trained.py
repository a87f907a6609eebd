"""The installed dashboard in a real terminal (tmux) on a project trained by the real ``hermit train``, with the
evaluations ``hermit eval`` wrote on disk (a one-repeat commit evaluation among them): a launch of five versions
shows those five and their attempts only, on every screen from the first, at 80×24 and 200×50."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
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
