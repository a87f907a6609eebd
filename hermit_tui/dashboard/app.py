"""The dashboard application. It only coordinates: it owns the store and the engine's workers, and moves between
screens; what each screen shows lives in ``dashboard/screens/``, reusable pieces in ``dashboard/widgets/``."""

from __future__ import annotations

import gc
import os
from collections import deque
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.worker import get_current_worker

from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.safe import line, terminal
from hermit_tui.core.stats.anytime_looks import finished_notice, is_anytime
from hermit_tui.core.stats.looks import stopped_how
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.palette import HermitCommands
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.state.store import EvalStore
from hermit_tui.dashboard.support import (
    BEAT_S,
    Pacer,
    current_evaluations,
    guard_terminal,
    protocol_warnings,
    start_resource_tracker,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import ThreadPoolExecutor

    from textual.dom import DOMNode
    from textual.timer import Timer
    from textual.worker import Worker

    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import Config
    from hermit_tui.core.workspace.tasks import TaskSet

DRAIN_INTERVAL_S = 0.1  # engine events are applied to the store and repainted in batches at this pace
WALK_WORKER_THRESHOLD = 20_000  # attempts from which the triage walk is computed in a worker thread


class HermitApp(App):
    """hermit-tui: none/root/final side by side, attempts streaming in, drill-down, history."""

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

    class AnnotationSaved(Message):
        """An annotation change reached (or could not reach) its annotations.jsonl (posted from the writer thread)."""

        def __init__(self, store: EvalStore, key: str, folder: Path, result: Any, generation: int = 0):
            super().__init__()
            self.store, self.key, self.folder, self.result = store, key, folder, result
            self.generation = generation  # the store's generation when the change was made

    class RunEnded(Message):
        """The launch in progress finished or was cancelled."""

        def __init__(self, cancelled: bool, error: str | None = None):
            super().__init__()
            self.cancelled = cancelled
            self.error = error

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

    # -- launching ------------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.current_run is not None

    def launch(self, options: LaunchOptions) -> None:
        """Evaluate ``options.selectors`` side by side in a worker thread (or re-run only the given failed attempts,
        or continue interrupted evaluations; see ``core.run.launch.LaunchOptions``). The dashboard never publishes by
        itself: CARD.md and the final tag move only through Review & publish (a typed confirmation, and undo); the
        headless `hermit-tui eval` keeps hermit's card update."""
        if self.config is None:
            self.notify("Open a config first", severity="warning")
            return
        if self.running:
            self.notify("An evaluation is already running: cancel it first (c)", severity="warning")
            return
        if options.executor == "processes":
            start_resource_tracker()
        update: dict[str, Any] = {"update_card": False}
        if options.executor == "ray" and options.ray_address is None:
            update["ray_address"] = os.environ.get("RAY_ADDRESS") or None
        options = options.model_copy(update=update)
        config = self.config
        self.run_worker(
            lambda: self._run(config, options), thread=True, exclusive=True, group="eval", name="evaluation"
        )

    def launch_chain(self, launches: list[LaunchOptions]) -> None:
        """Several launches one after the other (failures re-run in evaluations measured with different repeats:
        one launch per protocol). The view keeps every selector of the chain; a cancel or an error stops it."""
        if not launches:
            return
        if self.running:
            self.notify("An evaluation is already running: cancel it first (c)", severity="warning")
            return
        self._chain = list(launches[1:])
        self._chain_labels = [label for options in launches for label in options.retry] if len(launches) > 1 else []
        if self._chain:
            self.notify(f"{len(launches)} launches, one after the other (each with its own repeats)", timeout=5)
        self.launch(launches[0])

    def _run(self, config: Config, options: LaunchOptions) -> None:
        from hermit_tui.core.run.runner import EvalRun

        try:
            run = EvalRun(config, options, on_event=self._events.append, tasks=self.taskset)
        except InputError as exc:
            left = len(self._chain)
            self._chain, self._chain_labels = [], []
            after = f" (and the {left} launch{'es' * (left != 1)} after it not started)" if left else ""
            self.call_from_thread(self.notify, f"{exc}{after}", title="Cannot launch", severity="error", timeout=10)
            return
        self.current_run = run
        self.call_from_thread(self._show_run, run)
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

    def _show_run(self, run: EvalRun | None = None) -> None:
        from hermit_tui.dashboard.screens.run import RunScreen

        if run is not None:  # the view is what this launch runs, from its first frame
            self.drain_events()  # anything of an earlier launch first
            plan = run.plan
            keep = self._chain_labels  # a chain's earlier launches stay in the view
            self.store.begin_launch(plan.labels, len(plan.task_ids) * plan.repeats, plan.repeats, keep=keep)
            self.screen.post_message(self.StoreUpdated())
        if not isinstance(self.screen, RunScreen):
            self.push_screen(RunScreen())

    def _run_screen_shown(self) -> bool:
        """The live run is on screen: its status line says how the launch ended, with no toast over its log."""
        from hermit_tui.dashboard.screens.run import RunScreen

        return isinstance(self.screen, RunScreen)

    def _run_ended(self, cancelled: bool, error: str | None) -> None:
        self.drain_events()
        if self.quitting:
            self.exit()
            return
        if error:
            self.notify(error, title="The evaluation stopped", severity="error", timeout=15)
        elif cancelled:
            self.notify(
                "Cancelled: every finished attempt is kept; the summaries are marked incomplete",
                severity="warning",
                timeout=8,
            )
        elif self.store.stop_reason:
            self.notify(
                f"Stopped, {self.store.stop_reason}: the summaries are marked incomplete; Resume continues",
                severity="warning",
                timeout=10,
            )
        elif self.store.sequential is not None and is_anytime(self.store.sequential):
            looks = [v[-1] for v in self.store.sequential_looks.values() if v]
            self.notify(finished_notice(self.store.sequential, looks, self.store.sequential_stopped), timeout=8)
        elif self.store.sequential is not None:
            looks = [v[-1] for v in self.store.sequential_looks.values() if v]
            rounds = max((look.rounds for look in looks), default=0)
            decided = ", ".join(f"{look.candidate} {look.decision}" for look in looks)
            self.notify(
                f"{stopped_how(lk.decision for lk in looks).capitalize()} after "
                f"round {rounds} of {self.store.sequential.max_rounds}: {decided}"
                if self.store.sequential_stopped
                else f"Evaluation finished: all {rounds} rounds, {decided} against {self.store.sequential.baseline}",
                timeout=8,
            )
        elif not self._chain and not self._run_screen_shown():  # the run screen says "finished" itself
            self.notify("Evaluation finished", timeout=5)
        self.screen.post_message(self.RunEnded(cancelled, error))
        if self._chain and not (cancelled or error or self.store.stop_reason):
            self.launch(self._chain.pop(0))  # the next launch of a chain
        else:
            self._chain, self._chain_labels = [], []

    def cancel_run(self, *, force: bool = False, quiet: bool = False) -> None:
        run = self.current_run
        if run is None:
            if not quiet:
                self.notify("Nothing is running", severity="warning")
            return
        run.cancel(force=force)
        self.abandoned = self.abandoned or force
        if not quiet:
            self.notify(
                "Cancelling: the attempts in flight finish and are kept (cancel again to abandon them)"
                if not force
                else "Abandoning the attempts in flight",
                severity="warning",
            )

    def cancel_or_abandon(self) -> None:
        """Cancel the launch; asked again while it is cancelling, abandon the attempts in flight."""
        run = self.current_run
        self.cancel_run(force=run is not None and run.cancel_requested)

    # -- quitting -------------------------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """Quit; during a launch, ask first (cancel it and quit, cancel it and stay, or keep it running)."""
        from hermit_tui.dashboard.screens.dialogs.quit import QuitScreen, StoppingScreen

        if self.quitting:
            if isinstance(self.screen, StoppingScreen):
                self.screen.action_abandon()
            return
        if not self.running:
            self.exit()
            return
        if isinstance(self.screen, QuitScreen):
            return
        self.push_screen(QuitScreen(), self._quit_chosen)

    def _quit_chosen(self, choice: str | None) -> None:
        from hermit_tui.dashboard.screens.dialogs.quit import StoppingScreen

        if choice == "cancel":
            self.cancel_run()
        elif choice == "quit":
            if not self.running:
                self.exit()
                return
            self.quitting = True
            self.cancel_run(quiet=True)
            self.push_screen(StoppingScreen())

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

    # -- triage annotations ---------------------------------------------------------------------------------------
    def annotate(self, key: str, task_id: str, repeat: int, change) -> None:
        """Apply ``change`` (core.records.annotations.Change) to one attempt: appended to its evaluation's
        annotations.jsonl on the annotation thread (in order), then put in the store. A column with no folder keeps it
        in memory."""
        self.annotate_many([(key, task_id, repeat, change)])

    def annotate_many(self, changes: list[tuple[str, str, int, Any]], undoable: str | None = None) -> int:
        """Apply each (column, task, repeat, Change); one write per evaluation (core.records.annotations
        .update_annotations: one lock, one append). ``undoable`` names a bulk change: the attempts' annotations
        before it are kept, and ``undo_bulk`` (U) puts them back. Returns how many attempts were changed."""
        from hermit_tui.core.records.annotations import attempt_digest

        store = self.store
        per: dict[str, list[tuple[Any, Any]]] = {}
        before: list[tuple[str, str, int, Any]] = []
        for key, task_id, repeat, change in changes:
            col = store.columns.get(key)
            rec = col.records.get((task_id, repeat)) if col is not None else None
            if col is None or rec is None:
                self.notify(f"No attempt {key} · {task_id} · repeat {repeat} to annotate", severity="warning")
                continue
            before.append((key, task_id, repeat, col.annotation(task_id, repeat)))
            if col.folder is None:
                store.put_annotation(key, change.apply(col.annotation(task_id, repeat), rec.key, attempt_digest(rec)))
            else:
                per.setdefault(key, []).append((rec, change))
        if undoable is not None and before:
            self.bulk_undo = (undoable, before)
        if len(per) < len({k for k, *_ in before}):  # some columns kept it in memory
            self.screen.post_message(self.StoreUpdated())
        if not per:
            return len(before)
        if self._annotation_writer is None:
            from concurrent.futures import ThreadPoolExecutor

            self._annotation_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="annotations")
        generation = store.generation
        for key, items in per.items():
            folder = store.columns[key].folder
            self.annotations_pending += 1

            def write(key: str = key, folder: Any = folder, items: list = items) -> None:
                from hermit_tui.core.records.annotations import update_annotations

                try:
                    _, read = update_annotations(folder, items)
                    result: Any = read
                except InputError as exc:
                    result = exc
                except Exception as exc:  # a failed write must not take the dashboard down
                    result = InputError(f"{folder}: {type(exc).__name__}: {exc}")
                self.post_message(self.AnnotationSaved(store, key, folder, result, generation))  # never blocks

            self._annotation_writer.submit(write)
        return len(before)

    def undo_bulk(self) -> None:
        """Put back the annotations the last bulk label changed (core.records.annotations.restoring), or say there
        is none to undo."""
        from hermit_tui.core.records.annotations import restoring

        if self.bulk_undo is None:
            self.notify("No bulk label to undo", severity="warning", timeout=4)
            return
        what, before = self.bulk_undo
        self.bulk_undo = None
        n = self.annotate_many([(key, task, repeat, restoring(prev)) for key, task, repeat, prev in before])
        self.notify(f"Undone: {what} ({n} attempt{'s' * (n != 1)} as they were)", timeout=5)

    def on_hermit_app_annotation_saved(self, message: AnnotationSaved) -> None:
        store, key, folder, result = message.store, message.key, message.folder, message.result
        self.annotations_pending -= 1
        if isinstance(result, InputError):
            self.notify(str(result), title="Annotation not saved", severity="error", timeout=10)
            return
        col = store.columns.get(key)
        current = store is self.store and store.generation == message.generation
        if current and col is not None and col.folder == folder:
            store.set_annotations(key, result.entries)
            self.screen.post_message(self.StoreUpdated())

    def edit_label_set(self) -> None:
        """The label set dialog; the new set goes to the settings file (per run) and the store."""
        from hermit_tui.dashboard.screens.annotate import LabelSetScreen

        where = f" for {self.config.run_dir}" if self.config is not None else ""

        def chosen(labels: list[str] | None) -> None:
            if labels is None:
                return
            if self.config is not None:
                from hermit_tui.settings import remember_label_set

                remember_label_set(self.config.run_dir, labels)
            self.store.set_label_set(labels)
            self.notify(f"Label set: {', '.join(f'{i} {n}' for i, n in enumerate(labels, start=1))}", timeout=5)
            self.screen.post_message(self.StoreUpdated())

        self.push_screen(LabelSetScreen(self.store.label_set, where), chosen)

    def open_next_unlabelled(self) -> None:
        """The drill-down on the first unlabelled failure of the triage walk (from screens without attempts)."""
        self.next_unlabelled(None, lambda f: self.goto("attempt", task_id=f.task_id, key=f.key, repeat=f.repeat), self)

    def next_unlabelled(self, after, show, where) -> None:
        """Show the next unlabelled failure after ``after`` (dashboard/screens/annotate.next_unlabelled). On a large
        store whose walk must be computed again, that is done in a worker thread first (half a second at 100,000
        attempts)."""
        from hermit_tui.dashboard.screens.annotate import next_unlabelled

        store, generation = self.store, self.store.generation
        if store.walk_ready() or sum(c.done for c in store.columns.values()) < WALK_WORKER_THRESHOLD:
            next_unlabelled(where, after, show)
            return

        def work() -> None:
            for _ in range(5):  # a batch of a live run may change the store meanwhile: try again
                try:
                    store.failure_walk()
                    break
                except RuntimeError:
                    continue
            if not get_current_worker().is_cancelled and store is self.store and store.generation == generation:
                self.call_from_thread(next_unlabelled, where, after, show)

        self.run_worker(work, thread=True, exclusive=True, group="triage-walk", name="triage-walk")

    async def triage(self, action: str) -> None:
        """A triage action from the palette: on the current screen when it has a chosen attempt (drill-down,
        per-task table, errors), else on the per-task table."""
        from hermit_tui.dashboard.screens.annotate import Triage

        if isinstance(self.screen, Triage):
            await self.screen.run_action(action)
        elif action == "next_unlabelled":
            self.open_next_unlabelled()
        else:
            await self.run_on("tasks", action)

    def flush_annotations(self) -> None:
        """Wait until every annotation change made is on disk (at exit)."""
        if self._annotation_writer is not None:
            self._annotation_writer.shutdown(wait=True)
            self._annotation_writer = None

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
