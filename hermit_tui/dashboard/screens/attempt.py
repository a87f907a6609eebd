"""The drill-down: one task's input fields, every attempt under every selector (a tab each), two selectors'
outputs side by side with their differences highlighted, and the attempts' transcripts
(dashboard/widgets/transcript_view). Each attempt is a card (dashboard/widgets/attempt_card); its log opens over the
screen (screens/dialogs/log)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import Header, Label, Select, Static, TabbedContent, TabPane

from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.safe import line as one_line
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.annotate import Triage, annotation_text, keys_text, progress_text
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.screens.dialogs.log import LogScreen, read_tail
from hermit_tui.dashboard.state.store import Failure
from hermit_tui.dashboard.widgets.attempt_card import AttemptCard, fields_grid, output_text, pretty
from hermit_tui.dashboard.widgets.diff_view import DiffView
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.transcript_view import TranscriptPanel

SIDE = "side"
TRANSCRIPT = "transcript-pane"


# -- the screen -------------------------------------------------------------------------------------------------------
class AttemptScreen(Triage, HermitScreen[None]):
    """A task and its attempts. ``key``/``repeat`` open that selector's tab scrolled to that attempt. The triage
    keys (1-9, 0, n, u) act on the focused attempt."""

    CSS_PATH = [style("attempt.tcss")]
    BINDINGS = bindings.ATTEMPT

    def __init__(self, task_id: str, key: str | None = None, repeat: int | None = None, tab: str | None = None):
        super().__init__()
        self.task_id, self.key, self.repeat = task_id, key, repeat
        self.tab = tab  # "side": open on the side-by-side tab
        self._panes: dict[str, str] = {}  # column key -> tab pane id
        self._seen: dict[str, tuple] = {}  # column key -> what its tab shows (to rebuild only what changed)
        self._attempt_cache: dict[str, tuple[tuple, list[AttemptRecord]]] = {}
        self._side_keys: list[str] = []
        self._side_repeats: list[int] = []
        self._count = 0

    @property
    def store(self):
        return self.app.store

    def _pane_id(self, key: str) -> str:
        if key not in self._panes:
            self._panes[key] = f"sel-{self._count}"
            self._count += 1
        return self._panes[key]

    def compose(self) -> ComposeResult:
        keys = self.store.keys
        for key in keys:
            self._pane_id(key)
        initial = (
            self._pane_id(self.key)
            if self.key is not None and self.key in keys
            else self._pane_id(keys[0])
            if keys
            else SIDE
        )
        if self.tab == SIDE:
            initial = SIDE
        yield Header()
        yield Static(id="attempt-title")
        yield Static(id="attempt-keys")
        with VerticalScroll(id="attempt-task"):
            yield Static(id="attempt-task-fields")
        with TabbedContent(id="attempt-tabs", initial=initial):
            for key in keys:
                with TabPane(Content(key), id=self._pane_id(key)):
                    with VerticalScroll(id=f"{self._pane_id(key)}-list", classes="attempt-list"):
                        yield from self._cards(key)
            with TabPane("Side by side", id=SIDE):
                with Horizontal(id="side-controls"):
                    yield Select([], id="side-left", compact=True, prompt="left")
                    yield Label("vs", classes="muted")
                    yield Select([], id="side-right", compact=True, prompt="right")
                    yield Select([], id="side-repeat", compact=True, prompt="repeat")
                yield DiffView(id="side-diff")
            with TabPane("Transcript", id=TRANSCRIPT):
                yield TranscriptPanel(self._lookup, id="transcript")
        yield Footer()

    async def on_mount(self) -> None:
        await self.refresh_from_store()
        if self.key in self._panes:
            self.call_after_refresh(self._reveal)

    async def on_screen_resume(self) -> None:
        await self.refresh_from_store()

    async def on_hermit_app_store_updated(self, message) -> None:
        await self.refresh_from_store()

    def _reveal(self) -> None:
        """Focus (and scroll to) the attempt this screen was opened on."""
        cards = [c for c in self.query(AttemptCard) if c.key == self.key]
        card = next((c for c in cards if c.record.repeat == self.repeat), cards[0] if cards else None)
        if card is not None:
            card.focus(scroll_visible=False)
            card.scroll_visible(top=True, animate=False)

    # -- refreshing -----------------------------------------------------------------------------------------------
    async def refresh_from_store(self) -> None:
        store = self.store
        self._show_task()
        tabs = self.query_one(TabbedContent)
        for key in [k for k in self._panes if k not in store.columns]:
            await tabs.remove_pane(self._panes.pop(key))
            self._seen.pop(key, None)
            self._attempt_cache.pop(key, None)
        for key in store.columns:
            pane = self._pane_id(key)
            if not self.query(f"#{pane}"):
                await tabs.add_pane(
                    TabPane(Content(key), VerticalScroll(id=f"{pane}-list", classes="attempt-list"), id=pane),
                    before=SIDE,
                )
            if self._seen.get(key) == self._signature(key):
                continue
            holder = self.query_one(f"#{pane}-list", VerticalScroll)
            await holder.remove_children()
            await holder.mount_all(self._cards(key))
        for card in self.query(AttemptCard):
            card.show_annotation(self._annotation_text(card.key, card.record))
        self._sync_side()
        self._sync_transcript()

    def _annotation_text(self, key: str, rec: AttemptRecord) -> Text:
        col = self.store.columns.get(key)
        if col is None:
            return Text()
        return annotation_text(
            col.annotation(rec.id, rec.repeat), rec.judge.score, col.stale_annotation(rec.id, rec.repeat)
        )

    def _attempts(self, key: str) -> list[AttemptRecord]:
        """This task's attempts under column ``key``. A live column is read by key (one lookup per repeat), a
        finished one is scanned again only when it changed: a batch of a long live run stays cheap."""
        col = self.store.columns[key]
        stamp = (id(col), col.done)
        cached = self._attempt_cache.get(key)
        if cached is not None and cached[0] == stamp and all(col.records.get(r.key) is r for r in cached[1]):
            return cached[1]
        if col.running and cached is not None and cached[0][0] == id(col):
            reps = sorted(set(range(1, self.store.repeats + 1)) | {r.repeat for r in cached[1]})
            found = [col.records.get((self.task_id, r)) for r in reps]
            attempts = [rec for rec in found if rec is not None]
        else:
            attempts = col.attempts_of(self.task_id)
        self._attempt_cache[key] = (stamp, attempts)
        return attempts

    def _signature(self, key: str) -> tuple:
        return tuple((r.repeat, id(r)) for r in self._attempts(key))

    def _cards(self, key: str) -> list[Widget]:
        """One card per attempt of this task under ``key`` (remembering what was shown)."""
        col, pane = self.store.columns[key], self._pane_id(key)
        attempts = self._attempts(key)
        self._seen[key] = self._signature(key)
        if not attempts:
            return [Static(Text(f"No attempt of {self.task_id} under {key} yet."), classes="muted")]
        return [
            AttemptCard(
                key,
                r,
                col.tracebacks.get((self.task_id, r.repeat)),
                id=f"{pane}-r{r.repeat}",
                annotation=self._annotation_text(key, r),
            )
            for r in attempts
        ]

    def _show_task(self) -> None:
        store = self.store
        attempts = [r for key in store.columns for r in self._attempts(key)]
        failed = sum(r.status != "ok" for r in attempts)
        title = Text.assemble(
            ("Task ", "bold"),
            (one_line(self.task_id), "bold"),
            f"   {len(attempts)} attempts under {len(store.columns)} selectors"
            + (f" · {failed} failed" if failed else ""),
            ("   " + progress_text(store), "dim"),
            no_wrap=True,
            overflow="ellipsis",
        )
        self.query_one("#attempt-title", Static).update(title)
        keys = keys_text(store.label_set)
        keys.append("   0 clear · n note · u next unlabelled · shift+l edit", style="dim")
        self.query_one("#attempt-keys", Static).update(keys)
        row = store.tasks.get(self.task_id)
        fields = (
            fields_grid([(one_line(k), pretty(v)) for k, v in row.items()])
            if row is not None
            else Text(
                "The task row is not loaded (open the config that names its tasks to see its fields).", style="italic"
            )
        )
        self.query_one("#attempt-task-fields", Static).update(fields)

    # -- side by side ---------------------------------------------------------------------------------------------
    def _default_pair(self) -> tuple[str, str]:
        keys = self.store.keys
        a = self.store.baseline if self.store.baseline in keys else keys[0]
        b = keys[-1] if keys[-1] != a else keys[0]
        return a, b

    def _repeats(self) -> list[int]:
        reps = {r.repeat for key in self.store.columns for r in self._attempts(key)}
        return sorted(reps) or list(range(1, self.store.repeats + 1))

    def _sync_side(self) -> None:
        keys = self.store.keys
        left, right = self.query_one("#side-left", Select), self.query_one("#side-right", Select)
        rep = self.query_one("#side-repeat", Select)
        if keys != self._side_keys:
            pair = (left.selection, right.selection)
            if pair[0] not in keys or pair[1] not in keys:
                pair = self._default_pair() if keys else (None, None)
            self._side_keys = list(keys)
            for select, value in ((left, pair[0]), (right, pair[1])):
                with select.prevent(Select.Changed):
                    select.set_options([(Content(k), k) for k in keys])
                    if value is not None:
                        select.value = value
        repeats = self._repeats()
        if repeats != self._side_repeats:
            self._side_repeats = repeats
            current = rep.selection
            wanted = current if current in repeats else self.repeat if self.repeat in repeats else repeats[0]
            with rep.prevent(Select.Changed):
                rep.set_options([(f"repeat {r}", r) for r in repeats])
                rep.value = wanted
        self._update_diff()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self._update_diff()

    def _side(self, key: Any, repeat: int | None) -> tuple[str, str]:
        col = self.store.columns.get(key) if isinstance(key, str) else None
        if col is None:
            return "", "(choose a selector)"
        rec = col.records.get((self.task_id, repeat))
        if rec is None:
            return f"{key} · repeat {repeat}", output_text(None)
        return f"{key} · repeat {repeat} · {rec.status} · score {rec.judge.score:.3f}", output_text(rec)

    def _update_diff(self) -> None:
        a = self.query_one("#side-left", Select).selection
        b = self.query_one("#side-right", Select).selection
        rep = self.query_one("#side-repeat", Select).selection
        (ta, xa), (tb, xb) = self._side(a, rep), self._side(b, rep)
        self.query_one(DiffView).compare(xa, xb, ta, tb)

    def _cycle(self, step: int) -> None:
        keys = self.store.keys
        if len(keys) < 2:
            self.notify("Only one selector: nothing to put side by side", severity="warning")
            return
        pairs = list(combinations(keys, 2))
        current = {self.query_one("#side-left", Select).selection, self.query_one("#side-right", Select).selection}
        index = next((i for i, p in enumerate(pairs) if set(p) == current), -1 if step > 0 else 0)
        a, b = pairs[(index + step) % len(pairs)]
        for select, value in ((self.query_one("#side-left", Select), a), (self.query_one("#side-right", Select), b)):
            with select.prevent(Select.Changed):
                select.value = value
        self.query_one(TabbedContent).active = SIDE
        self.query_one(DiffView).focus()
        self._update_diff()

    def _tab(self, step: int) -> None:
        """The next (or previous) tab: each selector's attempts, then side by side, then the transcript."""
        tabs = self.query_one(TabbedContent)
        order = [self._panes[k] for k in self.store.keys if k in self._panes] + [SIDE, TRANSCRIPT]
        i = order.index(tabs.active) if tabs.active in order else 0
        tabs.active = order[(i + step) % len(order)]

    def action_prev_tab(self) -> None:
        self._tab(-1)

    def action_next_tab(self) -> None:
        self._tab(1)

    def action_align(self) -> None:
        """This task's trajectories under the side-by-side pair, aligned step by step."""
        a = self.query_one("#side-left", Select).selection
        b = self.query_one("#side-right", Select).selection
        if not isinstance(a, str) or not isinstance(b, str) or a == b:
            if len(self.store.keys) < 2:
                self.notify("Only one selector: nothing to align", severity="warning")
                return
            a, b = self._default_pair()
        rep = self.query_one("#side-repeat", Select).selection
        self.app.goto("aligned", task_id=self.task_id, keys=[a, b], repeat=rep if isinstance(rep, int) else None)

    def action_changes(self) -> None:
        """Changes (why it changed) for the side-by-side pair: the adapter's diff beside the tasks it flipped."""
        a = self.query_one("#side-left", Select).selection
        b = self.query_one("#side-right", Select).selection
        if not isinstance(a, str) or not isinstance(b, str) or a == b:
            if len(self.store.keys) < 2:
                self.notify("Only one selector: nothing to compare", severity="warning")
                return
            a, b = self._default_pair()
        self.app.goto("changes", a=a, b=b)

    def action_versions(self) -> None:
        """This task through every evaluation of the run."""
        self.app.goto("versions", task_id=self.task_id)

    def action_prev_pair(self) -> None:
        self._cycle(-1)

    def action_next_pair(self) -> None:
        self._cycle(1)

    # -- transcript -----------------------------------------------------------------------------------------------
    def _lookup(self, key: str, repeat: int):
        """(record, evaluation folder) of this task's attempt under ``key`` at ``repeat``, or None."""
        col = self.store.columns.get(key)
        rec = col.records.get((self.task_id, repeat)) if col is not None else None
        return None if rec is None else (rec, col.folder)

    def _sync_transcript(self) -> None:
        panel = self.query_one(TranscriptPanel)
        panel.set_choices(self.store.keys, self._repeats(), key=self.key, repeat=self.repeat)
        if self.query_one(TabbedContent).active == TRANSCRIPT:
            panel.reload()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == TRANSCRIPT:
            self.query_one(TranscriptPanel).reload()

    def action_transcript(self) -> None:
        """The Transcript tab, on the focused attempt (or the one the screen opened on)."""
        rec = self._log_target()
        key = next((c.key for c in self.query(AttemptCard) if c.record is rec), None)
        self.query_one(TabbedContent).active = TRANSCRIPT
        panel = self.query_one(TranscriptPanel)
        panel.query_one("#transcript-left-view").focus()  # the focus must leave the hidden pane, or it comes back
        if rec is not None and key is not None:
            panel.choose(left=key, repeat=rec.repeat)
        else:
            panel.reload()

    # -- triage ---------------------------------------------------------------------------------------------------
    def _chosen_card(self, with_log: bool = False) -> AttemptCard | None:
        """The focused attempt, else the one the screen opened on, else the active tab's first (with a log)."""
        node: DOMNode | None = self.focused
        while node is not None and not isinstance(node, AttemptCard):
            node = node.parent
        if isinstance(node, AttemptCard):
            return node
        active = self.query_one(TabbedContent).active
        if active == TRANSCRIPT:  # the attempt whose transcript is shown on the left
            key, _, repeat = self.query_one(TranscriptPanel).sides
            card = next((c for c in self.query(AttemptCard) if c.key == key and c.record.repeat == repeat), None)
            if card is not None:
                return card
        cards = [c for c in self.query(AttemptCard) if self._panes.get(c.key) == active]
        for card in cards:
            if card.key == self.key and card.record.repeat == self.repeat:
                return card
        if with_log:
            return next((c for c in cards if c.record.log), cards[0] if cards else None)
        return cards[0] if cards else None

    def chosen_attempt(self) -> tuple[str, str, int] | None:
        card = self._chosen_card()
        return None if card is None else (card.key, card.record.id, card.record.repeat)

    def show_failure(self, failure: Failure) -> None:
        """Focus the failure's card here when it is one of this task's, else show its task instead of this one."""
        if failure.task_id != self.task_id:
            self.app.switch_screen(AttemptScreen(failure.task_id, failure.key, failure.repeat))
            return
        self.key, self.repeat = failure.key, failure.repeat
        pane = self._panes.get(failure.key)
        if pane is not None:
            self.query_one(TabbedContent).active = pane
        self.call_after_refresh(self._reveal)

    # -- log ------------------------------------------------------------------------------------------------------
    def _log_target(self) -> AttemptRecord | None:
        """The focused attempt, else the one the screen opened on, else the active tab's first with a log."""
        card = self._chosen_card(with_log=True)
        return None if card is None else card.record

    def action_open_log(self) -> None:
        rec = self._log_target()
        if rec is None:
            self.notify("Choose an attempt first (tab to it)", severity="warning")
            return
        if not rec.log:
            self.notify(f"{rec.id} repeat {rec.repeat}: no log was recorded", severity="warning")
            return
        self.run_worker(lambda: self._read_log(rec.log), thread=True, exclusive=True, group="log", name="read-log")

    def _read_log(self, log: str) -> None:
        path = Path(log)
        if not path.is_file():
            self.app.call_from_thread(self.notify, f"{log}: not a readable file", severity="warning")
            return
        try:
            text, note = read_tail(path)
        except OSError as exc:
            self.app.call_from_thread(self.notify, f"{log}: cannot read ({exc.strerror or exc})", severity="error")
            return
        self.app.call_from_thread(self.app.push_screen, LogScreen(log, text, note))

    def action_back(self) -> None:
        self.app.pop_screen()
