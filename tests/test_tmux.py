"""The installed `hermit-tui demo` in a real terminal (tmux): launch none/root/final and read the results back."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.tmux
TMUX = shutil.which("tmux")
BIN = Path(sys.executable).parent / "hermit-tui"


def tmux(socket: str, *args: str) -> str:
    return subprocess.run([TMUX, "-L", socket, *args], capture_output=True, text=True, check=True).stdout


def screen(socket: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-t", "hermit")


def wait_screen(socket: str, predicate, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen(socket)
        if predicate(text):
            return text
        time.sleep(0.2)
    raise AssertionError(f"the screen never showed what was expected; last screen:\n{text}")


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.skipif(not BIN.exists(), reason="the hermit-tui console script is not installed in this environment")
def test_demo_in_a_real_terminal(tmp_path):
    socket = f"hermit-tui-test-{uuid.uuid4().hex[:8]}"
    workspace = tmp_path / "demo"
    env = {"HERMIT_TUI_CONFIG_DIR": str(tmp_path / "settings"), "TERM": "xterm-256color",
           "PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", str(tmp_path)), "LANG": "C.UTF-8"}
    # the short sleep lets tmux apply the window size before the app reads it
    command = "sleep 0.3; exec " + " ".join([
        "env", *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
        shlex.quote(str(BIN)), "demo", shlex.quote(str(workspace)), "--set", "agent.params.latency_scale=0.05"])
    tmux(socket, "new-session", "-d", "-s", "hermit", "-x", "140", "-y", "45", command)
    try:
        wait_screen(socket, lambda s: "Versions" in s and "final" in s and "versions in the adapter tree" in s)
        tmux(socket, "send-keys", "-t", "hermit", "l")
        text = wait_screen(socket, lambda s: "finished" in s and "144/144" in s, timeout=120)
        test_ids = [line.strip() for line in (workspace / "test.txt").read_text().splitlines()
                    if line.strip() and not line.startswith("#")]
        for tid in test_ids[:10]:
            assert tid in text
        summaries = {label: json.loads((workspace / "runs/demo/eval" / label / "summary.json").read_text())
                     for label in ("none", "root", "final")}
        # the per-selector lines show the same means as the files
        for label, s in summaries.items():
            line = next(l for l in text.splitlines() if l.strip().startswith(label) and "mean" in l)
            assert f"mean {s['mean_score']:.3f}" in line, line
        # the per-task table: every test task with its means
        tmux(socket, "send-keys", "-t", "hermit", "t")
        table = wait_screen(socket, lambda s: "16 of 16 tasks" in s)
        for tid in test_ids[:8]:
            assert tid in table
        assert "final" in table and "root" in table and "none" in table
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
