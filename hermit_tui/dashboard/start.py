"""Running the dashboard in a terminal: the app between a guard of the terminal's file descriptors (nothing a
pipeline prints reaches the screen) and the end of a launch the app did not stop itself."""

from __future__ import annotations

import os
from pathlib import Path

from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.support import printed_outside_launches


def run_app(config_path: Path | None = None, overrides: list[str] | None = None) -> int:
    """The dashboard. It draws on duplicates of the terminal's file descriptors: fds 1 and 2 themselves are given
    to a pipe read into files (core.run.printed.TerminalGuard), so that nothing a pipeline, a judge, a worker process or
    a library prints can reach the screen."""
    from hermit_tui.core.run.printed import TerminalGuard

    stray = printed_outside_launches()
    try:
        stray.unlink()
    except OSError:
        pass
    with TerminalGuard(default=stray):
        return _run_app(config_path, overrides)


def _run_app(config_path: Path | None, overrides: list[str] | None) -> int:
    app = HermitApp(config_path, overrides=overrides)
    app.run()
    app.flush_annotations()
    run = app.current_run
    if run is not None:  # the app stopped some other way during a launch: nothing may go on after it
        import time

        run.cancel(force=True)
        app.abandoned = True
        deadline = time.monotonic() + 10
        while app.current_run is not None and time.monotonic() < deadline:  # the summaries are being written
            time.sleep(0.05)
    if app.abandoned:
        # Abandoned attempts may still run in threads that cannot be killed, and the interpreter would wait for
        # them at exit: their results are not recorded and the summaries are written, so leave now.
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
