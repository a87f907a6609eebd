"""Copies of a demo workspace built once: cheaper than building one (the adapter tree, its tags and the checkout are
git work), and private to the test that makes it.

A helper module rather than conftest.py: tests import it by name, and two conftest.py files (tests/ and tests/ui/)
would both be imported as ``conftest``."""

from __future__ import annotations

import shutil
from pathlib import Path

CHECKOUT = Path("runs") / "demo" / "checkout"
TREE_GIT = Path("runs") / "trees" / "demo-notes" / ".git"


def repair_worktree(src: Path, dest: Path) -> None:
    """A git worktree records absolute paths both ways: point the copy's checkout at the copy's tree and the
    copy's tree at the copy's checkout (``src``, the template, is left untouched)."""
    dot_git = dest / CHECKOUT / ".git"
    if not dot_git.is_file():
        return
    name = Path(dot_git.read_text().split("gitdir:", 1)[1].strip()).name
    admin = dest / TREE_GIT / "worktrees" / name
    dot_git.write_text(f"gitdir: {admin}\n")
    (admin / "gitdir").write_text(f"{dot_git}\n")


def copy_workspace(template: Path, dest: Path) -> Path:
    """A private copy of the workspace folder ``template`` at ``dest``; returns the copy's run.yaml."""
    shutil.copytree(template, dest, symlinks=True)
    repair_worktree(template, dest)
    return dest / "run.yaml"
