"""The installed `hermit-tui demo` in a real terminal (tmux): launch none/root/final and read the results back; a
launch publishes nothing and Review & publish (then undo) does; quitting mid-launch leaves no process behind."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from waiting import wait_until

pytestmark = [pytest.mark.tmux, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]
TMUX = shutil.which("tmux") or "tmux"  # without it every tmux test skips (pytestmark)
BIN = Path(sys.executable).parent / "hermit-tui"
needs_bin = pytest.mark.skipif(not BIN.exists(), reason="the hermit-tui console script is not installed here")


def tmux(socket: str, *args: str) -> str:
    return subprocess.run([TMUX, "-L", socket, *args], capture_output=True, text=True, check=True).stdout


def screen(socket: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-t", "hermit")


def wait_screen(socket: str, predicate, timeout: float = 60.0) -> str:
    """The first screen for which ``predicate`` holds; fails showing the last screen seen."""
    last = [""]

    def shows() -> str | None:
        last[0] = screen(socket)
        return last[0] if predicate(last[0]) else None

    try:
        return wait_until(shows, timeout, interval=0.1)
    except AssertionError:
        raise AssertionError(f"the screen never showed what was expected; last screen:\n{last[0]}") from None


def keys(socket: str, name: str) -> None:
    """One key (the tests wait for its effect before the next: Escape followed at once by a key reads as alt+key)."""
    tmux(socket, "send-keys", "-t", "hermit", name)


def type_text(socket: str, text: str) -> None:
    tmux(socket, "send-keys", "-t", "hermit", "-l", text)


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=True).stdout


def start(tmp_path: Path, size: tuple[int, int], *args: str, settings: dict | None = None) -> tuple[str, Path]:
    """The dashboard on a new demo workspace in a private tmux server; returns (socket, file holding its pid)."""
    socket = f"hermit-tui-test-{uuid.uuid4().hex[:8]}"
    (tmp_path / "settings").mkdir(exist_ok=True)
    if settings is not None:
        (tmp_path / "settings" / "settings.json").write_text(json.dumps(settings))
    env = {
        "HERMIT_TUI_CONFIG_DIR": str(tmp_path / "settings"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # this test's own (what the dashboard prints outside a launch)
    }
    pid_file = tmp_path / "app.pid"
    # the short sleep lets tmux apply the window size before the app reads it; exec keeps the shell's pid
    command = f"echo $$ > {shlex.quote(str(pid_file))}; sleep 0.3; exec " + " ".join(
        ["env", *(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.quote(str(BIN)), *map(shlex.quote, args)]
    )
    tmux(socket, "new-session", "-d", "-s", "hermit", "-x", str(size[0]), "-y", str(size[1]), command)
    return socket, pid_file


def refs(tree: Path) -> str:
    return git(tree, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags", "refs/heads")


@needs_bin
def test_demo_in_a_real_terminal(tmp_path):
    workspace = tmp_path / "demo"
    socket, _ = start(tmp_path, (140, 45), "demo", str(workspace), "--set", "agent.params.latency_scale=0.05")
    try:
        wait_screen(socket, lambda s: "Versions" in s and "final" in s and "versions in the adapter tree" in s)
        keys(socket, "l")
        text = wait_screen(socket, lambda s: "finished" in s and "144/144" in s, timeout=120)
        test_ids = [
            line.strip()
            for line in (workspace / "test.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        for tid in test_ids[:10]:
            assert tid in text
        summaries = {
            label: json.loads((workspace / "runs/demo/eval" / label / "summary.json").read_text())
            for label in ("none", "root", "final")
        }
        # the per-selector lines show the same means as the files
        for label, s in summaries.items():
            line = next(ln for ln in text.splitlines() if ln.strip().startswith(label) and "mean" in ln)
            shown = float(line.split("mean ")[1].split()[0])  # three decimals, a half rounded up (0.3375: 0.338)
            assert abs(shown - s["mean_score"]) <= 5e-4 + 1e-9 and len(line.split("mean ")[1].split()[0]) == 5, line
        # the per-task table: every test task with its means
        keys(socket, "t")
        table = wait_screen(socket, lambda s: "16 of 16 tasks" in s)
        for tid in test_ids[:8]:
            assert tid in table
        assert "final" in table and "root" in table and "none" in table
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)


@needs_bin
def test_a_launch_publishes_nothing_and_review_publishes_and_undoes_at_80x24(tmp_path):
    workspace = tmp_path / "demo"
    socket, _ = start(tmp_path, (80, 24), "demo", str(workspace), "--set", "agent.params.latency_scale=0.05")
    tree, card_path = workspace / "runs/trees/demo-notes", workspace / "runs/demo/checkout/CARD.md"
    try:
        # all on screen at 80x24; the footer may be painted a frame after the versions note: polled, not sampled
        first = wait_screen(socket, lambda s: "[x] final" in s and "6 versions" in s and "q Quit" in s, timeout=30)
        assert "Launch 3 side by side (l)" in first and "? Help" in first and "q Quit" in first
        card, before = card_path.read_bytes(), refs(tree)
        keys(socket, "l")
        done = wait_screen(socket, lambda s: "finished" in s and "144/144" in s, timeout=120)
        summary = workspace / "runs/demo/eval/final/summary.json"
        wait_until(lambda: json.loads(summary.read_text())["complete"], what="final's summary to say complete")
        # final finished: CARD.md and every tag and branch as they were, byte for byte
        assert card_path.read_bytes() == card and refs(tree) == before
        assert "Review & publish: p" in done
        tag = git(tree, "rev-parse", "demo/final^{commit}").strip()

        keys(socket, "p")
        wait_screen(socket, lambda s: "ready to publish" in s and "p publish" in s)
        keys(socket, "p")
        wait_screen(socket, lambda s: "Publish the card of demo/final?" in s)
        type_text(socket, "publish")
        wait_screen(socket, lambda s: "to confirm, then Enter" not in s)  # typed into the field
        keys(socket, "Enter")
        wait_screen(socket, lambda s: "already published" in s or "Published:" in s)
        head = git(tree, "rev-parse", "refs/heads/demo").strip()
        assert git(tree, "rev-parse", "demo/final^{commit}").strip() == head != tag
        assert card_path.read_bytes() != card

        keys(socket, "u")
        wait_screen(socket, lambda s: "Undo the publish of demo/final?" in s)
        type_text(socket, "undo")
        wait_screen(socket, lambda s: "to confirm, then Enter" not in s)
        keys(socket, "Enter")
        wait_until(lambda: git(tree, "rev-parse", "demo/final^{commit}").strip() == tag, 30, what="the tag moved back")
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@needs_bin
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
def test_quitting_mid_launch_leaves_no_process_and_moves_nothing(tmp_path):
    from hermit_tui.demo import build_demo

    workspace = tmp_path / "demo"
    config = build_demo(workspace)
    tree, card_path = workspace / "runs/trees/demo-notes", workspace / "runs/demo/checkout/CARD.md"
    card, before = card_path.read_bytes(), refs(tree)
    # the launch settings remembered for this config: worker processes (the demanding case for leftovers)
    settings = {"launch": {str(config.resolve()): {"executor": "processes", "repeats": "3", "concurrency": "4"}}}
    # attempts of 0.1-1.5 s: the launch (144 attempts, 4 at a time) lasts about 30 s, and the quit waits for the
    # attempts in flight to finish (at latency_scale=20, up to 6 s)
    socket, pid_file = start(
        tmp_path, (80, 24), "--config", str(config), "--set", "agent.params.latency_scale=5", settings=settings
    )
    try:
        wait_screen(socket, lambda s: "[x] final" in s and "processes" in s)
        keys(socket, "l")
        wait_screen(
            socket, lambda s: "running" in s and any(f" {n}/144 attempts" in s for n in range(1, 140)), timeout=60
        )
        pid = int(pid_file.read_text())
        below = descendants(pid)
        assert below, "worker processes were expected under the dashboard"
        keys(socket, "q")
        wait_screen(socket, lambda s: "A launch is running" in s and "Keep running" in s)
        keys(socket, "q")
        stopping = wait_screen(socket, lambda s: "Stopping the launch" in s or not alive(pid), timeout=10)
        assert "Stopping the launch" in stopping or not alive(pid)  # never a blank screen while it stops
        wait_until(lambda: not alive(pid), what="the dashboard to exit")
        wait_until(lambda: not [p for p in below if alive(p)], what="every worker process to end with the dashboard")
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
    # nothing is left that could still move a file: what is on disk now is what the user quit with
    for label in ("none", "root", "final"):
        summary = json.loads((workspace / "runs/demo/eval" / label / "summary.json").read_text())
        assert summary["complete"] is False and summary["cancelled"] is True
        assert summary["executor"] == "processes"
    assert card_path.read_bytes() == card and refs(tree) == before
