"""Setup: the protocol at a glance, the selectable adapter versions, repeats and concurrency, launch."""
from __future__ import annotations

import os
from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Header, Input, Label, Select, SelectionList, Static
from textual.widgets.selection_list import Selection

from hermit_tui import bindings
from hermit_tui.paths import style
from hermit_tui.widgets.banners import Banners

DEFAULT_PICKS = ("none", "root", "final")


def _rel(path: Path | None, base: Path) -> str:
    if path is None:
        return "—"
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return str(path)


def protocol_table(config, taskset, checks=None) -> Table:
    """What must stay fixed between the selectors being compared."""
    table = Table.grid(padding=(0, 2, 0, 0))
    table.add_column(style="bold", no_wrap=True, min_width=12)
    table.add_column(overflow="fold")
    base = config.base
    splits = taskset.splits
    params = config.agent_params or {}
    model = params.get("model") or config.model or "—"
    table.add_row("run", config.run_name)
    table.add_row("config", _rel(config.path, Path.cwd()) if config.path.is_relative_to(Path.cwd())
                  else config.path.name)
    table.add_row("test split", f"{len(splits.get('test', []))} tasks  (train {len(splits.get('train', []))}, "
                                f"val {len(splits.get('val', []))})")
    table.add_row("agent", str(config.agent_name))
    shown = {k: v for k, v in params.items() if k != "model"}
    if shown:
        table.add_row("agent params", ", ".join(f"{k}={v}" for k, v in list(shown.items())[:6]))
    table.add_row("model", str(model))
    table.add_row("judge", f"{_rel(config.judge_path, base)}:{config.judge_name}")
    table.add_row("repeats", str(config.repeats))
    table.add_row("concurrency", str(config.concurrency))
    table.add_row("timeout", f"{config.timeout_min:g} min" if config.timeout_min else "none")
    table.add_row("order", "shuffled" if config.shuffle else Text("ordered stream (data.shuffle: false)",
                                                                    style="bold yellow"))
    table.add_row("adapter tree", _rel(config.tree_dir, base))
    for i, check in enumerate(checks or []):
        colour = {"error": "bold red", "warning": "yellow"}.get(check.level, "dim")
        table.add_row("checks" if i == 0 else "", Text(f"{check.level}: {check.message}", style=colour))
    return table


def version_prompt(value: str, version=None) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{value:<18}", style="bold")
    if version is None:
        text.append("no adapter: the baseline" if value == "none" else "adapter directory", style="dim")
        return text
    text.append(f" {version.commit[:7]} ", style="yellow")
    text.append(version.date.strftime("%Y-%m-%d %H:%M") + " ", style="dim")
    text.append(version.message)
    return text


class AddDirectoryScreen(ModalScreen[str | None]):
    """Ask for an adapter directory (relative to the config, as hermit resolves it)."""

    BINDINGS = [("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="adddir-box"):
            yield Label("Adapter directory (holds adapter.yaml; relative paths start at the config's folder)")
            yield Input(placeholder="e.g. adapters/my-variant", id="adddir-input")
            with Horizontal(id="adddir-buttons"):
                yield Button("Add", variant="primary", id="adddir-ok")
                yield Button("Cancel", id="adddir-cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#adddir-ok")
    def _ok(self) -> None:
        value = self.query_one(Input).value.strip()
        self.dismiss(value or None)

    @on(Button.Pressed, "#adddir-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class SetupScreen(Screen):
    CSS_PATH = [style("setup.tcss")]
    BINDINGS = bindings.SETUP

    def compose(self) -> ComposeResult:
        config = self.app.config
        yield Header()
        yield Banners(id="setup-banners")
        with Horizontal(id="setup-top"):
            with VerticalScroll(id="setup-protocol"):
                yield Static("Protocol (kept fixed for every selector)", classes="section-title")
                yield Static(protocol_table(config, self.app.taskset, self._checks()), id="protocol")
            with Vertical(id="setup-launch"):
                yield Static("Launch", classes="section-title")
                with Horizontal(classes="field"):
                    yield Label("repeats", classes="field-label")
                    yield Input(str(config.repeats), type="integer", id="repeats", compact=True)
                with Horizontal(classes="field"):
                    yield Label("concurrency", classes="field-label")
                    yield Input(str(config.concurrency), type="integer", id="concurrency", compact=True)
                with Horizontal(classes="field"):
                    yield Label("smoke limit", classes="field-label")
                    yield Input("", type="integer", placeholder="all tasks", id="limit", compact=True)
                with Horizontal(classes="field"):
                    yield Label("timeout min", classes="field-label")
                    yield Input("" if not config.timeout_min else f"{config.timeout_min:g}", type="number",
                                placeholder="none", id="timeout", compact=True)
                with Horizontal(classes="field"):
                    yield Label("max cost $", classes="field-label")
                    yield Input("", type="number", placeholder="no limit", id="max-cost", compact=True)
                with Horizontal(classes="field"):
                    yield Label("run in", classes="field-label")
                    yield Select([("threads", "threads"), ("processes (killable)", "processes"),
                                  ("Ray cluster ($RAY_ADDRESS)", "ray")], value="threads", allow_blank=False,
                                 id="executor", compact=True)
                yield Button("Launch side by side (l)", variant="primary", id="launch", compact=True)
                yield Button("Resume interrupted (r)", id="resume", compact=True)
        yield Static("Versions: pick several to put side by side (space toggles)", classes="section-title",
                     id="versions-title")
        yield SelectionList[str](id="versions")
        with Horizontal(id="setup-actions"):
            yield Button("Add adapter directory… (a)", id="add-dir", compact=True)
            yield Button("History (h)", id="history", compact=True)
            yield Static("", id="tree-note", classes="muted")
        yield Footer()

    def _checks(self):
        from hermit_tui.core.protocol import protocol_checks
        try:
            return protocol_checks(self.app.config, self.app.taskset)
        except Exception as exc:  # a check that cannot run must not hide the screen
            from hermit_tui.core.protocol import Check
            return [Check(level="warning", code="checks_failed", message=f"protocol checks failed: {exc}")]

    def on_mount(self) -> None:
        self.query_one(Banners).show_for(self.app, self.app.store)
        self.query_one("#versions", SelectionList).add_option(Selection(version_prompt("none"), "none", True))
        self.run_worker(self._load_versions, thread=True, exclusive=True, group="versions", name="versions")

    def on_screen_resume(self) -> None:
        self.query_one(Banners).show_for(self.app, self.app.store)

    def _load_versions(self) -> None:
        from hermit_tui.core.errors import InputError
        from hermit_tui.core.tree import AdapterTree
        config = self.app.config
        try:
            tree = AdapterTree(config.tree_dir)
            try:
                versions = tree.versions(config.run_name)
            finally:
                tree.close()
        except InputError as exc:
            self.app.call_from_thread(self._show_versions, [], str(exc))
            return
        self.app.call_from_thread(self._show_versions, versions, None)

    def _show_versions(self, versions, problem: str | None) -> None:
        selections = self.query_one("#versions", SelectionList)
        run = self.app.config.run_name
        for v in versions:
            if not v.valid:
                continue
            if v.kind == "root":
                value = "root"
            elif v.kind == "final" and v.run == run:
                value = "final"
            elif v.kind == "commit":
                value = v.commit[:12]
            else:
                value = v.name
            selections.add_option(Selection(version_prompt(value, v), value, value in DEFAULT_PICKS))
        note = self.query_one("#tree-note", Static)
        note.update(problem or f"{len(versions)} versions in the adapter tree")

    # -- actions --------------------------------------------------------------------------------------------------
    def _int(self, widget_id: str, name: str, allow_empty: bool = False) -> int | None:
        raw = self.query_one(f"#{widget_id}", Input).value.strip()
        if not raw and allow_empty:
            return None
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {raw!r}")
        return value

    def _max_cost(self) -> float | None:
        """The launch's cost cap in USD (empty: none); ValueError with a message for anything else."""
        from hermit_tui.core.costs import check_max_cost
        raw = self.query_one("#max-cost", Input).value.strip()
        if not raw:
            return None
        try:
            return check_max_cost(float(raw))
        except ValueError:
            raise ValueError(f"max cost must be a positive number of dollars, got {raw!r}") from None

    @on(Button.Pressed, "#resume")
    def action_resume(self) -> None:
        self.action_launch(resume=True)

    @on(Button.Pressed, "#launch")
    def action_launch(self, resume: bool = False) -> None:
        picks = list(self.query_one("#versions", SelectionList).selected)
        if not picks:
            self.notify("Pick at least one version to evaluate", severity="warning")
            return
        try:
            repeats = self._int("repeats", "repeats")
            concurrency = self._int("concurrency", "concurrency")
            limit = self._int("limit", "smoke limit", allow_empty=True)
            raw_timeout = self.query_one("#timeout", Input).value.strip()
            timeout = float(raw_timeout) if raw_timeout else None
            if timeout is not None and timeout <= 0:
                raise ValueError(f"timeout must be a positive number of minutes, got {raw_timeout!r}")
            max_cost = self._max_cost()
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        executor = str(self.query_one("#executor", Select).value)
        self.app.launch(picks, repeats=repeats, concurrency=concurrency, limit=limit, resume=resume,
                        executor=executor, timeout_min=timeout, max_cost=max_cost)

    @on(Button.Pressed, "#add-dir")
    def action_add_directory(self) -> None:
        def added(value: str | None) -> None:
            if not value:
                return
            path = self.app.config.resolve_path(value)
            if path is None or not (path / "adapter.yaml").is_file():
                self.notify(f"{value}: not an adapter directory (no adapter.yaml)", severity="error")
                return
            selections = self.query_one("#versions", SelectionList)
            selections.add_option(Selection(version_prompt(value), value, True))
        self.app.push_screen(AddDirectoryScreen(), added)

    @on(Button.Pressed, "#history")
    def action_history(self) -> None:
        self.app.goto("history")

    def action_tasks(self) -> None:
        self.app.goto("tasks")

    def action_compare(self) -> None:
        self.app.goto("compare")

    def action_review(self) -> None:
        self.app.goto("review")

    def action_open_config(self) -> None:
        self.app.goto("picker")
