"""Shared fixtures: a hermetic git, and demo workspaces (built once, copied per test: demo_copies.py). Helpers
live in modules the tests import by name (fixture_data.py, demo_copies.py, stats_by_hand.py), never in conftest."""
from __future__ import annotations

from pathlib import Path

import pytest
from demo_copies import copy_workspace


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory, monkeypatch):
    """No global or system git configuration, as on CI: nothing may depend on the developer's git identity."""
    empty = tmp_path_factory.getbasetemp() / "empty-gitconfig"
    empty.touch()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    """A demo workspace built once per test session; tests copy it (cheap) rather than rebuild it."""
    from hermit_tui.demo import build_demo
    return build_demo(tmp_path_factory.mktemp("demo-template") / "demo").parent


@pytest.fixture
def demo_config(demo_template, tmp_path) -> Path:
    """A private copy of the demo workspace for one test; returns its run.yaml."""
    return copy_workspace(demo_template, tmp_path / "demo")
