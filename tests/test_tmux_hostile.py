"""The dashboard on hostile text in a real terminal (tmux, issue 29): task ids and fields, outputs, errors, feedback,
transcripts and folder names holding OSC 52 (clipboard), OSC 0 (title) and ``ESC[2J`` are shown as visible escapes,
and none of them reaches the terminal: the pane's title stays tmux's, no paste buffer appears (tmux takes OSC 52
into a buffer with ``set-clipboard on``), and the screen is never cleared under the dashboard."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from hostile_util import hostile_text_workspace
from test_tmux import BIN, TMUX, keys, needs_bin, screen, tmux, wait_screen

pytestmark = [pytest.mark.tmux, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


def start_on(tmp_path: Path, config: Path, size: tuple[int, int] = (150, 40)) -> str:
    """The dashboard on ``config`` in a private tmux server that takes OSC 52 into its paste buffers."""
    socket = f"hermit-tui-hostile-{uuid.uuid4().hex[:8]}"
    (tmp_path / "settings").mkdir(exist_ok=True)
    env = {
        "HERMIT_TUI_CONFIG_DIR": str(tmp_path / "settings"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "LANG": "C.UTF-8",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }
    command = "sleep 0.3; exec " + " ".join(
        ["env", *(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.quote(str(BIN)), "--config", str(config)]
    )
    subprocess.run(
        [TMUX, "-L", socket, "-f", "/dev/null", "start-server", ";", "set", "-g", "set-clipboard", "on", ";",
         "set", "-g", "allow-rename", "on", ";",
         "new-session", "-d", "-s", "hermit", "-x", str(size[0]), "-y", str(size[1]), command],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return socket


def title(socket: str) -> str:
    return tmux(socket, "display", "-p", "-t", "hermit", "#{pane_title}").strip()


def buffers(socket: str) -> str:
    return tmux(socket, "list-buffers")


@needs_bin
def test_the_dashboard_shows_hostile_text_and_sends_none_of_it_to_the_terminal(tmp_path):
    (tmp_path / "ws").mkdir()
    ws, _ = hostile_text_workspace(tmp_path / "ws")
    socket = start_on(tmp_path, ws / "run.yaml")
    try:
        wait_screen(socket, lambda s: "Versions" in s and "q Quit" in s, timeout=60)
        before = title(socket)
        assert "PWNED" not in before

        def unharmed(s: str) -> bool:
            """The screen is whole (its header and footer drawn: no ESC[2J blanked it), the title and the
            clipboard untouched."""
            lines = s.splitlines()
            return bool(lines) and "hermit-tui" in lines[0] and "q Quit" in s

        keys(socket, "t")  # the per-task table: ids and task text
        table = wait_screen(socket, lambda s: "8 of 8 tasks" in s and "id\\x1b]52;c;ZXZpbA==\\x07" in s)
        assert "ad\\x1b]0;PWNED\\x07\\n# Injected heading" in table  # the selector lines: the label on its line
        assert "[bold red]mk[/]" in table  # markup in a task id is shown as it is
        assert unharmed(table)
        keys(socket, "o")  # the outputs
        outputs = wait_screen(socket, lambda s: "outputs, repeat" in s and "out\\x1b]52;c;ZXZpbA==" in s)
        assert "(no output: ValueError: boom" in outputs and unharmed(outputs)
        keys(socket, "o")  # back to the scores
        wait_screen(socket, lambda s: "means (" in s and "outputs, repeat" not in s)
        keys(socket, "Down")  # the second row: id+OSC52
        wait_screen(socket, lambda s: "▶ none · id\\x1b]52;c;ZXZpbA==\\x07" in s)
        keys(socket, "Enter")  # its drill-down
        drill = wait_screen(socket, lambda s: "Task id\\x1b]52;c;ZXZpbA==\\x07" in s and "Feedback" in s)
        assert "fb\\x1b[2J\\x9b0m [bold red]markup[/]" in drill and unharmed(drill)
        assert "field\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J" in drill  # the task's fields
        keys(socket, "x")  # the transcript
        transcript = wait_screen(  # the tab's header comes before its messages: wait for the messages themselves
            socket,
            lambda s: (
                "messages · from transcripts.jsonl" in s
                and "ask\\x1b]0;PWNED\\x07" in s
                and "say\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J" in s
            ),
        )
        assert unharmed(transcript)
        keys(socket, "Escape")
        wait_screen(socket, lambda s: "8 of 8 tasks" in s)
        keys(socket, "e")  # the errors
        errors = wait_screen(socket, lambda s: "ValueError: boom \\x1b]0;PWNED\\x07" in s)
        assert unharmed(errors)
        keys(socket, "Escape")
        wait_screen(socket, lambda s: "8 of 8 tasks" in s)
        keys(socket, "h")  # the history: the directory selectors' folder names
        history = wait_screen(
            socket,
            lambda s: (
                any("ad\\x1b]0;PWNED" in ln and "# Injected heading" in ln for ln in s.splitlines())
                and "›[ ]  none" in s
            ),  # and the table has the focus (its cursor mark): the Down below reaches it
        )  # on one line (a cell: the newline becomes a blank); Rich drops the BEL of a Text before it is shown
        assert unharmed(history)
        keys(socket, "Down")  # its detail line: the folder, on one line
        history = wait_screen(socket, lambda s: "eval/ad\\x1b]0;PWNED\\x07\\n# Injected heading" in s)
        assert unharmed(history)
        assert title(socket) == before  # no OSC 0 reached the terminal
        assert buffers(socket) == ""  # no OSC 52 reached it either
        assert "PWNED" not in title(socket)
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)


@needs_bin
def test_the_guard_itself_catches_what_no_screen_escaped(tmp_path):
    """A text that reached a widget raw (the guard under every strip, not a screen's escaping) still cannot set the
    title: a Textual app of hermit-tui's that shows the raw sequence in a Static."""
    script = tmp_path / "raw.py"
    script.write_text(
        "from textual.app import App\nfrom textual.widgets import Static\nfrom rich.text import Text\n"
        "from hermit_tui.dashboard.support import guard_terminal\n"
        "class Raw(App):\n"
        "    def compose(self):\n"
        "        yield Static(Text('raw \\x1b]0;PWNED\\x07 \\x1b]52;c;ZXZpbA==\\x07 \\x1b[2J shown'))\n"
        "guard_terminal()\nRaw().run()\n"
    )
    socket = f"hermit-tui-hostile-{uuid.uuid4().hex[:8]}"
    python = Path(BIN).parent / "python"
    subprocess.run(
        [TMUX, "-L", socket, "-f", "/dev/null", "start-server", ";", "set", "-g", "set-clipboard", "on", ";",
         "new-session", "-d", "-s", "hermit", "-x", "80", "-y", "10",
         f"sleep 0.3; exec env TERM=xterm-256color {shlex.quote(str(python))} {shlex.quote(str(script))}"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    try:
        shown = wait_screen(socket, lambda s: "shown" in s, timeout=30)
        assert "raw" in shown.splitlines()[0]
        assert "PWNED" not in title(socket) and buffers(socket) == ""
        assert screen(socket).splitlines()[0].startswith("raw")
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
