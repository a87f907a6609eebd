"""The dashboard application. It only coordinates: it owns the store and the engine's workers, and moves between
screens; what each screen shows lives in ``screens/``, reusable pieces in ``widgets/``."""
from __future__ import annotations

import gc
import os
from collections import deque
from pathlib import Path
from typing import Any

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from hermit_tui import bindings
from hermit_tui.commands import HermitCommands
from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.paths import style
from hermit_tui.store import EvalStore

DRAIN_INTERVAL_S = 0.1  # engine events are applied to the store and repainted in batches at this pace


class HermitApp(App):
    """hermit-tui: none/root/final side by side, attempts streaming in, drill-down, history."""

    TITLE = "hermit-tui"
    CSS_PATH = [style("app.tcss")]
    BINDINGS = bindings.APP
    COMMANDS = App.COMMANDS | {HermitCommands}

    class StoreUpdated(Message):
        """The store changed (a batch of engine events, or evaluations read from disk)."""

    class RunEnded(Message):
        """The launch in progress finished or was cancelled."""

        def __init__(self, cancelled: bool, error: str | None = None):
            super().__init__()
            self.cancelled = cancelled
            self.error = error

    def __init__(self, config_path: Path | None = None, *, overrides: list[str] | None = None,
                 store: EvalStore | None = None, live_updates: bool = True):
        super().__init__()
        self.config_path = Path(config_path) if config_path else None
        self.overrides = list(overrides or [])
        self.config = None
        self.taskset = None
        self.store = store or EvalStore()
        self.current_run = None
        self.is_demo = False
        self._events: deque = deque()
        self._live_updates = live_updates

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
            from hermit_tui.screens.picker import PickerScreen
            self.push_screen(PickerScreen())

    # -- config ---------------------------------------------------------------------------------------------------
    def open_config(self, path: Path, overrides: list[str] | None = None) -> None:
        """Load a run.yaml and its tasks off the event loop, then show the setup screen."""
        self.run_worker(lambda: self._load_config(Path(path), overrides or []), thread=True, exclusive=True,
                        group="load", name="load-config")

    def _load_config(self, path: Path, overrides: list[str]) -> None:
        from hermit_tui.core.config import load_config
        from hermit_tui.core.tasks import load_tasks
        from hermit_tui.demo import is_demo_config
        from hermit_tui.settings import remember_config
        try:
            config = load_config(path, overrides)
            taskset = load_tasks(config)
        except InputError as exc:
            self.call_from_thread(self.notify, str(exc), title="Cannot open the config", severity="error",
                                  timeout=10)
            return
        if get_current_worker().is_cancelled:
            return
        remember_config(config.path)
        self.call_from_thread(self._config_loaded, config, taskset, is_demo_config(config.path))

    def _config_loaded(self, config, taskset, is_demo: bool) -> None:
        from hermit_tui.screens.setup import SetupScreen
        self.config, self.taskset, self.is_demo = config, taskset, is_demo
        self.config_path = config.path
        gc.unfreeze()  # the previous store's records may now be collected
        self.store = EvalStore(taskset.tasks, taskset.test_ids)
        self.store.warnings = protocol_warnings(config, taskset)
        self.sub_title = f"{config.run_name}" + ("  ·  teaching demonstration" if is_demo else "")
        # The setup screen is the root of a config: drop whatever was above the default screen.
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(SetupScreen())

    # -- launching ------------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.current_run is not None

    def launch(self, selectors: list[str], *, repeats: int | None = None, concurrency: int | None = None,
               limit: int | None = None, retry: dict[str, list[tuple[str, int]]] | None = None,
               resume: bool = False, executor: str = "threads", timeout_min: float | None = None,
               max_cost: float | None = None) -> None:
        """Evaluate ``selectors`` side by side in a worker thread (or re-run only the given failed attempts, or
        continue interrupted evaluations)."""
        if self.config is None:
            self.notify("Open a config first", severity="warning")
            return
        if self.running:
            self.notify("An evaluation is already running: cancel it first (c)", severity="warning")
            return
        options = dict(repeats=repeats, concurrency=concurrency, limit=limit, retry=retry, resume=resume,
                       executor=executor, timeout_min=timeout_min, max_cost=max_cost)
        if executor == "ray":
            options["ray_address"] = os.environ.get("RAY_ADDRESS") or None
        self.run_worker(lambda: self._run(selectors, options), thread=True, exclusive=True, group="eval",
                        name="evaluation")

    def _run(self, selectors, options: dict) -> None:
        from hermit_tui.core.runner import EvalRun
        try:
            run = EvalRun(self.config, selectors, on_event=self._events.append, tasks=self.taskset, **options)
        except InputError as exc:
            self.call_from_thread(self.notify, str(exc), title="Cannot launch", severity="error", timeout=10)
            return
        self.current_run = run
        self.call_from_thread(self._show_run)
        error = None
        try:
            run.run_sync()
        except (InputError, RunFailed) as exc:
            error = str(exc)
        except Exception as exc:  # an engine failure must not take the dashboard down
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self.current_run = None
        self.call_from_thread(self._run_ended, run.cancelled, error)

    def _show_run(self) -> None:
        from hermit_tui.screens.run import RunScreen
        if not isinstance(self.screen, RunScreen):
            self.push_screen(RunScreen())

    def _run_ended(self, cancelled: bool, error: str | None) -> None:
        self.drain_events()
        if error:
            self.notify(error, title="The evaluation stopped", severity="error", timeout=15)
        elif cancelled:
            self.notify("Cancelled: every finished attempt is kept; the summaries are marked incomplete",
                        severity="warning", timeout=8)
        elif self.store.stop_reason:
            self.notify(f"Stopped, {self.store.stop_reason}: the summaries are marked incomplete; Resume "
                        "continues", severity="warning", timeout=10)
        else:
            self.notify("Evaluation finished", timeout=5)
        self.screen.post_message(self.RunEnded(cancelled, error))

    def cancel_run(self, *, force: bool = False) -> None:
        run = self.current_run
        if run is None:
            self.notify("Nothing is running", severity="warning")
            return
        run.cancel(force=force)
        self.notify("Cancelling: the attempts in flight finish and are kept (cancel again to abandon them)"
                    if not force else "Abandoning the attempts in flight", severity="warning")

    def drain_events(self) -> None:
        """Apply the engine's pending events to the store in one batch, then tell the active screen once."""
        if not self._events:
            return
        batch = []
        pop = self._events.popleft
        while self._events:
            batch.append(pop())
        self.store.apply_many(batch)
        # The store keeps every record for the dashboard's lifetime: move them out of the cyclic collector's
        # generations, or each full collection walks them all and the screen stalls for up to a second.
        gc.freeze()
        self.screen.post_message(self.StoreUpdated())

    # -- history --------------------------------------------------------------------------------------------------
    def add_stored(self, evaluations: list[Any]) -> None:
        """Put evaluations read from disk beside the others (reading them in a worker)."""
        def load() -> None:
            problems = []
            for stored in evaluations:
                try:
                    self.call_from_thread(self.store.add_stored, stored)
                except InputError as exc:
                    problems.append(str(exc))
            for problem in problems:
                self.call_from_thread(self.notify, problem, severity="error", timeout=10)
            self.call_from_thread(lambda: self.screen.post_message(self.StoreUpdated()))
        self.run_worker(load, thread=True, group="history", name="open-history")

    # -- actions --------------------------------------------------------------------------------------------------
    def action_help(self) -> None:
        from hermit_tui.screens.help import HelpScreen
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_dark(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

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
        from hermit_tui.screens.threshold import ThresholdScreen

        def chosen(value: float | None) -> None:
            if value is None:
                return
            self.store.set_threshold(value)
            self.notify(f"Success threshold {value:g} in the views (the files keep hermit's 1.0)")
            self.screen.post_message(self.StoreUpdated())
        self.push_screen(ThresholdScreen(self.store.threshold), chosen)

    def action_export_report(self) -> None:
        """Write report.md, report.json and report.csv under <run dir>/reports/<UTC time>/ (in a worker)."""
        if self.config is None:
            self.notify("Open a config first", severity="warning")
            return
        config, taskset, threshold = self.config, self.taskset, self.store.threshold

        def export() -> None:
            from datetime import datetime, timezone

            from hermit_tui.core.records import write_atomic
            from hermit_tui.core.report import build_report, to_csv, to_json, to_markdown
            try:
                report = build_report(config, taskset, None, threshold=threshold)
                folder = config.run_dir / "reports" / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
                folder.mkdir(parents=True, exist_ok=False)
                for name, render in (("report.md", to_markdown), ("report.json", to_json), ("report.csv", to_csv)):
                    write_atomic(folder / name, render(report))
            except (InputError, OSError) as exc:
                self.call_from_thread(self.notify, str(exc), title="Report not written", severity="error")
                return
            self.call_from_thread(self.notify, f"Report written to {folder}", title="Report", timeout=10)
        self.run_worker(export, thread=True, exclusive=True, group="report", name="export-report")

    def goto(self, name: str, **kwargs: Any) -> None:
        """Show a screen by name (used by bindings and palette commands)."""
        from hermit_tui.screens import SCREENS
        if self.config is None and name not in ("picker", "help"):
            self.notify("Open a config first", severity="warning")
            return
        screen_cls = SCREENS[name]
        if isinstance(self.screen, screen_cls) and not kwargs:
            return
        self.push_screen(screen_cls(**kwargs))


def protocol_warnings(config, taskset) -> list[str]:
    """The protocol checks every summary view carries (test overlap, answers visible to training, grants...)."""
    from hermit_tui.core.protocol import protocol_checks
    return [check.message for check in protocol_checks(config, taskset)]


def run_app(config_path: Path | None = None, overrides: list[str] | None = None) -> int:
    HermitApp(config_path, overrides=overrides).run()
    return 0
