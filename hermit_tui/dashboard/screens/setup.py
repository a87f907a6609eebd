"""Setup: the protocol at a glance, the selectable adapter versions (plus directories, tags and commits typed in),
the launch settings, launch. The choices survive screen changes and are remembered per config in hermit-tui's own
settings file (never in run.yaml)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Button, Header, Input, Select, SelectionList, Static
from textual.widgets.selection_list import Selection

from hermit_tui.core.errors import InputError
from hermit_tui.core.report.protocol import checks_for_display
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.stats.sequential.anytime_text import small_split_note
from hermit_tui.core.workspace.selectors import VersionChoices, describe_selector, version_choices
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitModal, HermitScreen, opened
from hermit_tui.dashboard.widgets.banners import Banners
from hermit_tui.dashboard.widgets.checklist import CheckList
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.key_value import KeyValueRows, Tail
from hermit_tui.dashboard.widgets.textfield import TextField

DEFAULT_PICKS = ("none", "root", "final")
EXECUTORS = [("threads", "threads"), ("processes (killable)", "processes"), ("Ray cluster ($RAY_ADDRESS)", "ray")]
FIELDS = ("repeats", "concurrency", "limit", "timeout", "baseline", "margin")  # launch fields as typed (per config)
DECIDE = [("no", "off"), ("when decided", "on"), ("anytime-valid", "anytime")]  # --stop-when-decided [--anytime]
SAVE_DELAY_S = 0.5
# the launch settings' labels, one a row, beside their fields (in this order)
FIELD_LABELS = (
    "repeats",
    "concurrency",
    "smoke limit",
    "timeout min",
    "max cost $",
    "run in",
    "stop early",
    "baseline ±M",
)


def _rel(path: Path | None, base: Path) -> str:
    if path is None:
        return "—"
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return str(path)


def protocol_table(config, taskset, checks=None) -> KeyValueRows:
    """What must stay fixed between the selectors being compared."""
    base = config.base
    splits = taskset.splits
    params = config.agent_params or {}
    model = params.get("model") or config.model or "—"
    shown = {k: v for k, v in params.items() if k != "model"}
    here = config.path.is_relative_to(Path.cwd())
    order = "shuffled" if config.shuffle else Text("ordered stream (data.shuffle: false)", style="bold yellow")
    rows: list[tuple[str, str | Text]] = [
        ("run", config.run_name),
        ("config", Tail(_rel(config.path, Path.cwd()) if here else config.path.name)),
        (
            "test split",
            f"{len(splits.get('test', []))} tasks  (train {len(splits.get('train', []))}, "
            f"val {len(splits.get('val', []))})",
        ),
        ("agent", str(config.agent_name)),
        *([("agent params", ", ".join(f"{k}={v}" for k, v in list(shown.items())[:6]))] if shown else []),
        ("model", str(model)),
        ("judge", Tail(f"{_rel(config.judge_path, base)}:{config.judge_name}")),
        ("repeats", str(config.repeats)),
        ("concurrency", str(config.concurrency)),
        ("timeout", f"{config.timeout_min:g} min" if config.timeout_min else "none"),
        ("order", order),
        ("adapter tree", Tail(_rel(config.tree_dir, base))),
    ]
    for i, check in enumerate(checks or []):
        colour = {"error": "bold red", "warning": "yellow"}.get(check.level, "dim")
        rows.append(("checks" if i == 0 else "", Text(f"{check.level}: {check.message}", style=colour)))
    return KeyValueRows(rows)


def version_prompt(value: str, version=None, note: str | None = None) -> Text:
    """One line of the versions list: the selector, then its commit, date and message (or what it is)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{value:<18}", style="bold")
    if version is None:
        text.append(note or ("no adapter: the baseline" if value == "none" else "adapter directory"), style="dim")
        return text
    text.append(f" {version.commit[:7]} ", style="yellow")
    text.append(version.date.strftime("%Y-%m-%d %H:%M") + " ", style="dim")
    text.append(version.message)
    return text


class AddSelectorScreen(HermitModal[tuple[str, str] | None]):
    """Ask for a selector to add: an adapter directory (relative to the config, as hermit resolves it), a tag or a
    commit (abbreviated is fine). It is checked before it is added; a problem is shown here, the field kept."""

    BINDINGS = [("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="adddir-box"):
            yield Static(
                "Add an adapter directory (holds adapter.yaml; relative to the config's folder), a tag or "
                "a commit (abbreviated is fine)",
                id="adddir-prompt",
            )
            yield Input(placeholder="e.g. adapters/my-variant, demo/ckpt-step-2, 1a2b3c4", id="adddir-input")
            yield Static("", id="adddir-error")
            with Horizontal(id="adddir-buttons"):
                yield Button("Add", variant="primary", id="adddir-ok", compact=True)
                yield Button("Cancel (escape)", id="adddir-cancel", compact=True)

    @on(Input.Submitted)
    @on(Button.Pressed, "#adddir-ok")
    def _ok(self) -> None:
        value = self.query_one(Input).value.strip()
        if not value:
            self.query_one("#adddir-error", Static).update("Type a directory, a tag or a commit (escape cancels)")
            return
        config, _ = opened(self.app)
        self.query_one("#adddir-error", Static).update("checking…")

        def check() -> None:
            try:
                note = describe_selector(value, config)
            except InputError as exc:
                self.app.call_from_thread(self._refused, str(exc))
                return
            self.app.call_from_thread(self.dismiss, (value, note))

        self.run_worker(check, thread=True, exclusive=True, group="add-selector", name="check-selector")

    def _refused(self, message: str) -> None:
        self.query_one("#adddir-error", Static).update(Text(message, style="bold red"))
        self.query_one(Input).focus()

    @on(Button.Pressed, "#adddir-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class SetupScreen(HermitScreen[None]):
    CSS_PATH = [style("setup.tcss")]
    BINDINGS = bindings.SETUP
    SPLIT_FIRST_SHOW = True  # opening a config: its layout and first paint are two steps of the loop, not one

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._restored = False  # the saved choices were applied to the versions list
        self._save_timer: Timer | None = None
        self._added: list[str] = []  # directories and refs typed in on this screen
        self._deferred: bool | None = None  # l (False) or r (True) pressed before the versions were in place
        self._decide_shown: object = "off"  # the stop-early choice last shown (set again in compose)
        self._launch_shown = ""  # the launch button's label (set in compose)

    @property
    def saved(self) -> dict:
        return getattr(self.app, "launch_settings", None) or {}

    def compose(self) -> ComposeResult:
        config, taskset = opened(self.app)
        saved = self.saved
        defaults = {
            "repeats": str(config.repeats),
            "concurrency": str(config.concurrency),
            "limit": "",
            "timeout": "" if not config.timeout_min else f"{config.timeout_min:g}",
            "baseline": "",
            "margin": "",
        }
        value = {k: saved.get(k, defaults[k]) for k in FIELDS}
        executor = saved.get("executor") if saved.get("executor") in {v for _, v in EXECUTORS} else "threads"
        decide = saved.get("decide") if saved.get("decide") in ("on", "anytime") else "off"
        self._decide_shown = decide  # the Select's first Changed (its restored value) is not the user's choice
        yield Header()
        yield Banners(id="setup-banners")
        with Horizontal(id="setup-top"):
            with VerticalScroll(id="setup-protocol"):
                yield Static("Protocol (kept fixed for every selector)", classes="section-title")
                view = self.app.protocol_view  # built off the loop with the config; else here
                yield Static(
                    view if view is not None else protocol_table(config, taskset, checks_for_display(config, taskset)),
                    id="protocol",
                )
            with VerticalScroll(id="setup-launch"):
                yield Static("Launch settings", classes="section-title")
                # The labels are one Static beside the column of fields (one row each), not a Label and a row per
                # field: 12 widgets fewer to lay out and paint on the screen's first show (55 -> 43).
                with Horizontal(id="launch-fields"):
                    yield Static("\n".join(FIELD_LABELS), id="field-labels")
                    with Vertical(id="field-inputs"):
                        yield TextField(value["repeats"], type="integer", id="repeats", compact=True)
                        yield TextField(value["concurrency"], type="integer", id="concurrency", compact=True)
                        yield TextField(
                            value["limit"],
                            type="integer",
                            placeholder="all tasks",
                            id="limit",
                            compact=True,
                            tooltip="A smoke check: only the first N test tasks, written under "
                            "eval/<label>/smoke/ (it never replaces an evaluation; History lists it)",
                        )
                        yield TextField(value["timeout"], type="number", placeholder="none", id="timeout", compact=True)
                        yield Input("", type="number", placeholder="no limit", id="max-cost", compact=True)
                        yield Select(EXECUTORS, value=executor, allow_blank=False, id="executor", compact=True)
                        yield Select(DECIDE, value=decide, allow_blank=False, id="decide", compact=True)
                        with Horizontal(id="decide-options"):
                            yield TextField(value["baseline"], placeholder="auto", id="baseline", compact=True)
                            yield TextField(
                                value["margin"], type="number", placeholder="off", id="margin", compact=True
                            )
        yield Static(
            "Versions to put side by side (space ticks; a adds a directory, tag or commit)",
            classes="section-title",
            id="versions-title",
        )
        yield CheckList(id="versions")
        with Horizontal(id="setup-actions"):
            # composed with the label it has on the first show (set again on a change only: a new width is a layout)
            self._launch_shown = self._launch_label(0)
            yield Button(self._launch_shown, variant="primary", id="launch", compact=True)
            yield Button("Resume (r)", id="resume", compact=True)
            yield Button("Add… (a)", id="add-dir", compact=True)
            yield Button("History (h)", id="history", compact=True)
            yield Static("", id="tree-note", classes="muted")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Banners).show_for(self.app, self.app.store)
        picks = self.saved.get("picks")
        self.query_one("#versions", SelectionList).add_option(
            Selection(version_prompt("none"), "none", "none" in (picks if picks is not None else DEFAULT_PICKS))
        )
        self.focus_main()
        self.run_worker(self._load_versions, thread=True, exclusive=True, group="versions", name="versions")

    def focus_main(self) -> None:
        self.query_one("#versions", SelectionList).focus()

    def on_screen_resume(self) -> None:
        self.query_one(Banners).show_for(self.app, self.app.store)
        self._update_launch_label()

    def on_hermit_app_store_updated(self, message) -> None:
        self.query_one(Banners).show_for(self.app, self.app.store)

    def _load_versions(self) -> None:
        choices = version_choices(opened(self.app)[0], self.saved.get("added", []))
        self.app.call_from_thread(self._show_versions, choices)

    def _show_versions(self, choices: VersionChoices) -> None:
        selections = self.query_one("#versions", SelectionList)
        saved_picks = self.saved.get("picks")
        picks = set(saved_picks if saved_picks is not None else DEFAULT_PICKS)
        with selections.prevent(SelectionList.SelectedChanged):
            for value, v in choices.versions:
                selections.add_option(Selection(version_prompt(value, v), value, value in picks))
            gone = []
            for added in choices.added:
                if added.refused is not None:
                    gone.append(f"{added.text}: {added.refused}")
                elif not self._has_option(added.text):
                    selections.add_option(
                        Selection(version_prompt(added.text, note=added.note), added.text, added.text in picks)
                    )
        self._restored = True
        note = self.query_one("#tree-note", Static)
        note.update(choices.problem or f"{choices.in_tree} versions in the adapter tree")
        for message in gone:
            self.notify(message, title="Left out of the versions", severity="warning", timeout=8)
        self._update_launch_label()
        if self._deferred is not None:  # l was pressed while the versions were read: launch what is now shown
            resume, self._deferred = self._deferred, None
            self.action_launch(resume)

    def _has_option(self, value: str) -> bool:
        selections = self.query_one("#versions", SelectionList)
        return any(selections.get_option_at_index(i).value == value for i in range(selections.option_count))

    # -- remembering the choices ----------------------------------------------------------------------------------
    def ticked(self) -> list[str]:
        """The ticked versions in list order (none, root, checkpoints, final, then those typed in)."""
        selections = self.query_one("#versions", SelectionList)
        chosen = set(selections.selected)
        values = [selections.get_option_at_index(i).value for i in range(selections.option_count)]
        return [v for v in values if v in chosen]

    def choices(self) -> dict[str, Any]:
        """What the user chose on this screen, as kept in the settings file."""
        out: dict[str, Any] = {k: self.query_one(f"#{k}", Input).value for k in FIELDS}
        out["executor"] = str(self.query_one("#executor", Select).value)
        out["decide"] = str(self.query_one("#decide", Select).value)
        out["picks"] = self.ticked()
        out["added"] = list(dict.fromkeys([*self.saved.get("added", []), *self._added]))
        return out

    def _changed(self) -> None:
        """Keep the choices in the app at once (another screen, or this one again, starts from them) and write the
        settings file shortly after."""
        if not self._restored:
            return
        self.app.launch_settings = self.choices()
        if self._save_timer is not None:
            self._save_timer.stop()
        self._save_timer = self.set_timer(SAVE_DELAY_S, self._save)

    def _save(self) -> None:
        self._save_timer = None
        if self._restored:
            self.app.remember_launch(self.choices())

    def on_screen_suspend(self) -> None:
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save()

    @on(Input.Changed)
    @on(Select.Changed, "#executor")
    @on(Select.Changed, "#decide")
    def _field_changed(self) -> None:
        self._changed()

    @on(Select.Changed, "#decide")
    def _decide_changed(self, event: Select.Changed) -> None:
        """A warning when anytime-valid is chosen on a split too small for it to decide."""
        previous = self._decide_shown
        chosen, self._decide_shown = event.value, event.value
        if chosen != "anytime" or chosen == previous:
            return
        try:
            _, taskset = opened(self.app)
        except (InputError, RuntimeError):
            return
        candidates = max(1, len(self.ticked()) - 1)  # alpha split over the candidates against one baseline
        try:
            margin = self._number("margin", "")
        except ValueError:  # (refused, with its message, when the launch is asked for)
            margin = None
        note = small_split_note(len(taskset.test_ids), candidates, margin)
        if note is not None:
            self.notify(note[0].upper() + note[1:], severity="warning", timeout=10)

    @on(SelectionList.SelectedChanged, "#versions")
    def _picks_changed(self) -> None:
        self._changed()
        self._update_launch_label()

    def _launch_label(self, ticked: int) -> str:
        return (
            "Show the running launch (l)"
            if self.app.running
            else "Launching once the versions are read…"
            if self._deferred is not None
            else "Reading the versions… (l waits)"
            if not self._restored
            else f"Launch {ticked} side by side (l)"
            if ticked > 1
            else "Launch (l)"
            if ticked == 1
            else "Tick a version to launch"
        )

    def _update_launch_label(self) -> None:
        label = self._launch_label(len(self.query_one("#versions", SelectionList).selected))
        if label == self._launch_shown:  # unchanged: no layout
            return
        self._launch_shown = label
        button = self.query_one("#launch", Button)
        button.label = label
        button.refresh(layout=True)  # the label is not a layout reactive: the width follows it only so

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.focus_main()

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

    def _number(self, widget_id: str, message: str) -> float | None:
        """A number field (empty: None); ValueError with ``message`` (naming what was typed) for anything else that
        is not a positive number."""
        raw = self.query_one(f"#{widget_id}", Input).value.strip()
        if not raw:
            return None
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise ValueError(f"{message}, got {raw!r}")
        return value

    def launch_options(self, resume: bool = False) -> LaunchOptions:
        """The launch the fields describe; ValueError (a field that is not a number) or InputError (a value the
        launch refuses), each with a message for the user."""
        choice = self.query_one("#decide", Select).value
        decide = choice in ("on", "anytime")
        return LaunchOptions(
            selectors=self.ticked(),
            resume=resume,
            repeats=self._int("repeats", "repeats"),
            concurrency=self._int("concurrency", "concurrency"),
            limit=self._int("limit", "smoke limit", allow_empty=True),
            timeout_min=self._number("timeout", "timeout must be a positive number of minutes"),
            max_cost=self._number("max-cost", "max cost must be a positive number of dollars"),
            executor=str(self.query_one("#executor", Select).value),
            stop_when_decided=decide,
            anytime=choice == "anytime",
            baseline=(self.query_one("#baseline", Input).value.strip() or None) if decide else None,
            margin=self._number("margin", "the margin must be a positive difference of mean scores (e.g. 0.05)")
            if decide
            else None,
        )

    @on(Button.Pressed, "#resume")
    def action_resume(self) -> None:
        self.action_launch(resume=True)

    @on(Button.Pressed, "#launch")
    def action_launch(self, resume: bool = False) -> None:
        if self.app.running:  # one launch at a time: show it
            self.app.goto("run")
            return
        if not self._restored:  # the tree's versions and the remembered picks are not in place yet: wait for them
            self._deferred = resume
            self.notify(
                "Reading the adapter tree's versions and your remembered picks: the launch starts once they are "
                "in place, with what is ticked then",
                timeout=5,
            )
            self._update_launch_label()
            return
        if not self.ticked():
            self.notify("Tick at least one version to evaluate (space ticks)", severity="warning")
            return
        try:
            options = self.launch_options(resume)
        except (ValueError, InputError) as exc:
            self.notify(str(exc), severity="error")
            return
        if self._restored:
            self.app.remember_launch(self.choices())
        self.app.launch(options)

    @on(Button.Pressed, "#add-dir")
    def action_add_selector(self) -> None:
        def added(result: tuple[str, str] | None) -> None:
            if not result:
                return
            value, note = result
            selections = self.query_one("#versions", SelectionList)
            if self._has_option(value):
                selections.select(value)
                self.notify(f"{value} is in the list: ticked", timeout=4)
            else:
                selections.add_option(Selection(version_prompt(value, note=note), value, True))
                self._added.append(value)
                self._changed()
            self._update_launch_label()

        self.app.push_screen(AddSelectorScreen(), added)

    @on(Button.Pressed, "#history")
    def action_history(self) -> None:
        self.app.goto("history")

    def action_settings(self) -> None:
        """The launch settings, one key away: the focus on their first field (repeats)."""
        self.query_one("#repeats", Input).focus()
        self.query_one("#setup-launch", VerticalScroll).scroll_home(animate=False)

    def action_checks(self) -> None:
        """The protocol panel, focused (the arrow keys scroll it) and scrolled to its checks."""
        panel = self.query_one("#setup-protocol", VerticalScroll)
        panel.focus()
        panel.scroll_end(animate=False)

    def action_tasks(self) -> None:
        self.app.goto("tasks")

    def action_compare(self) -> None:
        self.app.goto("compare")

    def action_review(self) -> None:
        self.app.goto("review")

    def action_open_config(self) -> None:
        self.app.goto("picker")
