"""The dashboard application. It only coordinates: it owns the store and the engine's workers, and moves between
screens; what each screen shows lives in ``dashboard/screens/``, reusable pieces in ``dashboard/widgets/``."""

from __future__ import annotations

import gc
from collections import deque
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.worker import get_current_worker

from hermit_tui.core.errors import InputError
from hermit_tui.core.safe import line, terminal
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.annotating import Annotating
from hermit_tui.dashboard.launching import Launching
from hermit_tui.dashboard.palette import HermitCommands
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.support import BEAT_S, Pacer, current_evaluations, guard_terminal, protocol_warnings

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import ThreadPoolExecutor

    from textual.dom import DOMNode
    from textual.timer import Timer
    from textual.worker import Worker

    from hermit_tui.core.run.launch import LaunchOptions
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import Config
    from hermit_tui.core.workspace.tasks import TaskSet

DRAIN_INTERVAL_S = 0.1  # engine events are applied to the store and repainted in batches at this pace


class HermitApp(Launching, Annotating, App):
    """hermit-tui: none/root/final side by side, attempts streaming in, drill-down, history. A launch's life is
    ``dashboard/launching.py``'s, triage's ``dashboard/annotating.py``'s (mixins of this class)."""

    TITLE = "hermit-tui"
    # Every screen's stylesheet is read at start: the first push of a screen whose stylesheet is new makes Textual
    # parse every stylesheet again and restyle every widget (over 100 ms on a loaded machine: a stall on each first
    # visit of a screen). The screens still name their own file, already read.
    CSS_PATH = [
        style("app.tcss"),
        *(
            style(f"{name}.tcss")
            for name in (
                "setup",
                "run",
                "tasks",
                "attempt",
                "compare",
                "errors",
                "history",
                "review",
                "annotate",
                "picker",
                "threshold",
                "quit",
                "help",
            )
        ),
    ]
    BINDINGS = bindings.APP
    COMMANDS = App.COMMANDS | {HermitCommands}

    class StoreUpdated(Message):
        """The store changed (a batch of engine events, or evaluations read from disk)."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Textual's notification, with its text shown as it is: markup off (a task id or an error holding
        ``[bold]`` or ``[@click=…]`` is text), control characters shown as their escape (``core.safe``)."""
        super().notify(terminal(message), title=line(title), severity=severity, timeout=timeout, markup=False)

    def __init__(
        self,
        config_path: Path | None = None,
        *,
        overrides: list[str] | None = None,
        store: EvalStore | None = None,
        live_updates: bool = True,
    ):
        guard_terminal()  # no control character of the data reaches the terminal, whichever widget shows it
        super().__init__()
        self.config_path = Path(config_path) if config_path else None
        self.overrides = list(overrides or [])
        self.config: Config | None = None
        self.taskset: TaskSet | None = None
        self.store = store or EvalStore()
        self.current_run: EvalRun | None = None
        self.is_demo = False
        self.launch_settings: dict = {}  # the setup screen's choices for this config (also in the settings file)
        self.protocol_view: Any = None  # the setup screen's protocol table, built with the config off the loop
        self.pacer = Pacer()  # worker threads give way to the loop through it (paced_worker)
        self._paced: set[Worker] = set()
        self._beat: Timer | None = None
        self.banners_expanded: bool | None = None  # None: expanded on a tall terminal, collapsed on a short one
        self.quitting = False  # the user chose to cancel the launch and quit: exit when it has stopped
        self.abandoned = False  # attempts in flight were abandoned (their threads may still be running)
        self._events: deque = deque()
        self._live_updates = live_updates
        # one thread: annotation changes reach the files in the order they were made
        self._annotation_writer: ThreadPoolExecutor | None = None
        self.annotations_pending = 0
        self.bulk_undo: tuple[str, list[tuple[str, str, int, Any]]] | None = None  # the last bulk label (U undoes)
        self._chain: list[LaunchOptions] = []  # launches still to run after the current one (launch_chain)
        self._chain_labels: list[str] = []  # every label of that chain: kept in the view

    # -- start ----------------------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self._live_updates:
            self.set_interval(DRAIN_INTERVAL_S, self.drain_events, name="drain")
        self.start()

    def start(self) -> None:
        """The first screen: the config given on the command line, else the picker."""
        if self.config_path is not None:
            self.open_config(self.config_path, self.overrides)
        else:
            from hermit_tui.dashboard.screens.picker import PickerScreen

            self.push_screen(PickerScreen())

    # -- config ---------------------------------------------------------------------------------------------------
    def open_config(self, path: Path, overrides: list[str] | None = None) -> None:
        """Load a run.yaml and its tasks off the event loop, then show the setup screen."""
        self.run_worker(
            lambda: self._load_config(Path(path), overrides or []),
            thread=True,
            exclusive=True,
            group="load",
            name="load-config",
        )

    def _load_config(self, path: Path, overrides: list[str]) -> None:
        from hermit_tui.dashboard.screens import SCREENS

        for name in ("setup", "history", "tasks", "run", "compare"):  # the screens a config leads to, imported
            SCREENS[name]  # here, while the loop waits for the config: later, beside the loop, they slowed it
        from hermit_tui.core.workspace.config import load_config
        from hermit_tui.core.workspace.tasks import load_tasks
        from hermit_tui.demo import is_demo_config
        from hermit_tui.settings import launch_settings, remember_config

        try:
            config = load_config(path, overrides)
            taskset = load_tasks(config)
        except InputError as exc:
            self.call_from_thread(self.notify, str(exc), title="Cannot open the config", severity="error", timeout=10)
            return
        if get_current_worker().is_cancelled:
            return
        from hermit_tui.settings import label_set

        remember_config(config.path)
        found = current_evaluations(config)  # shown at once, as a launch would show them
        # Off the event loop too: the checks compare the splits (0.1 s at 111,112 tasks) and read the training
        # config; the setup screen's protocol table is built from them here.
        from hermit_tui.core.report.protocol import checks_for_display
        from hermit_tui.dashboard.screens.setup import protocol_table
        from hermit_tui.dashboard.state.store import index_task_ids

        checks = checks_for_display(config, taskset)
        warnings, labels = [c.message for c in checks], label_set(config.run_dir)
        protocol = protocol_table(config, taskset, checks)
        indexed = index_task_ids(taskset.test_ids)  # the store's positions of 111,112 ids: ~70 ms, here
        self.call_from_thread(
            self._config_loaded,
            config,
            taskset,
            is_demo_config(config.path),
            launch_settings(config.path),
            warnings,
            labels,
            protocol,
            indexed,
        )
        self.call_from_thread(lambda: self.add_stored(found, beside_live=False))

    def _config_loaded(
        self,
        config,
        taskset,
        is_demo: bool,
        launch: dict | None = None,
        warnings: list[str] | None = None,
        labels: list[str] | None = None,
        protocol: Any = None,
        indexed: tuple[list[str], dict[str, int]] | None = None,
    ) -> None:
        from hermit_tui.dashboard.screens.setup import SetupScreen

        self.config, self.taskset, self.is_demo = config, taskset, is_demo
        self.protocol_view = protocol
        self.config_path = config.path
        self.launch_settings = dict(launch or {})
        gc.unfreeze()  # the previous config's records may now be collected
        if warnings is None:
            warnings = protocol_warnings(config, taskset)
        if labels is None:
            from hermit_tui.settings import label_set

            labels = label_set(config.run_dir)
        self.store.reset(taskset.tasks, taskset.test_ids, warnings=warnings, label_set=labels, indexed=indexed)
        self.bulk_undo = None  # another config: nothing of the last one to undo
        # The tasks (a dict per task: 111,112 of them on a large split) live as long as the config: out of the
        # cyclic collector's generations with everything else alive now, or each full collection walks them all
        # (a tenth of a second each, on a shared GIL: a stall). Acyclic garbage is still freed when dropped.
        gc.freeze()
        self.sub_title = f"{config.run_name}" + ("  ·  teaching demonstration" if is_demo else "")
        # The setup screen is the root of a config: drop whatever was above the default screen.
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(SetupScreen())

    def remember_launch(self, values: dict) -> None:
        """The setup screen's choices: kept for this session and written to the settings file (not run.yaml)."""
        from hermit_tui.settings import remember_launch

        self.launch_settings = dict(values)
        if self.config is not None:
            remember_launch(self.config.path, values)

    def action_toggle_banners(self) -> None:
        """Expand the warnings collapsed to one line, or collapse them."""
        from hermit_tui.dashboard.widgets.banners import Banners

        shown = self.screen.query(Banners)
        current = shown.first().expanded() if shown else bool(self.banners_expanded)
        self.banners_expanded = not current
        for banner in shown:
            banner.redraw()

    def on_resize(self) -> None:
        from hermit_tui.dashboard.widgets.banners import Banners

        for banner in self.screen.query(Banners):
            banner.redraw()

    # -- history --------------------------------------------------------------------------------------------------
    def add_stored(self, evaluations: list[Any], *, beside_live: bool = True) -> None:
        """Put evaluations read from disk beside the others. A worker reads each one and builds its column (the
        whole parse and aggregation, off the event loop); the event loop only puts the built columns in the store
        (milliseconds), ordered as a launch orders them, baseline none. ``beside_live`` False: one whose label a
        launch is already showing is left out (the launch replaces it)."""
        if not evaluations:
            return
        store, generation, threshold = self.store, self.store.generation, self.store.threshold
        pace = self.pacer.pace

        def load() -> None:
            from hermit_tui.dashboard.state.store import build_stored

            worker = get_current_worker()
            for stored in evaluations:
                if worker.is_cancelled or store.generation != generation:
                    return
                pace()
                try:
                    col = build_stored(stored, threshold, pause=pace)
                except InputError as exc:
                    self.call_from_thread(self.notify, str(exc), severity="error", timeout=10)
                    continue
                new_ids = store.new_task_ids(col)
                self.call_from_thread(self._stored_loaded, store, generation, stored, col, beside_live, new_ids)

        self.paced_worker(self, load, group="history", name="open-history")

    def take_out(self, keys: list[str]) -> None:
        """Take columns out of the view (History lists them still; enter there puts them back). A launch's own
        column stays while it runs."""
        running = [k for k in keys if (c := self.store.columns.get(k)) is not None and c.running]
        gone = [k for k in keys if k not in running and k in self.store.columns]
        for key in gone:
            self.store.remove_column(key)
        if running:
            self.notify(f"{', '.join(running)}: running, kept in the view until it ends", severity="warning")
        if gone:
            self.notify(f"Taken out of the view: {', '.join(gone)} (History puts it back)", timeout=4)
        self.screen.post_message(self.StoreUpdated())

    def paced_worker(self, node: DOMNode, work: Callable[[], Any], **kwargs: Any) -> Worker:
        """``node.run_worker(work, thread=True, **kwargs)`` for work that calls ``self.pacer.pace`` between its
        steps: the loop beats while any such worker is alive (see :class:`Pacer`)."""
        worker = node.run_worker(work, thread=True, **kwargs)
        self._paced.add(worker)
        if self._beat is None:
            self.pacer.tick()
            self.pacer.active = True
            self._beat = self.set_interval(BEAT_S, self._pace_tick, name="pace")
        return worker

    def _pace_tick(self) -> None:
        self.pacer.tick()
        self._paced = {w for w in self._paced if not w.is_finished}
        if not self._paced and self._beat is not None:
            self.pacer.active = False
            self._beat.stop()
            self._beat = None

    def _stored_loaded(
        self,
        store: EvalStore,
        generation: int,
        stored: Any,
        col: Any,
        beside_live: bool,
        new_ids: set[str] | None = None,
    ) -> None:
        if store is not self.store or store.generation != generation:  # another config was opened meanwhile
            return
        shown = store.columns.get(stored.name)
        if not beside_live and shown is not None and shown.source == "live":
            return
        store.add_column(col, store.stored_key(stored), new_ids=new_ids)
        # The column's task ids and index (lists and dicts of 111,112 entries each at a million attempts) live as
        # long as the store: out of the cyclic collector's generations, or each full collection walks them all
        # (tens of milliseconds: a stall while the table paints). Acyclic garbage is still freed when dropped.
        gc.freeze()
        self.screen.post_message(self.StoreUpdated())

    def on_unmount(self) -> None:
        self.flush_annotations()

    # -- actions --------------------------------------------------------------------------------------------------
    def action_help(self) -> None:
        from hermit_tui.dashboard.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_dark(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"
        self.notify(f"Theme: {'light' if self.theme == 'textual-light' else 'dark'} (ctrl+t switches)", timeout=3)

    def action_open_demo(self) -> None:
        def build() -> None:
            from hermit_tui.demo import build_demo, default_demo_dir

            try:
                path = build_demo(default_demo_dir())
            except InputError as exc:
                self.call_from_thread(self.notify, str(exc), severity="error", timeout=10)
                return
            self.call_from_thread(self.open_config, path)

        self.run_worker(build, thread=True, exclusive=True, group="load", name="build-demo")

    def action_set_threshold(self) -> None:
        """Ask for the success threshold the views use; recount the store under it."""
        from hermit_tui.dashboard.screens.dialogs.threshold import ThresholdScreen

        def chosen(value: float | None) -> None:
            if value is None:
                return
            self.store.set_threshold(value)
            self.notify(f"Success threshold {value:g} in the views (the files keep hermit's 1.0)")
            self.screen.post_message(self.StoreUpdated())

        self.push_screen(ThresholdScreen(self.store.threshold), chosen)

    def action_export_report(self) -> None:
        """Write report.md, .json, .csv and .html under <run dir>/reports/<UTC time>/ (in a worker)."""
        if self.config is None or self.taskset is None:
            self.notify("Open a config first", severity="warning")
            return
        config, taskset, threshold, demo = self.config, self.taskset, self.store.threshold, self.is_demo
        label_set = list(self.store.label_set)

        def export() -> None:
            from datetime import datetime

            from hermit_tui.core.records.results import write_atomic
            from hermit_tui.core.report.build import build_report, to_csv, to_json, to_markdown
            from hermit_tui.core.report.html_attempts import report_html

            try:
                report = build_report(config, taskset, None, threshold=threshold, label_set=label_set, demo=demo)
                folder = config.run_dir / "reports" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
                folder.mkdir(parents=True, exist_ok=False)
                for name, render in (
                    ("report.md", to_markdown),
                    ("report.json", to_json),
                    ("report.csv", to_csv),
                    ("report.html", report_html),
                ):
                    write_atomic(folder / name, render(report))
            except (InputError, OSError) as exc:
                self.call_from_thread(self.notify, str(exc), title="Report not written", severity="error")
                return
            self.call_from_thread(self.notify, f"Report written to {folder}", title="Report", timeout=10)

        self.run_worker(export, thread=True, exclusive=True, group="report", name="export-report")

    def action_goto(self, name: str) -> None:
        """The keys every screen shares for another screen (bindings.goto: t, e, v, h, p)."""
        self.goto(name)

    def goto(self, name: str, **kwargs: Any):
        """Show a screen by name (used by bindings and palette commands). A screen already open lower in the stack
        is shown again as it was (what was above it is closed) rather than opened twice."""
        from hermit_tui.dashboard.screens import SCREENS

        if self.config is None and name not in ("picker", "help"):
            self.notify("Open a config first", severity="warning")
            return None
        screen_cls = SCREENS[name]
        if isinstance(self.screen, screen_cls) and not kwargs:
            return None
        if not kwargs and name not in ("help", "picker"):
            below = [s for s in self.screen_stack[1:-1] if isinstance(s, screen_cls)]
            if below:
                return self.pop_screen_until(below[-1])
        return self.push_screen(screen_cls(**kwargs))

    def pop_screen_until(self, screen):
        """Close the screens above ``screen``."""
        awaitable = None
        while self.screen is not screen and len(self.screen_stack) > 1:
            awaitable = self.pop_screen()
        return awaitable

    async def run_on(self, name: str, action: str) -> None:
        """Show screen ``name`` and run one of its actions there (palette commands such as "Swap a/b")."""
        from hermit_tui.dashboard.screens import SCREENS

        shown = self.goto(name)
        if shown is not None:
            await shown
        if isinstance(self.screen, SCREENS[name]):
            await self.screen.run_action(action)
