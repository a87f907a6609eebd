"""The live run: a progress bar per selector, the tasks × selectors grid, and the event log. A launch never publishes:
when final has finished, the screen offers Review & publish (p)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Header, RichLog, Static

from hermit_tui.core.present import cost_phrase, money
from hermit_tui.core.stats.sequential.look import stopped_how
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.widgets.attempt_grid import ERROR, JUDGE_ERROR, PENDING, AttemptGrid
from hermit_tui.dashboard.widgets.banners import Banners
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.selector_progress import SelectorProgress
from hermit_tui.dashboard.widgets.static_text import show_text

LEGEND = (
    f"● solved  ◐ partial  ○ failed  [b]{ERROR}[/b] pipeline error  [b]{JUDGE_ERROR}[/b] judge error  "
    f"{PENDING} pending   (one mark per repeat)"
)


def cost_line(store, running: bool) -> Text:
    """The launch's cost: so far, projected at the end, unknown ones; the --max-cost cap and why it stopped."""
    known, unknown, done, expected = store.live_cost()
    text = Text.assemble(("cost ", "bold"), cost_phrase(known, unknown, done, expected, running=running))
    if store.stop_reason and not running:
        cap = f" of {money(store.max_cost)}" if store.max_cost is not None else ""
        text.append(f"  ·  stopped at the max cost{cap}: Resume continues", style="bold yellow")
    elif store.max_cost is not None:
        text.append(f"  ·  stops at {money(store.max_cost)} (max cost)", style="yellow")
    return text


class RunScreen(HermitScreen[None]):
    CSS_PATH = [style("run.tcss")]
    BINDINGS = bindings.RUN

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._log_seen = 0
        self._bars: dict[str, SelectorProgress] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banners(id="run-banners")
        yield Static("", id="run-status")
        yield Static("", id="run-cost")
        yield Static("", id="run-offer")
        yield Vertical(id="run-progress")
        yield Static(LEGEND, id="run-legend", classes="muted")
        yield AttemptGrid(self.app.store, id="run-grid")
        log = RichLog(id="run-log", max_lines=2000, wrap=True, markup=False)
        log.border_title = "launch log"
        log.display = False
        yield log
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_from_store()
        self.query_one(AttemptGrid).focus()

    def on_screen_resume(self) -> None:
        self.query_one(AttemptGrid).show(self.app.store)
        self._log_seen = 0
        self.query_one(RichLog).clear()
        self.refresh_from_store()

    def on_hermit_app_store_updated(self, message) -> None:
        self.refresh_from_store()

    def on_hermit_app_run_ended(self, message) -> None:
        self.refresh_from_store()
        self.refresh_bindings()  # nothing left to cancel: c leaves the footer

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Cancel is offered while a launch runs, not after it ended (or before one started)."""
        if action == "cancel":
            return self.app.running
        return True

    def refresh_from_store(self) -> None:
        store = self.app.store
        self.query_one(Banners).show_for(self.app, store)
        holder = self.query_one("#run-progress", Vertical)
        for key, col in store.columns.items():
            bar = self._bars.get(key)
            if bar is None:
                bar = self._bars[key] = SelectorProgress(key)
                bar.show(col)  # kept until the row is mounted
                holder.mount(bar)
            else:
                bar.show(col)
        for key in [k for k in self._bars if k not in store.columns]:
            self._bars.pop(key).remove()
        running = self.app.running
        live = [c for c in store.columns.values() if c.source == "live"]  # the launch; the others were added
        done = sum(c.done for c in live)
        expected = sum(c.expected for c in live)
        if running or live:
            state = (
                "running"
                if running
                else "cancelled"
                if store.run_cancelled
                else "stopped at the max cost"
                if store.stop_reason
                else stopped_how(v[-1].decision for v in store.sequential_looks.values() if v)
                if store.sequential_stopped
                else "finished"
            )
            status = (
                f"[b]{state}[/b]  {done}/{expected} attempts  ·  {len(store.task_ids)} tasks × "
                f"{len(live)} selectors × {store.repeats} repeats"
            )
            added = len(store.columns) - len(live)
            if added:
                status += f"  ·  +{added} added from disk (History: x takes out)"
        else:
            status = "[b]nothing launched yet[/b]: go to setup (s) and launch (l)" + (
                f"  ·  showing {len(store.columns)} evaluations read from disk" if store.columns else ""
            )
        show_text(self.query_one("#run-status", Static), status)  # one line each: repainted, never laid out
        show_text(self.query_one("#run-cost", Static), cost_line(store, running))
        self._show_offer(store)
        self.query_one(AttemptGrid).sync()
        log = self.query_one(RichLog)
        for level, message in store.log[self._log_seen :]:
            prefix = {"warning": "! ", "error": "✗ "}.get(level, "· ")
            log.write(prefix + message)
        self._log_seen = len(store.log)
        log.display = bool(store.log)  # an empty box said nothing: shown once the launch has logged a line

    def _show_offer(self, store) -> None:
        """Once final's launch has finished complete: nothing was published, Review & publish is one key away."""
        final = store.columns.get("final")
        s = final.summary if final is not None else None
        ready = (
            final is not None
            and final.source == "live"
            and not final.running
            and s is not None
            and s.is_complete
            and not s.cancelled
            and not s.is_smoke
        )
        offer = self.query_one("#run-offer", Static)
        offer.display = ready
        if ready:
            tag = f"{self.app.config.run_name}/final" if self.app.config is not None else "the final tag"
            offer.update(
                Text.assemble(
                    ("final finished", "bold"),
                    f" · CARD.md and {tag} untouched · ",
                    ("Review & publish: p", "bold reverse"),
                )
            )

    # -- actions --------------------------------------------------------------------------------------------------
    def action_review(self) -> None:
        self.app.goto("review")

    def action_cancel(self) -> None:
        self.app.cancel_or_abandon()

    def action_tasks(self) -> None:
        self.app.goto("tasks")

    def action_errors(self) -> None:
        self.app.goto("errors")

    def action_compare(self) -> None:
        self.app.goto("compare")

    def action_setup(self) -> None:
        self.app.goto("setup")

    def action_history(self) -> None:
        self.app.goto("history")

    def action_drill(self) -> None:
        self.query_one(AttemptGrid).action_select()

    def on_attempt_grid_task_selected(self, message: AttemptGrid.TaskSelected) -> None:
        self.app.goto("attempt", task_id=message.task_id)
