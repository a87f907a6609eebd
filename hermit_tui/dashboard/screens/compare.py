"""Two evaluations side by side with error bars: each one's mean with its clustered interval, solved rates, errors
and cost; their paired difference with its interval, test, transitions and power; the verdict; plots. The figures
(``dashboard/screens/compare_figures.py``) come from ``core.stats.figures``, computed in a worker thread and recomputed
as attempts stream in (at most once a second while a run is live)."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Header, Input, Label, Select, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from hermit_tui.core.stats.noise import DEFAULT_DELTA
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.screens.compare_figures import (
    METRICS,
    TRANSITION_NAMES,
    Comparison,
    compare_selectors,
    metric_texts,
    needed_text,
    num,
    pair_text,
    power_text,
    protocol_check,
    recorded_clusters,
    split_text,
    verdict_kind,
    with_pair,
)
from hermit_tui.dashboard.widgets import plots
from hermit_tui.dashboard.widgets.banners import Banners
from hermit_tui.dashboard.widgets.boundary import SequentialPanel, live_rounds, with_sequential
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.taxonomy import PairLabels
from hermit_tui.dashboard.widgets.textfield import TextField
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable

LIVE_THROTTLE_S = 1.0  # while a run is live, recompute at most this often
WIDE = 170  # columns from which the Numbers tab shows the means and differences plots beside the figures
TABS = [
    "tab-numbers",
    "tab-transitions",
    "tab-labels",
    "tab-power",
    "tab-scores",
    "tab-means",
    "tab-diffs",
    "tab-running",
]


class CompareScreen(HermitScreen[None]):
    """Any two evaluations of the store compared with error bars, paired statistics and plots."""

    CSS_PATH = [style("compare.tcss")]
    BINDINGS = bindings.COMPARE

    def __init__(self, a: str | None = None, b: str | None = None):
        super().__init__()
        self.a, self.b = a, b
        self.result: Comparison | None = None  # the latest figures (perhaps without the paired part yet)
        self.paired: Comparison | None = None  # the latest figures with the paired part
        self._computed: tuple | None = None  # (store version, a, b) of the figures being computed
        self._shown: tuple | None = None  # ... and of the figures on screen
        self._busy = False
        self._cluster_note: str | None = None  # why the figures are not clustered as the evaluations recorded
        self._last_start = 0.0
        self._timer: Timer | None = None
        self._keys: list[str] = []
        self._blank = False
        self._transition: str | None = None

    def compose(self) -> ComposeResult:
        self._keys = self.app.store.keys
        self._choose()
        options = [(k, k) for k in self._keys]
        blank = self._blank = len(options) < 2  # blank until there are two evaluations to choose from
        value_a: dict[str, Any] = {"value": self.a} if self.a is not None else {}
        value_b: dict[str, Any] = {"value": self.b} if self.b is not None else {}
        yield Header()
        yield Banners(id="compare-banners")
        yield Static(id="compare-protocol")
        with Horizontal(id="compare-bar"):
            yield Label("compare ", classes="muted")
            yield Select(options, id="select-a", compact=True, prompt="a", allow_blank=blank, **value_a)
            yield Label(" with ", classes="muted")
            yield Select(options, id="select-b", compact=True, prompt="b", allow_blank=blank, **value_b)
            yield Static("", id="compare-status")
        yield Static("computing…", id="verdict", classes="-neutral")
        with TabbedContent(id="compare-tabs"):
            with TabPane("Numbers", id="tab-numbers"), Horizontal(id="numbers-box"):
                with VerticalScroll(id="numbers"):
                    with Grid(id="numbers-grid"):
                        yield Static("", classes="metric-name")
                        yield Static("", id="head-a", classes="metric-head -a")
                        yield Static("", id="head-b", classes="metric-head -b")
                        for key, name in METRICS:
                            yield Static(name, classes="metric-name")
                            yield Static("", id=f"a-{key}", classes="metric")
                            yield Static("", id=f"b-{key}", classes="metric")
                    yield SequentialPanel(id="sequential")
                    yield Static("", id="pair-figures")
                    yield Static("", id="split-a", classes="split")
                    yield Static("", id="split-b", classes="split")
                with Vertical(id="numbers-plots"):  # on a wide terminal: the intervals and differences beside
                    yield plots.MeansPlot(id="side-means")
                    yield plots.DifferencesPlot(id="side-diffs")
            with TabPane("Transitions", id="tab-transitions"):
                with Horizontal(id="transitions-box"):
                    yield VirtualTable(id="transitions")
                    with Vertical(id="transition-side"):
                        yield Static("enter on a transition lists its tasks", id="transition-title")
                        yield VirtualTable(id="transition-tasks")
            with TabPane("Labels", id="tab-labels"):
                yield PairLabels(id="pair-labels")
            with TabPane("Power", id="tab-power"):
                with VerticalScroll(id="power"):
                    yield Static("", id="power-mde")
                    with Horizontal(id="delta-bar"):
                        yield Label("Detect a difference of ")
                        yield TextField(f"{DEFAULT_DELTA:g}", id="delta", compact=True)
                    yield Static("", id="power-needed")
            with TabPane("Scores", id="tab-scores"):
                yield plots.DistributionPlot(id="plot-scores")
            with TabPane("Means", id="tab-means"):
                yield plots.MeansPlot(id="plot-means")
            with TabPane("Differences", id="tab-diffs"):
                yield plots.DifferencesPlot(id="plot-diffs")
            with TabPane("Running", id="tab-running"):
                yield plots.RunningPlot(id="plot-running")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#transitions", VirtualTable).set_columns(
            [VColumn("name", "transition", 11), VColumn("n", "tasks", 5, "right"), VColumn("what", "", 6)]
        )
        self._sync_selects()
        self.refresh_from_store(now=True)
        self.query_one("#compare-tabs Tabs").focus()

    def on_screen_resume(self) -> None:
        self.refresh_from_store()

    def on_resize(self) -> None:
        self.query_one("#numbers-plots").display = self.app.size.width >= WIDE

    def focus_main(self) -> None:
        self.query_one("#compare-tabs Tabs").focus()

    def on_hermit_app_store_updated(self, message) -> None:
        self.refresh_from_store()

    # -- choosing the pair ----------------------------------------------------------------------------------------
    def _choose(self) -> None:
        """Keep the pair when the store has it, else take the first default pair."""
        from hermit_tui.core.stats.figures import default_pairs

        keys = self.app.store.keys
        pairs = default_pairs(keys)
        default = pairs[0] if pairs else (keys[0] if keys else None, None)
        if self.a not in keys:
            self.a = default[0]
        if self.b not in keys:
            self.b = default[1]

    def _sync_selects(self) -> None:
        """Offer the store's columns and show the pair."""
        keys = self.app.store.keys
        if keys != self._keys and (keys or self._blank):  # a Select without a blank option needs options
            self._keys = keys
            for select in self.query(Select):
                with select.prevent(Select.Changed):
                    select.set_options([(k, k) for k in keys])
        self._choose()
        for select, value in (
            (self.query_one("#select-a", Select), self.a),
            (self.query_one("#select-b", Select), self.b),
        ):
            if value is not None and select.value != value:
                with select.prevent(Select.Changed):
                    select.value = value

    def on_select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.BLANK else str(event.value)
        if event.select.id == "select-a":
            self.a = value
        else:
            self.b = value
        self.refresh_from_store(now=True)

    def action_swap(self) -> None:
        self.a, self.b = self.b, self.a
        self._sync_selects()
        self.refresh_from_store(now=True)

    # -- computing ------------------------------------------------------------------------------------------------
    def refresh_from_store(self, now: bool = False) -> None:
        """Banners at once; the figures in a worker, throttled while a run is live (``now``: a user's choice)."""
        store = self.app.store
        self._sync_selects()
        self.query_one(Banners).show_for(self.app, store)
        self._show_protocol()
        if self.a is None or self.b is None:
            self.query_one("#compare-status", Static).update("Two evaluations are needed to compare.")
            shown = len(store.keys)
            self.query_one("#verdict", Static).update(
                Text(
                    ("Only one evaluation is shown" if shown == 1 else "No evaluation is shown")
                    + ": launch two side by side from setup (escape, then l), or open earlier ones from history (h)."
                )
            )
            return
        self._show_labels()
        if (store.data_version, self.a, self.b) == self._computed:  # a label changed, not the records
            return
        wait = self._last_start + LIVE_THROTTLE_S - time.monotonic()
        # A user's choice starts at once; store updates wait for the computation in flight, and while a run is
        # live for a second since the last start.
        if not now and (self._busy or (store.run_active and wait > 0)):
            if self._timer is None:
                self._timer = self.set_timer(max(wait, LIVE_THROTTLE_S / 4), self._throttled)
            return
        self._start()

    def _throttled(self) -> None:
        self._timer = None
        self.refresh_from_store()

    def _start(self) -> None:
        store = self.app.store
        a, b = self.a, self.b
        if a is None or b is None:
            return
        # copied on the event loop (arrays: milliseconds), as the store changes under the worker
        records_a, records_b = store.columns[a].index.snapshot(), store.columns[b].index.snapshot()
        task_ids = list(store.task_ids)
        threshold = store.threshold
        summaries = (store.columns[a].summary, store.columns[b].summary)
        clusters, note = recorded_clusters(store.tasks, task_ids, summaries)
        if note != self._cluster_note:
            self._cluster_note = note
            self._show_protocol()
        live = live_rounds(store, a, b)
        key = self._computed = (store.data_version, a, b)
        self._busy = True
        self._last_start = time.monotonic()
        self.query_one("#compare-status", Static).update("computing…")

        def work() -> None:
            worker = get_current_worker()
            try:
                first = compare_selectors(a, records_a, b, records_b, task_ids, threshold, clusters)
                if worker.is_cancelled:
                    return
                self.app.call_from_thread(self._show, first, key)
                full = with_pair(first, records_a, records_b, task_ids, threshold, clusters)
                full = with_sequential(full, summaries, records_a, records_b, task_ids, live)
            except Exception as exc:  # a bug in a figure must not leave the screen waiting forever
                self.app.call_from_thread(self._failed, key, f"{type(exc).__name__}: {exc}")
                return
            if not worker.is_cancelled:
                self.app.call_from_thread(self._show, full, key)

        self.run_worker(work, thread=True, exclusive=True, group="compare", name="compare")

    def _failed(self, key: tuple, message: str) -> None:
        if key == self._computed:
            self._busy = False
            self.query_one("#compare-status", Static).update(Text(f"Cannot compute the figures: {message}"))

    # -- showing --------------------------------------------------------------------------------------------------
    def _show_protocol(self) -> None:
        kind, text = ("", "") if self.a is None or self.b is None else protocol_check(self.app.store, self.a, self.b)
        banner = self.query_one("#compare-protocol", Static)
        shown = ("! " if kind in ("mismatch", "unchecked") else "") + text
        if self._cluster_note:  # the recorded clusters could not be taken: the figures are not clustered as launched
            shown = (shown + "\n" if shown else "") + f"! {self._cluster_note}"
            kind = kind if kind in ("mismatch", "unchecked") else "unchecked"
        banner.display = bool(shown)
        for k in ("mismatch", "unchecked", "pending"):
            banner.set_class(kind == k, f"-{k}")
        banner.update(Text(shown))

    @property
    def up_to_date(self) -> bool:
        """The figures on screen are those of the store as it is now."""
        return self._shown == (self.app.store.data_version, self.a, self.b)

    def _show(self, r: Comparison, key: tuple) -> None:
        """Each selector's figures and the plots; then, once computed, the paired part."""
        if (r.a, r.b) != (self.a, self.b):
            return
        self.result = r
        self.query_one("#head-a", Static).update(Text(r.a))
        self.query_one("#head-b", Static).update(Text(r.b))
        for side, s in (("a", r.sa), ("b", r.sb)):
            for metric, text in metric_texts(s, r.facts[s.label]).items():
                self.query_one(f"#{side}-{metric}", Static).update(Text(text))
            self.query_one(f"#split-{side}", Static).update(Text(split_text(s)))
        self.query_one("#plot-scores", plots.DistributionPlot).show(r.histogram)
        self.query_one("#plot-means", plots.MeansPlot).show(
            [
                plots.MeanCI(s.label, s.mean, s.ci_low, s.ci_high, s.ci_method)
                for s in ((r.sa, r.sb) if r.a != r.b else (r.sa,))
            ]
        )
        self.query_one("#plot-diffs", plots.DifferencesPlot).show((r.a, r.b, r.diffs))
        self.query_one("#side-means", plots.MeansPlot).show(self.query_one("#plot-means", plots.MeansPlot).data)
        self.query_one("#side-diffs", plots.DifferencesPlot).show((r.a, r.b, r.diffs))
        self.query_one("#plot-running", plots.RunningPlot).show(r.running)
        status = self.query_one("#compare-status", Static)
        if r.pair is None:
            status.update("computing the paired comparison…")
            return
        if key == self._computed:
            self._busy = False
        self.paired, self._shown = r, key
        status.update("live: updating as attempts arrive" if self.app.store.run_active else "")
        verdict = self.query_one("#verdict", Static)
        kind = verdict_kind(r.pair.decision)
        for k in ("improvement", "regression", "neutral"):
            verdict.set_class(kind == k, f"-{k}")
        verdict.update(Text(r.pair.verdict))
        self.query_one("#pair-figures", Static).update(pair_text(r.pair))
        self.query_one(SequentialPanel).show(r.sequential)
        self._show_transitions(r)
        self._show_power()

    def _show_labels(self) -> None:
        """The failure taxonomy of a and b, and per label the tasks b fixed or introduced (cheap: on every update)."""
        from hermit_tui.dashboard.screens.annotate import progress_text

        store = self.app.store
        if self.a not in store.columns or self.b not in store.columns:
            return
        taxonomy = store.taxonomy()
        self.query_one(PairLabels).show(
            self.a, self.b, taxonomy, store.pair_taxonomy(self.a, self.b), store.label_set, progress_text(store)
        )

    def action_show_labels(self) -> None:
        self.query_one(TabbedContent).active = "tab-labels"

    def action_next_unlabelled(self) -> None:
        """The drill-down on the next failure that carries no label."""
        self.app.open_next_unlabelled()

    def _show_transitions(self, r: Comparison) -> None:
        table = self.query_one("#transitions", VirtualTable)
        if r.pair is None:
            return
        counts = r.pair.transition_counts
        rows = [(k, counts[k]) for k in TRANSITION_NAMES]
        table.set_columns(
            [
                VColumn("name", "transition", 11),
                VColumn("n", "tasks", 5, "right"),
                VColumn("what", f"{r.a} → {r.b}", max(6, len(r.a) + len(r.b) + 3)),
            ]
        )
        table.set_rows(
            rows,
            lambda row, col: (
                TRANSITION_NAMES[row[0]][0]
                if col == "name"
                else str(row[1])
                if col == "n"
                else TRANSITION_NAMES[row[0]][1]
            ),
            key=lambda row: row[0],
        )
        if self._transition is not None:
            self._list_tasks(self._transition)

    def _list_tasks(self, kind: str) -> None:
        r = self.paired
        if r is None or r.pair is None:
            return
        self._transition = kind
        tasks = r.pair.transitions.get(kind, [])
        name = TRANSITION_NAMES[kind][0]
        self.query_one("#transition-title", Static).update(
            Text.assemble(
                (f"{name}: {len(tasks)} task{'s' * (len(tasks) != 1)}", "bold"), "   enter opens one" if tasks else ""
            )
        )
        table = self.query_one("#transition-tasks", VirtualTable)
        pa, pb = r.sa.per_task, r.sb.per_task

        def render(tid: str, col: str) -> str:
            if col == "task":
                return tid
            if col == "a":
                return num(pa[tid].mean)
            if col == "b":
                return num(pb[tid].mean)
            return f"{pb[tid].mean - pa[tid].mean:+.3f}"

        table.set_columns(
            [
                VColumn("task", "task", None),
                VColumn("a", r.a, max(5, len(r.a)), "right"),
                VColumn("b", r.b, max(5, len(r.b)), "right"),
                VColumn("d", "Δ", 6, "right"),
            ]
        )
        table.set_rows(tasks, render, key=lambda tid: tid)

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        if event.table.id == "transitions" and event.row[0] != self._transition:
            self._list_tasks(event.row[0])

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        event.stop()
        if event.table.id == "transitions":
            self._list_tasks(event.row[0])
            self.query_one("#transition-tasks", VirtualTable).focus()
        elif event.table.id == "transition-tasks":
            self.app.goto("attempt", task_id=event.row)

    def _show_power(self) -> None:
        r = self.paired
        if r is None or r.pair is None:
            return
        self.query_one("#power-mde", Static).update(Text(power_text(r.pair)))
        raw = self.query_one("#delta", Input).value.strip()
        try:
            delta = abs(float(raw))
        except ValueError:
            delta = 0.0
        self.query_one("#power-needed", Static).update(
            Text(needed_text(r, delta) if delta > 0 else "Enter a difference greater than 0 (e.g. 0.05).")
        )

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "delta":
            self._show_power()

    # -- actions --------------------------------------------------------------------------------------------------
    def _tab(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        i = TABS.index(tabs.active) if tabs.active in TABS else 0
        tabs.active = TABS[(i + step) % len(TABS)]

    def action_next_tab(self) -> None:
        self._tab(1)

    def action_prev_tab(self) -> None:
        self._tab(-1)

    def action_review(self) -> None:
        self.app.goto("review")

    def action_why(self) -> None:
        """Changes: the adapter's diff between a and b beside the tasks the pair fixed, broke or made flaky."""
        if self.a is None or self.b is None:
            self.notify("Choose two selectors first", severity="warning")
            return
        self.app.goto("changes", a=self.a, b=self.b)

    def action_slices(self) -> None:
        """Slices: the pair's figures per slice of the test tasks (a field of the task rows), adjusted over them."""
        if self.a is None or self.b is None:
            self.notify("Choose two selectors first", severity="warning")
            return
        self.app.goto("slices", a=self.a, b=self.b)

    def action_history(self) -> None:
        self.app.goto("history")

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["CompareScreen"]
