"""One attempt of a task as a card (every field, its output, its traceback, its annotation), and the formatting the
drill-down shares (dashboard/screens/attempt): structured values as indented JSON, what an attempt produced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Label, Static

from hermit_tui.core.present import cost_text, tokens_text
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.safe import terminal

STATUS_TEXT = {"ok": "ok", "error": "error: the pipeline raised", "judge_error": "judge_error: the judge raised"}


# -- formatting (plain functions, tested without a terminal) -----------------------------------------------------------
def pretty(value: Any) -> str:
    """Structured values (and strings holding JSON) as indented JSON; other text as it is; control characters as
    their visible escape (``core.safe.terminal``)."""
    return terminal(_pretty(value))


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) < 2_000_000:
            try:
                return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
            except ValueError:
                pass
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def output_text(rec: AttemptRecord | None) -> str:
    """What an attempt produced, for reading or comparing."""
    if rec is None:
        return "(no attempt yet)"
    if rec.output is None:
        return f"(no output: {terminal(rec.error)})" if rec.error else "(no output)"
    return pretty(rec.output)


def log_readable(log: str | None) -> bool:
    return log is not None and bool(log) and Path(log).is_file()


def fields_grid(rows: list[tuple[str, str]], width: int | None = None) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True, width=width)
    grid.add_column(overflow="fold")
    for name, value in rows:
        grid.add_row(name, Text(terminal(value)))
    return grid


# -- widgets ----------------------------------------------------------------------------------------------------------
class AttemptCard(Vertical, can_focus=True):
    """Every field of one attempt."""

    def __init__(
        self,
        key: str,
        record: AttemptRecord,
        traceback: str | None,
        *,
        id: str | None = None,
        annotation: Text | None = None,
    ):
        super().__init__(id=id, classes=f"attempt attempt-{record.status}")
        self.key, self.record, self.traceback = key, record, traceback
        self.annotation = annotation or Text()

    def fields(self) -> list[tuple[str, str]]:
        rec = self.record
        rows = [("Feedback", rec.judge.feedback or "—")]
        if rec.judge.extra:
            rows.append(("Judge extra", pretty(rec.judge.extra)))
        if rec.error:
            rows.append(("Error", rec.error))
        rows += [
            ("Cost", cost_text(rec.cost_usd)),
            ("Tokens", tokens_text(rec.tokens)),
            ("Wall time", f"{rec.wall_s:.2f} s"),
        ]
        if rec.api_speed is not None:
            rows.append(("API speed", pretty(rec.api_speed)))
        if not rec.log:
            rows.append(("Log", "none"))
        else:
            rows.append(("Log", rec.log + ("   (l: open)" if log_readable(rec.log) else "   (not a readable file)")))
        if rec.printed:  # what the pipeline and the judge printed, kept away from the screen (core.run.printed)
            rows.append(("Printed", rec.printed))
        return rows

    def compose(self) -> ComposeResult:
        rec = self.record
        with Horizontal(classes="attempt-head"):
            yield Label(f"{self.key} · repeat {rec.repeat}", classes="attempt-repeat")
            yield Label(STATUS_TEXT.get(rec.status, rec.status), classes=f"attempt-status status-{rec.status}")
            yield Label(f"score {rec.judge.score:.3f}", classes="attempt-score")
        note = Static(self.annotation, classes="attempt-annotation")
        note.display = bool(self.annotation)
        yield note
        yield Static(fields_grid(self.fields(), width=11), classes="attempt-fields")
        yield Label("Output", classes="attempt-label")
        with VerticalScroll(classes="attempt-output"):
            yield Static(Text(output_text(rec)), classes="attempt-output-text")
        if self.traceback:
            yield Label("Traceback", classes="attempt-label")
            with VerticalScroll(classes="attempt-traceback"):
                yield Static(Text(terminal(self.traceback.rstrip("\n"))), classes="attempt-traceback-text")

    def show_annotation(self, text: Text) -> None:
        """The attempt's labels, corrected score and note (from the store)."""
        if text.plain == self.annotation.plain and text.spans == self.annotation.spans:
            return
        self.annotation = text
        if self.is_mounted:
            note = self.query_one(".attempt-annotation", Static)
            note.update(text)
            note.display = bool(text)


__all__ = ["STATUS_TEXT", "AttemptCard", "fields_grid", "log_readable", "output_text", "pretty"]
