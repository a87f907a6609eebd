"""``hermit-tui [--config run.yaml]``: the dashboard, after a bad config has been refused in one line."""

from __future__ import annotations

import sys
from pathlib import Path

from hermit_tui.cli.common import EXIT_FAILED


def open_dashboard(config_path: Path | None, overrides: list[str] | None = None) -> int:
    try:
        from hermit_tui.dashboard.start import run_app
    except ImportError:
        sys.stderr.write("the dashboard is not available in this build; use `hermit-tui eval`\n")
        return EXIT_FAILED
    if config_path is not None:  # a bad config is a one-line error before the screen is taken over
        from hermit_tui.core.workspace.config import load_config

        load_config(config_path, overrides or [])
    return run_app(config_path, overrides)


__all__ = ["open_dashboard"]
