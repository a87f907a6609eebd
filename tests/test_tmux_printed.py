"""The dashboard at 80x24 in a real terminal (tmux) while a pipeline prints on every path (Python-level, fds 1 and
2, a subprocess), under threads and worker processes: no stray text ever reaches the screen, and the attempts keep
what they printed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_printed import FD_LINES, PRINTER, PY_LINES
from test_tmux import BIN, TMUX, needs_bin, screen, start

pytestmark = [pytest.mark.tmux, pytest.mark.skipif(TMUX is None, reason="tmux is not installed")]


@needs_bin
@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_a_printing_pipeline_never_reaches_the_screen(tmp_path, executor):
    import subprocess

    from hermit_tui.demo import build_demo

    config = build_demo(tmp_path / "demo")
    # one attempt also leaves a subprocess that prints after the launch ended, when nothing repaints over it
    late = (
        '\n    if task["id"] == "arith-04":\n'
        '        subprocess.Popen(["sh", "-c", "sleep 3; echo LATEOUT; echo LATEERR >&2"])\n'
    )
    (config.parent / "printer.py").write_text(
        PRINTER.replace('    if task["id"].endswith("5"):', late + '    if task["id"].endswith("5"):')
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
    markers = PY_LINES + FD_LINES + ("JUDGE", "LATE")
    try:
        deadline = time.monotonic() + 60
        while executor not in (text := screen(socket)):
            assert time.monotonic() < deadline, text
            time.sleep(0.2)
        subprocess.run([TMUX, "-L", socket, "send-keys", "-t", "hermit", "l"], check=True)
        deadline, seen = time.monotonic() + 180, 0
        while True:  # every screen while it runs, not only the last one
            text = screen(socket)
            seen += 1
            assert not any(m in text for m in markers), text
            if "finished" in text and "32/32" in text:
                break
            assert time.monotonic() < deadline, text
            time.sleep(0.1)
        time.sleep(4)  # the late subprocess has printed by now
        text = screen(socket)
        assert not any(m in text for m in markers), text
        assert text.splitlines()[0].lstrip().startswith("⭘")  # the header is still the first line
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
    for label in ("none", "root"):
        kept = sorted((config.parent / "runs/demo/eval" / label / "logs").glob("*/*.printed.txt"))
        assert len(kept) == 16, kept
        assert all("PYOUT" in p.read_text() for p in kept)
    assert seen > 1
    assert BIN.exists() and Path(config).exists()
