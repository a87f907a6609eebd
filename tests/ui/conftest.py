"""Fixtures of the UI tests: demo workspaces in the states the journey needs."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from journey_kit import Workspace

from hermit_tui.core.config import load_config
from hermit_tui.core.runner import EvalRun


def copy_demo(template: Path, dest: Path) -> Path:
    """A copy of a demo workspace whose checkout is a worktree of the copy's own tree."""
    shutil.copytree(template, dest, symlinks=True)
    checkout = dest / "runs" / "demo" / "checkout"
    admin = dest / "runs" / "trees" / "demo-notes" / ".git" / "worktrees" / "checkout"
    (checkout / ".git").write_text(f"gitdir: {admin}\n")
    (admin / "gitdir").write_text(f"{checkout / '.git'}\n")
    return dest / "run.yaml"


@pytest.fixture
def demo(demo_config, monkeypatch) -> Workspace:
    """A fresh demo (nothing evaluated), with private settings."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(demo_config.parent.parent / "settings"))
    return Workspace(demo_config)


@pytest.fixture(scope="session")
def evaluated_template(demo_template, tmp_path_factory) -> Path:
    """A demo with none, root and final evaluated (3 repeats), nothing published; copy it before use."""
    config = copy_demo(demo_template, tmp_path_factory.mktemp("journey-evaluated") / "demo")
    EvalRun(load_config(config, ["agent.params.latency_scale=0"]), ["none", "root", "final"],
            update_card=False).run_sync()
    return config.parent


@pytest.fixture
def evaluated_copy(evaluated_template, tmp_path, monkeypatch) -> Workspace:
    """A private copy of the evaluated demo, with private settings."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    return Workspace(copy_demo(evaluated_template, tmp_path / "demo"))
