"""Triage: label, note and correct the score of attempts as you drill in, and walk the unlabelled failures.

The dialogs (a note with an optional corrected score, the run's label set, a label picker) and :class:`Triage`, the
keys the drill-down, the per-task table and the errors screen share (1-9 toggle a label of the run's set on the
chosen attempt, 0 clears, n note, u next unlabelled failure, shift+l edits the set). Writing goes through the app
(``HermitApp.annotate``), which appends to the evaluation's annotations.jsonl off the event loop.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.annotations import (
    JUDGE_DISAGREES,
    MAX_LABELS,
    Annotation,
    Change,
    bulk_label,
    check_label_set,
    check_note,
    check_score,
)
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitModal, HermitScreen
from hermit_tui.dashboard.state.store import Failure

GROUP_NAMES = {"regression": "regression", "error": "error", "flaky": "flaky task", "failure": "failure"}


def progress_text(store) -> str:
    """ "17 of 42 failures labelled" over the current evaluations."""
    done, total = store.triage_progress()
    if not total:
        return "no failures to label"
    return f"{done} of {total} failure{'s' * (total != 1)} labelled"


def keys_text(labels: list[str]) -> Text:
    """The label keys: "1 judge disagrees · 2 format error · …"."""
    text = Text()
    for i, name in enumerate(labels, start=1):
        if i > 1:
            text.append(" · ", style="dim")
        text.append(f"{i} ", style="bold")
        text.append(name)
    return text


def annotation_text(ann: Annotation | None, score: float | None = None, stale: Annotation | None = None) -> Text:
    """An attempt's labels, corrected score and note on a line or two ("" when it has none)."""
    text = Text()
    if ann is not None and ann.labels:
        text.append("labels ", style="bold")
        text.append(" · ".join(f"[{name}]" for name in ann.labels))
    if ann is not None and ann.corrected_score is not None:
        text.append("   " if text else "")
        text.append("corrected score ", style="bold")
        text.append(f"{ann.corrected_score:.3f}")
        if score is not None:
            text.append(f" (the judge's {score:.3f} stays recorded)", style="dim")
    if ann is not None and ann.note:
        text.append("\n" if text else "")
        text.append("note ", style="bold")
        text.append(ann.note)
    if stale is not None and (ann is None or ann.empty):
        text.append("\n" if text else "")
        text.append(
            f"labelled {stale.at[:16].replace('T', ' ')} on an earlier attempt, re-run since: "
            f"{', '.join(stale.labels) or 'a note'} no longer applies",
            style="dim italic",
        )
    return text


# ---------------------------------------------------------------------------------------------------- dialogs


class NoteScreen(HermitModal[tuple[str, float | None, bool] | None]):
    """A free-text note and an optional corrected score on one attempt. Dismisses with (note, corrected score or
    None, whether the score was cleared), or None when cancelled."""

    CSS_PATH = [style("annotate.tcss")]
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, current: Annotation | None, recorded: float | None = None):
        super().__init__()
        self.title_text, self.current, self.recorded = title, current, recorded

    def compose(self) -> ComposeResult:
        cur = self.current
        score = "" if cur is None or cur.corrected_score is None else f"{cur.corrected_score:g}"
        with Vertical(id="note-box", classes="annotate-box"):
            yield Static(Text(self.title_text), id="note-title", classes="annotate-title")
            yield Label("Note (free text; empty removes it)")
            yield Input(cur.note if cur else "", placeholder="what went wrong", id="note-text", compact=True)
            yield Label("Corrected score, if you disagree with the judge (empty: none)")
            yield Input(score, placeholder="e.g. 1.0", id="note-score", compact=True)
            recorded = f"the judge's {self.recorded:.3f} stays recorded; " if self.recorded is not None else ""
            yield Static(
                f"A corrected score adds the label '{JUDGE_DISAGREES}'; {recorded}views that use it say so.",
                classes="muted",
            )
            yield Label("", id="note-error", classes="annotate-error")
            with Horizontal(classes="annotate-buttons"):
                yield Button("Save", variant="primary", id="note-ok", compact=True)
                yield Button("Cancel", id="note-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#note-text", Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#note-ok")
    def _ok(self) -> None:
        raw = self.query_one("#note-score", Input).value.strip()
        try:
            note = check_note(self.query_one("#note-text", Input).value)
            score = check_score(raw) if raw else None
        except InputError as exc:
            self.query_one("#note-error", Label).update(str(exc))
            return
        had = self.current is not None and self.current.corrected_score is not None
        self.dismiss((note, score, had and score is None))

    @on(Button.Pressed, "#note-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class LabelSetScreen(HermitModal[list[str] | None]):
    """The run's label set, keys 1-9 ("judge disagrees" built in as 1). Dismisses with the new set, or None."""

    CSS_PATH = [style("annotate.tcss")]
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, labels: list[str], where: str = ""):
        super().__init__()
        self.labels, self.where = list(labels), where

    def compose(self) -> ComposeResult:
        with Vertical(id="labelset-box", classes="annotate-box"):
            yield Static("Label set: keys 1-9 toggle these on the chosen attempt", classes="annotate-title")
            yield Static(
                Text(
                    f"Kept per run in hermit-tui's settings (never in run.yaml){self.where}. Renaming a "
                    "label leaves the attempts that carry the old name as they are."
                ),
                classes="muted",
            )
            for n in range(1, MAX_LABELS + 1):
                with Horizontal(classes="labelset-row"):
                    yield Label(f"{n}", classes="labelset-key")
                    if n == 1:
                        yield Label(
                            f"{JUDGE_DISAGREES}  (built in; n sets a corrected score)", classes="labelset-fixed"
                        )
                    else:
                        value = self.labels[n - 1] if n - 1 < len(self.labels) else ""
                        yield Input(value, placeholder="(free)", id=f"labelset-{n}", compact=True)
            yield Label("", id="labelset-error", classes="annotate-error")
            with Horizontal(classes="annotate-buttons"):
                yield Button("Save", variant="primary", id="labelset-ok", compact=True)
                yield Button("Cancel", id="labelset-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#labelset-2", Input).focus()

    def values(self) -> list[str]:
        return [JUDGE_DISAGREES] + [self.query_one(f"#labelset-{n}", Input).value for n in range(2, MAX_LABELS + 1)]

    @on(Input.Submitted)
    @on(Button.Pressed, "#labelset-ok")
    def _ok(self) -> None:
        try:
            labels = check_label_set(self.values())
        except InputError as exc:
            self.query_one("#labelset-error", Label).update(str(exc))
            return
        self.dismiss(labels)

    @on(Button.Pressed, "#labelset-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class LabelPickScreen(HermitModal[str | None]):
    """Choose one of ``choices`` ((value, text) pairs); dismisses with its value, or None."""

    CSS_PATH = [style("annotate.tcss")]
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]], current: str | None = None):
        super().__init__()
        self.title_text, self.choices, self.current = title, choices, current

    def compose(self) -> ComposeResult:
        with Vertical(id="pick-box", classes="annotate-box"):
            yield Static(Text(self.title_text), classes="annotate-title")
            yield OptionList(
                *[Option(Text(text), id=str(i)) for i, (_, text) in enumerate(self.choices)], id="pick-list"
            )
            yield Static("enter chooses · escape cancels", classes="muted")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        values = [v for v, _ in self.choices]
        options.highlighted = values.index(self.current) if self.current in values else 0
        options.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.choices[int(event.option.id or 0)][0])

    def action_cancel(self) -> None:
        self.dismiss(None)


# ---------------------------------------------------------------------------------------------------- the keys


class BulkLabelScreen(LabelPickScreen):
    """The label to put on (or take off) every attempt of a set: the digit keys choose at once, as 1-9 do on one
    attempt."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        *[Binding(str(n), f"digit({n})", show=False) for n in range(1, MAX_LABELS + 1)],
    ]

    def action_digit(self, n: int) -> None:
        if n <= len(self.choices):
            self.dismiss(self.choices[n - 1][0])


Scope = tuple[str, list[tuple[str, str, int]]]  # (what it is, in words; its attempts as (column, task, repeat))


class Triage(HermitScreen[None]):
    """The triage keys of a screen that has a chosen attempt. The screen provides :meth:`chosen_attempt` and
    :meth:`show_failure` (how it brings the next unlabelled failure into view); a screen that shows sets of attempts
    provides :meth:`group_scope` (the set under the cursor, which the label keys then act on whole) and
    :meth:`bulk_scope` (what shift+a labels)."""

    def chosen_attempt(self) -> tuple[str, str, int] | None:  # (column key, task id, repeat)
        raise NotImplementedError

    def group_scope(self) -> Scope | None:
        """The set of attempts the cursor is on instead of one attempt (the errors screen's group), or None."""
        return None

    def bulk_scope(self) -> Scope | None:
        """Every attempt shift+a labels at once, or None when the screen shows no such set."""
        return None

    def bulk(self, label: str, scope: Scope) -> None:
        """Put ``label`` on every attempt of ``scope`` (or take it off every one when they all carry it), as one
        change that U undoes."""
        what, attempts = scope
        if not attempts:
            self.notify(f"No failure to label in {what}", severity="warning")
            return
        store = self.app.store
        change = bulk_label(label, [store.annotation(*a) for a in attempts])
        verb = "taken off" if change.remove else "put on"
        n = self.app.annotate_many([(*a, change) for a in attempts], undoable=f"'{label}' {verb} {what}")
        self.notify(f"'{label}' {verb} {n} failure{'s' * (n != 1)} of {what} · shift+u undoes", timeout=6)

    def action_bulk_label(self) -> None:
        """Choose a label and put it on every attempt of the screen's set (shift+a)."""
        scope = self.bulk_scope()
        if scope is None:
            self.notify("No set of attempts here: shift+a works on the errors screen and the per-task table")
            return
        what, attempts = scope
        store = self.app.store
        states = [store.annotation(*a) for a in attempts]
        choices = [
            (name, f"{i}  {name}  ({sum(1 for a in states if a is not None and name in a.labels)} of {len(states)})")
            for i, name in enumerate(store.label_set, start=1)
        ]
        self.app.push_screen(
            BulkLabelScreen(f"Label every one of the {len(attempts)} failures of {what}", choices),
            lambda name: None if name is None else self.bulk(name, scope),
        )

    def action_undo_bulk(self) -> None:
        self.app.undo_bulk()

    def show_failure(self, failure: Failure) -> None:
        self.app.goto("attempt", task_id=failure.task_id, key=failure.key, repeat=failure.repeat)

    def _chosen_or_say(self) -> tuple[str, str, int] | None:
        chosen = self.chosen_attempt()
        if chosen is None:
            self.notify(
                "Choose an attempt first (the drill-down's cards, the per-task table's row, an error)",
                severity="warning",
            )
        return chosen

    def action_label(self, n: int) -> None:
        """Toggle label ``n`` of the run's set on the chosen attempt."""
        labels = self.app.store.label_set
        if not 1 <= n <= len(labels):
            self.notify(f"The label set has no label {n}: shift+l edits it", severity="warning")
            return
        scope = self.group_scope() if self.chosen_attempt() is None else None
        if scope is not None:  # on a group: every attempt of it
            self.bulk(labels[n - 1], scope)
            return
        chosen = self._chosen_or_say()
        if chosen is not None:
            self.app.annotate(*chosen, Change(toggle=[labels[n - 1]]))

    def action_pick_label(self) -> None:
        """Toggle a label chosen by name (the palette's way to the keys 1-9)."""
        chosen = self._chosen_or_say()
        if chosen is None:
            return
        ann = self.app.store.annotation(*chosen)
        on = set(ann.labels) if ann else set()
        choices = [
            (name, f"{i}  [{'x' if name in on else ' '}] {name}")
            for i, name in enumerate(self.app.store.label_set, start=1)
        ]
        key, task, repeat = chosen

        def picked(name: str | None) -> None:
            if name is not None:
                self.app.annotate(key, task, repeat, Change(toggle=[name]))

        self.app.push_screen(LabelPickScreen(f"Toggle a label on {key} · {task} · repeat {repeat}", choices), picked)

    def action_clear_annotation(self) -> None:
        chosen = self._chosen_or_say()
        if chosen is not None:
            self.app.annotate(*chosen, Change(clear=True))

    def action_note(self) -> None:
        chosen = self._chosen_or_say()
        if chosen is None:
            return
        key, task, repeat = chosen
        col = self.app.store.columns.get(key)
        rec = col.records.get((task, repeat)) if col is not None else None

        def saved(result: Any) -> None:
            if result is None:
                return
            note, score, cleared = result
            self.app.annotate(key, task, repeat, Change(note=note, corrected_score=score, clear_score=cleared))

        self.app.push_screen(
            NoteScreen(
                f"Note on {key} · {task} · repeat {repeat}",
                self.app.store.annotation(*chosen),
                rec.judge.score if rec is not None else None,
            ),
            saved,
        )

    def action_label_set(self) -> None:
        self.app.edit_label_set()

    def walk_from(self) -> tuple[str, str, int] | None:
        """Where ``u`` continues the walk from (None: its start)."""
        return self.chosen_attempt()

    def action_next_unlabelled(self) -> None:
        """The next failure that carries no label, in triage order (regressions, errors, flaky tasks, the rest)."""
        self.app.next_unlabelled(self.walk_from(), self.show_failure, self)


def next_unlabelled(where, after: tuple[str, str, int] | None, show) -> None:
    """Show (``show(failure)``) the first unlabelled failure after ``after`` on the triage walk, or say that every
    failure carries a label. The walk must be computed (``store.failure_walk``) or small."""
    store = where.app.store
    failure = store.next_unlabelled(after)
    if failure is None:
        done, total = store.triage_progress()
        where.notify(
            f"Every one of the {total} failures carries a label" if total else "No failures to label", timeout=4
        )
        return
    show(failure)  # the screens show where it is and the progress: no toast over them
