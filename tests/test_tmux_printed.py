"""The dashboard at 80x24 in a real terminal (tmux) while a pipeline prints on every path (Python-level, fds 1 and
2, a subprocess), under threads and worker processes: no stray text ever reaches the terminal, and the attempts keep
what they printed."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from test_printed import FD_LINES, PRINTER, PY_LINES
from test_tmux import BIN, TMUX, keys, needs_bin, screen, start, tmux, wait_screen
from waiting import wait_until

pytestmark = [pytest.mark.tmux, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


@needs_bin
@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_a_printing_pipeline_never_reaches_the_screen(tmp_path, executor):
    from hermit_tui.demo import build_demo

    config = build_demo(tmp_path / "demo")
    # One attempt per selector also leaves a subprocess that prints once the launch has ended (the test says when,
    # by creating `go`), when nothing repaints over it; its mark says that it did print.
    late, go = tmp_path / "late", tmp_path / "go"
    late.mkdir()
    script = f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done; echo LATEOUT && echo LATEERR >&2 && "
    script += f"touch {shlex.quote(str(late))}/$$"
    spawn = f'\n    if task["id"] == "arith-04":\n        subprocess.Popen(["sh", "-c", {script!r}])\n'
    (config.parent / "printer.py").write_text(
        PRINTER.replace('    if task["id"].endswith("5"):', spawn + '    if task["id"].endswith("5"):')
    )
    settings = {
        "launch": {
            str(config.resolve()): {"executor": executor, "repeats": "1", "concurrency": "4", "picks": ["none", "root"]}
        }
    }
    socket, _ = start(
        tmp_path,
        (80, 24),
        "--config",
        str(config),
        "--set",
        "agent.name=printer.py:run",
        "--set",
        "judge.path=printer.py",
        "--set",
        "judge.name=score",
        settings=settings,
    )
    # every byte the terminal is sent, not only the screens sampled below
    raw = tmp_path / "terminal.raw"
    tmux(socket, "pipe-pane", "-t", "hermit", f"cat > {shlex.quote(str(raw))}")
    markers = PY_LINES + FD_LINES + ("JUDGE", "LATE")
    try:
        # the remembered launch settings and picks are restored (l before that would launch the defaults)
        wait_screen(
            socket,
            lambda s: executor in s and "[x] none" in s and "[x] root" in s and "[ ] final" in s and "Launch 2" in s,
        )
        keys(socket, "l")
        seen = 0

        def finished() -> bool:  # every screen while it runs, not only the last one
            nonlocal seen
            text = screen(socket)
            seen += 1
            assert not any(m in text for m in markers), text
            return "finished" in text and "32/32" in text

        wait_until(finished, timeout=180, what="the launch to finish (32/32)")
        go.touch()
        wait_until(lambda: len(list(late.iterdir())) == 2, what="both late subprocesses to print")
        text = screen(socket)
        assert not any(m in text for m in markers), text
        assert text.splitlines()[0].lstrip().startswith("⭘")  # the header is still the first line
        # The late lines were written before their marks, so what the app draws after the marks reaches the terminal
        # after anything they wrote there: once the tasks screen is in the record, so would the late lines be.
        keys(socket, "t")
        wait_until(lambda: b"of 16 tasks" in raw.read_bytes(), what="the tasks screen in the terminal's record")
        sent = raw.read_bytes()
        assert not [m for m in markers if m.encode() in sent], sent[-3000:]
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
    if executor == "threads":  # the dashboard's own fds 1 and 2 took them, outside any launch
        kept = (tmp_path / "cache" / "hermit-tui" / "printed-outside-launches.txt").read_text()
        assert kept.count("LATEOUT") == kept.count("LATEERR") == 2, kept
    for label in ("none", "root"):
        kept = sorted((config.parent / "runs/demo/eval" / label / "logs").glob("*/*.printed.txt"))
        assert len(kept) == 16, kept
        assert all("PYOUT" in p.read_text() for p in kept)
    assert seen > 1
    assert BIN.exists() and Path(config).exists()
