"""The launch's life in the dashboard, for :class:`~hermit_tui.dashboard.app.HermitApp`: a launch (or a chain of
them) run by the engine in a worker thread, its events drained into the store in batches, how it ended told once,
cancelling it, and quitting while it runs. A mixin of the app: what it reads of the app (the config, the store, its
StoreUpdated message) is declared here for the type checker only."""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.message import Message

from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.stats.sequential.anytime_looks import is_anytime
from hermit_tui.core.stats.sequential.anytime_text import finished_notice
from hermit_tui.core.stats.sequential.look import stopped_how
from hermit_tui.dashboard.support import start_resource_tracker

if TYPE_CHECKING:
    from collections import deque

    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import Config
    from hermit_tui.core.workspace.tasks import TaskSet
    from hermit_tui.dashboard.state.store import EvalStore


class Launching(App):
    """Launching, chaining, cancelling and quitting during a launch; draining the engine's events."""

    # handled as on_hermit_app_…, as every message of the app is (the namespace, not this mixin's name)
    class RunEnded(Message, namespace="hermit_app"):
        """The launch in progress finished or was cancelled."""

        def __init__(self, cancelled: bool, error: str | None = None):
            super().__init__()
            self.cancelled = cancelled
            self.error = error

    if TYPE_CHECKING:  # the app's, set in HermitApp.__init__
        StoreUpdated: type[Message]
        config: Config | None
        taskset: TaskSet | None
        store: EvalStore
        current_run: EvalRun | None
        quitting: bool
        abandoned: bool
        _events: deque[Any]
        _chain: list[LaunchOptions]
        _chain_labels: list[str]

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
