"""What the journey, palette and snapshot tests share: waiting on the app, typing, and the demo's files that
publishing may touch (CARD.md, tags, branches, summaries)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from textual.widgets import SelectionList
from textual.worker import WorkerCancelled
from waiting import wait_for

from hermit_tui.dashboard.screens.setup import SetupScreen

__all__ = ["wait_for"]  # the journey tests import it from here

FAST = ["agent.params.latency_scale=0.01"]


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=True).stdout


class Workspace:
    """The demo's files that publishing may touch: CARD.md in the checkout, every tag and branch of the tree."""

    def __init__(self, config_path: Path):
        self.root = config_path.parent
        self.config_path = config_path
        self.tree = self.root / "runs" / "trees" / "demo-notes"
        self.checkout = self.root / "runs" / "demo" / "checkout"
        self.eval = self.root / "runs" / "demo" / "eval"

    def refs(self) -> str:
        return git(self.tree, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags", "refs/heads")

    def card(self) -> bytes:
        return (self.checkout / "CARD.md").read_bytes()

    def tag(self) -> str:
        return git(self.tree, "rev-parse", "demo/final^{commit}").strip()

    def summary(self, label: str, smoke: bool = False) -> dict:
        """A label's summary.json; ``smoke``: its smoke subset's (a smoke-limit launch writes eval/<label>/smoke/)."""
        return json.loads((self.eval / label / ("smoke" if smoke else "") / "summary.json").read_text())


def setup_ready(app) -> bool:
    screen = app.screen
    return (
        isinstance(screen, SetupScreen)
        and screen._restored
        and screen.query_one("#versions", SelectionList).option_count > 1
    )


async def settle(pilot, prefix: str = "review") -> None:
    await pilot.pause()
    for _ in range(3):
        for worker in list(pilot.app.workers):
            if worker.group.startswith(prefix) and not worker.is_finished:
                try:
                    await worker.wait()
                except WorkerCancelled:
                    pass
        await pilot.pause()


async def type_text(pilot, text: str) -> None:
    await pilot.press(*("space" if ch == " " else ch for ch in text))
