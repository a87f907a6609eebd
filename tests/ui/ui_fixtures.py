"""Fixtures of the UI tests: demo workspaces in the states the journey needs (tests/ui/conftest.py imports them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_copies import copy_workspace
from journey_kit import Workspace

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config


@pytest.fixture(autouse=True)
def steady_cursors(request, monkeypatch):
    """A snapshot shows a focused input's cursor as it is when focus arrives: the 0.5 s blink would otherwise make
    the picture depend on how long a loaded machine took between focus and capture (a snapshot failed that way)."""
    if "snap_compare" not in request.fixturenames:
        return
    from textual.widgets import Input, TextArea

    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
    monkeypatch.setattr(TextArea, "_toggle_cursor_blink_visible", lambda self: None)


@pytest.fixture
def demo(demo_config, monkeypatch) -> Workspace:
    """A fresh demo (nothing evaluated), with private settings."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(demo_config.parent.parent / "settings"))
    return Workspace(demo_config)


@pytest.fixture(scope="session")
def evaluated_template(demo_template, tmp_path_factory) -> Path:
    """A demo with none, root and final evaluated (3 repeats), nothing published; copy it before use."""
    config = copy_workspace(demo_template, tmp_path_factory.mktemp("journey-evaluated") / "demo")
    EvalRun(
        load_config(config, ["agent.params.latency_scale=0"]), ["none", "root", "final"], update_card=False
    ).run_sync()
    return config.parent


@pytest.fixture
def evaluated_copy(evaluated_template, tmp_path, monkeypatch) -> Workspace:
    """A private copy of the evaluated demo, with private settings."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    return Workspace(copy_workspace(evaluated_template, tmp_path / "demo"))
