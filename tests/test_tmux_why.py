"""Why it changed in a real terminal (tmux, 80x24): from compare, Changes (w) lists the tasks the pair made flaky
beside the adapter's diff; enter on one opens its aligned trajectories, on the first repeat whose agents part ways.
The demo's final against its adapters/unit-table (which exports a tool final does not): which attempts call the tool
is worked out from the demo pipeline's own draws (test_why_demo.py), not by the code under test."""

from __future__ import annotations

import subprocess

import pytest
from test_tmux import BIN, TMUX, keys, start, wait_screen
from test_why_demo import expected_lookups

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.why.pair import FLIPS, pair_why
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks
from hermit_tui.demo import VARIANT, VARIANT_TOOL

pytestmark = [pytest.mark.tmux, pytest.mark.skipif(TMUX is None, reason="tmux is not installed")]


@pytest.mark.skipif(not BIN.exists(), reason="the hermit-tui console script is not installed here")
def test_from_compare_to_a_flipped_tasks_aligned_trajectories(demo_config, tmp_path):
    config = load_config(demo_config, ["agent.params.latency_scale=0"])
    EvalRun(config, ["final", VARIANT], update_card=False).run_sync()
    looked = expected_lookups(config)
    test_ids = list(load_tasks(config).test_ids)
    task = min(t for t, _ in looked)
    first = min(r for t, r in looked if t == task)
    socket, _ = start(tmp_path, (80, 24), "--config", str(demo_config))
    try:
        wait_screen(socket, lambda s: "Versions to put side by side" in s)
        keys(socket, "v")
        wait_screen(socket, lambda s: "compare unit-table" in s and "with final" in s)
        keys(socket, "s")  # a = final, b = the directory that adds the tool
        wait_screen(socket, lambda s: "compare final" in s and "with unit-table" in s)
        keys(socket, "w")
        wait_screen(socket, lambda s: "Why it changed: final → unit-table  fixed " in s and "flaky    " in s)
        wait_screen(socket, lambda s: f"added: tool {VARIANT_TOOL}" in s)
        # the list's order (kind, then task) only tells how far down the task is; what is asserted is the screen
        rows = [t for kind in FLIPS for t in pair_why(config, "final", VARIANT, test_ids).flips[kind]]
        for _ in range(rows.index(task)):
            keys(socket, "Down")
        keys(socket, "Enter")
        aligned = wait_screen(
            socket, lambda s: f"{task} · repeat {first}" in s and "first divergence: agent step 1" in s
        )
        assert f"call {VARIANT_TOOL}" in aligned and ">>+" in aligned
        keys(socket, "Escape")
        wait_screen(socket, lambda s: "Why it changed: final → unit-table" in s)
    finally:
        subprocess.run([str(TMUX), "-L", socket, "kill-server"], capture_output=True)
