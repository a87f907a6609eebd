"""Shared fixtures: fixed data for the UI tests (see fixture_data.py), and demo workspaces."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fixture_data import FIXED_COMMITS, FIXED_LABELS, FIXED_TASKS, fixed_records, fixed_store  # noqa: F401

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
    dest = tmp_path / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    _repair_worktree(demo_template, dest)
    return dest / "run.yaml"


def _repair_worktree(src: Path, dest: Path) -> None:
    """A git worktree records absolute paths both ways: point the copy's checkout at the copy's tree and the
    copy's tree at the copy's checkout (the template is left untouched)."""
    checkout = dest / "runs" / "demo" / "checkout"
    dot_git = checkout / ".git"
    if not dot_git.is_file():
        return
    old_gitdir = Path(dot_git.read_text().split("gitdir:", 1)[1].strip())
    name = old_gitdir.name
    tree_git = dest / "runs" / "trees" / "demo-notes" / ".git"
    dot_git.write_text(f"gitdir: {tree_git / 'worktrees' / name}\n")
    (tree_git / "worktrees" / name / "gitdir").write_text(f"{dot_git}\n")


def score_interval_by_hand(values: list[float], lo: float, hi: float, t_crit: float,
                           max_n: float | None = None) -> tuple[float, float]:
    """The small-sample interval of core.intervals recomputed independently: the Wilson quadratic (numpy's roots) on
    the values rescaled to [0, 1], with n_eff = p (1 - p) / se^2 held to [tasks, max_n], critical value ``t_crit``."""
    import math
    import statistics

    import numpy as np

    g = len(values)
    p = (statistics.fmean(values) - lo) / (hi - lo)
    se = statistics.stdev(values) / math.sqrt(g) / (hi - lo)
    n = max(p * (1 - p) / se ** 2, g)
    n = min(n, max_n) if max_n else n
    roots = np.roots([1 + t_crit ** 2 / n, -(2 * p + t_crit ** 2 / n), p * p]).real
    return lo + (hi - lo) * float(min(roots)), lo + (hi - lo) * float(max(roots))
