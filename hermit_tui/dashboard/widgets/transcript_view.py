"""An attempt's trajectory, turn by turn: who spoke (role-labelled), the tools called with their arguments, the
tool results, long contents folded (enter or a click unfolds), search with highlighted matches, and two
trajectories side by side.

``TranscriptView`` shows one trajectory; ``TranscriptPanel`` is the drill-down's Transcript tab: a left and an
optional right selector, a repeat, a search box, and one view per side. The panel reads the store (never writes
it) through the ``lookup`` callable its screen gives it, and reads the files in a thread worker.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, Label, Select, Static

from hermit_tui.core.records.transcripts import Transcript, Turn, load_transcript, turns_of
from hermit_tui.core.safe import terminal
from hermit_tui.dashboard import bindings

FOLD_LINES = 14  # a turn longer than this is folded ...
FOLD_KEEP = 6  # ... to its first lines
ROLE_STYLES = {
    "system": "bold magenta",
    "user": "bold cyan",
    "assistant": "bold green",
    "tool": "bold yellow",
    "function": "bold yellow",
}
MATCH_STYLE = "black on yellow"

#: (record, its evaluation folder) of a selector's attempt at a repeat, or None when there is none.
Lookup = Callable[[str, int], "tuple[Any, Path | None] | None"]


def turn_lines(turn: Turn) -> list[tuple[str, str]]:
    """The body of a turn as (text, style) lines: content, then each tool call and its arguments."""
    lines = [(line, "") for line in turn.text.splitlines()]
    for call in turn.calls:
        lines.append((f"→ {call.name}" + (f"  ({call.id})" if call.id else ""), "bold"))
        lines += [("    " + line, "dim") for line in call.arguments.splitlines()]
    return lines or [("(empty)", "dim italic")]


class TurnBlock(Static, can_focus=True):
    """One turn. Folded when long; ``query`` highlights its matches (and unfolds it)."""

    BINDINGS = bindings.TRANSCRIPT_TURN

    class Toggled(Message):
        """The turn was folded or unfolded."""

    def __init__(self, turn: Turn, **kwargs):
        super().__init__(**kwargs)
        self.turn = turn
        self.body = turn_lines(turn)
        self.long = len(self.body) > FOLD_LINES
        self.folded = self.long
        self.opened_by_search = False  # unfolded to show a match: folds again when the search moves on
        self.query_text = ""
        self.matches = 0
        self.add_class(f"turn-{turn.role if turn.role in ROLE_STYLES else 'other'}")

    def on_mount(self) -> None:
        self.update(self.text())

    def text(self) -> Text:
        turn = self.turn
        head = Text.assemble((f"{turn.title}", ROLE_STYLES.get(turn.role, "bold")), (f"  #{turn.index + 1}", "dim"))
        if self.long:
            head.append(
                f"   {len(self.body)} lines · " + ("enter: unfold" if self.folded else "enter: fold"),
                style="dim italic",
            )
        shown = self.body[:FOLD_KEEP] if self.folded else self.body
        body = Text("\n").join(Text(terminal(line), style=style) for line, style in shown)
        if self.folded:
            body.append(f"\n… {len(self.body) - FOLD_KEEP} more lines", style="dim italic")
        text = Text("\n").join([head, body])
        if self.query_text:
            text.highlight_regex(re.compile(re.escape(self.query_text), re.IGNORECASE), MATCH_STYLE)
        return text

    def set_query(self, query: str) -> int:
        """Highlight ``query`` (case-insensitive); a folded turn holding a match unfolds. Returns the matches."""
        self.query_text = query
        self.matches = 0
        if query:
            haystack = "\n".join(line for line, _ in self.body) + "\n" + self.turn.title
            self.matches = haystack.lower().count(query.lower())
        if self.matches and self.folded:
            self.folded, self.opened_by_search = False, True
        elif not self.matches and self.opened_by_search:
            self.folded, self.opened_by_search = True, False
        self.update(self.text())
        return self.matches

    def action_toggle_fold(self) -> None:
        if self.long:
            self.folded, self.opened_by_search = not self.folded, False
            self.update(self.text())
            self.post_message(self.Toggled())

    def on_click(self) -> None:
        self.action_toggle_fold()


class TranscriptView(VerticalScroll):
    """One trajectory: a title, a one-line note when there is none, else its turns."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.title = ""
        self.transcript: Transcript | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="transcript-title")
        yield Static("", classes="transcript-note")

    async def show(self, title: str, transcript: Transcript | None, query: str = "") -> None:
        self.title, self.transcript = title, transcript
        self.query_one(".transcript-title", Static).update(Text(title, style="bold"))
        note = self.query_one(".transcript-note", Static)
        await self.remove_children(TurnBlock)
        if transcript is None or transcript.messages is None:
            note.update(Text(transcript.note if transcript else "(no attempt)", style="italic"))
            note.display = True
            return
        where = (
            "transcripts.jsonl" if transcript.source != "log" else f"hermit's log {Path(transcript.path or '?').name}"
        )
        turns = turns_of(transcript.messages)
        note.update(Text(f"{len(turns)} messages · from {where}", style="dim"))
        blocks = [TurnBlock(turn) for turn in turns]
        await self.mount_all(blocks)
        if query:
            self.search(query)

    @property
    def blocks(self) -> list[TurnBlock]:
        return list(self.query(TurnBlock))

    def search(self, query: str) -> int:
        return sum(block.set_query(query) for block in self.blocks)


class TranscriptPanel(Vertical):
    """The Transcript tab: one selector's trajectory, or two side by side, at a repeat; search within them."""

    BINDINGS = bindings.TRANSCRIPT

    def __init__(self, lookup: Lookup, **kwargs):
        super().__init__(**kwargs)
        self.lookup = lookup
        self.keys: list[str] = []
        self.repeats: list[int] = []
        self.loaded: tuple | None = None  # what the views show: (left, right, repeat, records)
        self.match_count = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="transcript-controls"):
            yield Select([], id="transcript-left", compact=True, prompt="selector")
            yield Label("vs", classes="muted")
            yield Select([], id="transcript-right", compact=True, prompt="— alone")
            yield Select([], id="transcript-repeat", compact=True, prompt="repeat")
            yield Input(placeholder="search (/)", id="transcript-search", compact=True)
            yield Label("", id="transcript-matches", classes="muted")
        with Horizontal(id="transcript-views"):
            yield TranscriptView(id="transcript-left-view", classes="transcript-view")
            yield TranscriptView(id="transcript-right-view", classes="transcript-view")

    # -- choices --------------------------------------------------------------------------------------------------
    def set_choices(
        self, keys: list[str], repeats: list[int], *, key: str | None = None, repeat: int | None = None
    ) -> None:
        """The selectors and repeats to choose from (kept when still offered); ``key``/``repeat``: the start."""
        left, right = self.query_one("#transcript-left", Select), self.query_one("#transcript-right", Select)
        rep = self.query_one("#transcript-repeat", Select)
        if keys != self.keys:
            current = (left.selection, right.selection)
            self.keys = list(keys)
            with left.prevent(Select.Changed), right.prevent(Select.Changed):
                left.set_options([(Content(k), k) for k in keys])
                right.set_options([(Content(k), k) for k in keys])
                wanted = current[0] if current[0] in keys else key if key in keys else keys[0] if keys else None
                if wanted is not None:
                    left.value = wanted
                if current[1] in keys:
                    right.value = current[1]
        if repeats != self.repeats:
            chosen = rep.selection
            self.repeats = list(repeats)
            wanted = chosen if chosen in repeats else repeat if repeat in repeats else repeats[0] if repeats else None
            with rep.prevent(Select.Changed):
                rep.set_options([(f"repeat {r}", r) for r in repeats])
                if wanted is not None:
                    rep.value = wanted

    def choose(self, left: str | None = None, right: str | None = None, repeat: int | None = None) -> None:
        """Pick the sides and the repeat (``right=""`` shows one trajectory), then load them."""
        for select_id, value in (
            ("#transcript-left", left),
            ("#transcript-right", right),
            ("#transcript-repeat", repeat),
        ):
            if value is None:
                continue
            select = self.query_one(select_id, Select)
            with select.prevent(Select.Changed):
                if value == "":
                    select.clear()
                else:
                    select.value = value
        self.reload()

    @property
    def sides(self) -> tuple[str | None, str | None, int | None]:
        left = self.query_one("#transcript-left", Select).selection
        right = self.query_one("#transcript-right", Select).selection
        rep = self.query_one("#transcript-repeat", Select).selection
        return (
            left if isinstance(left, str) else None,
            right if isinstance(right, str) else None,
            rep if isinstance(rep, int) else None,
        )

    @on(Select.Changed)
    def _changed(self, event: Select.Changed) -> None:
        event.stop()
        self.reload()

    # -- loading --------------------------------------------------------------------------------------------------
    def reload(self, *, force: bool = False) -> None:
        """Read the chosen trajectories (in a thread: a sidecar or a log can be large), unless already shown."""
        left, right, rep = self.sides
        found = {
            side: self.lookup(side, rep) if side is not None and rep is not None else None for side in (left, right)
        }
        stamp = (left, right, rep, tuple(id(v[0]) if v else None for v in found.values()))
        if stamp == self.loaded and not force:
            return
        self.loaded = stamp
        self.query_one("#transcript-right-view").display = right is not None
        self.run_worker(
            lambda: self._read(stamp, left, right, rep, found),
            thread=True,
            exclusive=True,
            group="transcript",
            name="read-transcript",
        )

    def _read(self, stamp, left, right, rep, found) -> None:
        shown: list[tuple[str, Transcript | None]] = []
        for side in (left, right):
            entry = found.get(side) if side is not None else None
            if side is None:
                shown.append(("", None))
                continue
            if entry is None:
                shown.append(
                    (f"{side} · repeat {rep}", Transcript(note=f"no attempt of this task at repeat {rep} under {side}"))
                )
                continue
            record, folder = entry
            title = f"{side} · repeat {rep} · {record.status} · score {record.judge.score:.3f}"
            try:
                shown.append((title, load_transcript(folder, record)))
            except Exception as exc:  # never an error screen: a one-line note
                shown.append((title, Transcript(note=f"no transcript: {type(exc).__name__}: {exc}")))
        # (Textual types the callback as returning T | Awaitable[T]; mypy solves T as Never for a coroutine function)
        self.app.call_from_thread(self._show, stamp, shown)  # type: ignore[arg-type]

    async def _show(self, stamp: object, shown: list[tuple[str, Transcript | None]]) -> None:
        if stamp != self.loaded:
            return
        query = self.query_one("#transcript-search", Input).value.strip()
        for view, (title, transcript) in zip(self.query(TranscriptView), shown):
            await view.show(title, transcript, query)
        self._count(query)

    # -- search ---------------------------------------------------------------------------------------------------
    @on(Input.Changed, "#transcript-search")
    def _search(self, event: Input.Changed) -> None:
        event.stop()
        query = event.value.strip()
        for view in self.query(TranscriptView):
            view.search(query)
        self._count(query)

    def _count(self, query: str) -> None:
        blocks = [b for v in self.query(TranscriptView) if v.display for b in v.blocks]
        self.match_count = sum(b.matches for b in blocks)
        turns = sum(1 for b in blocks if b.matches)
        label = self.query_one("#transcript-matches", Label)
        if not query:
            label.update("")
        elif not self.match_count:
            label.update("no match")
        else:
            label.update(
                f"{self.match_count} match{'es' if self.match_count > 1 else ''} in {turns} "
                f"message{'s' if turns > 1 else ''}"
            )

    @on(Input.Submitted, "#transcript-search")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_next_match()

    def action_search(self) -> None:
        self.query_one("#transcript-search", Input).focus()

    def _jump(self, step: int) -> None:
        hits = [b for v in self.query(TranscriptView) if v.display for b in v.blocks if b.matches]
        if not hits:
            self.notify("No match in the transcript", severity="warning")
            return
        focused = self.screen.focused
        index = hits.index(focused) if focused in hits else (-1 if step > 0 else 0)
        target = hits[(index + step) % len(hits)]
        target.focus(scroll_visible=False)
        target.scroll_visible(top=True, animate=False)

    def action_next_match(self) -> None:
        self._jump(1)

    def action_prev_match(self) -> None:
        self._jump(-1)

    def action_fold_all(self) -> None:
        """Fold every long turn, or unfold them all when all are folded."""
        blocks = [b for v in self.query(TranscriptView) for b in v.blocks if b.long]
        fold = not all(b.folded for b in blocks)
        for block in blocks:
            block.folded, block.opened_by_search = fold, False
            block.update(block.text())
