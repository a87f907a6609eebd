"""The dashboard's state: what the engine reported and what was read from disk, aggregated per selector and per task.

Data flows one way: engine events (or files) -> ``EvalStore`` -> widgets. The store is plain Python (no Textual), so
it is tested without a terminal; widgets read it and never write it. It is the one door: the app holds a single
store for its whole life (:meth:`EvalStore.reset` when another config opens), and every change goes through a
method that bumps ``version`` (the screens redraw on it). Evaluations read from disk arrive as columns built off
the event loop (:func:`build_stored`, in a worker), then :meth:`EvalStore.add_column` puts them in, which costs
milliseconds whatever their size.

Each evaluation is a :class:`~hermit_tui.dashboard.state.column.Column` over arrays (``core.records.index``); the
per-task table is computed on them (``store_rows``); the triage figures are in ``store_triage``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.annotations import DEFAULT_LABEL_SET, AnnotationsFile, read_annotations
from hermit_tui.core.records.columns import STATUSES
from hermit_tui.core.records.folders import StoredEvaluation
from hermit_tui.core.records.results import SOLVED_THRESHOLD
from hermit_tui.core.run import events as ev
from hermit_tui.dashboard.state.column import Cell, Column, disk_column
from hermit_tui.dashboard.state.rows import LOOKUP_SLICE, TaskRow, TaskRows, compute_rows
from hermit_tui.dashboard.state.triage import (
    ANY_LABEL,
    LABEL_FILTER_NAMES,
    UNLABELLED,
    WALK_GROUPS,
    Failure,
    TriageStore,
)

if TYPE_CHECKING:
    from hermit_tui.core.stats.sequential.tracker import SequentialPlan

Filter = Literal["all", "errors", "regressions", "improvements", "flaky", "unknown_cost"]
FILTERS: tuple[Filter, ...] = ("all", "errors", "regressions", "improvements", "flaky", "unknown_cost")
FILTER_NAMES = {
    "all": "all tasks",
    "errors": "errors only",
    "regressions": "regressions",
    "improvements": "improvements",
    "flaky": "flaky",
    "unknown_cost": "unknown cost",
}

_STEP = re.compile(r"ckpt-step-(\d+)$")


def selector_rank(selector: str, label: str = "", archived: bool = False) -> tuple:
    """Where a column goes, as a launch puts them: none, root, checkpoints by step, other tags, commits and
    directories (in the order they came), final; archived evaluations after the current ones of their kind. A sort
    by this key must be stable."""
    text = selector or label
    step = _STEP.search(text)
    if text == "none":
        kind: tuple = (0,)
    elif text == "root":
        kind = (1,)
    elif step:
        kind = (2, int(step.group(1)))
    elif text == "final" or text.endswith("/final"):
        kind = (4,)
    else:
        kind = (3,)
    return (*kind, archived)


class EvalStore(TriageStore):
    """Everything the dashboard shows about one config's evaluations (the triage part: dashboard/state/triage.py)."""

    def __init__(self, tasks: dict[str, dict] | None = None, task_ids: Iterable[str] = ()):
        self.version = 0
        self.generation = 0  # bumped by reset(): work started for an earlier config checks it before it lands
        self._clear(tasks, task_ids)

    def _clear(
        self,
        tasks: dict[str, dict] | None,
        task_ids: Iterable[str],
        indexed: tuple[list[str], dict[str, int]] | None = None,
    ) -> None:
        self.tasks: dict[str, dict] = dict(tasks or {})
        self.task_ids: list[str] = []
        self._task_pos: dict[str, int] = {}
        if indexed is not None:
            self.task_ids, self._task_pos = indexed
        else:
            self._add_task_ids(task_ids)
        self.columns: dict[str, Column] = {}
        self.baseline: str | None = None
        self.log: list[tuple[str, str]] = []  # (level, message)
        self.repeats = 1
        self.run_active = False
        self.run_cancelled = False
        self.warnings: list[str] = []
        self.threshold = SOLVED_THRESHOLD
        self.baseline_chosen = False  # the user picked a baseline: keep it when columns come and go
        self.in_flight: set[tuple[str, str, int]] = set()  # (label, task, repeat) started, not finished yet
        self.launch_labels: list[str] = []  # the labels of the live (or last) launch: what the run screen shows
        self._search: tuple[int, list[str]] = (0, [])  # the search text of task_ids[:n], lower case
        self.max_cost: float | None = None  # the launch's --max-cost (USD)
        self.stop_reason: str | None = None  # why the last launch stopped early without a cancel
        self.label_set: list[str] = list(DEFAULT_LABEL_SET)  # the run's labels, keys 1-9 (hermit-tui's settings)
        self.annotations_version = 0  # the part of ``version`` that annotation changes bumped
        self._walk = None
        # --stop-when-decided: the launch's plan, and per candidate its looks against the baseline, round by round
        self.sequential: SequentialPlan | None = None  # the live (or last) launch's plan, None without one
        self.sequential_looks: dict[str, list] = {}
        self.sequential_stopped = False
        self.sequential_tasks = 0  # test tasks of that launch (a round's attempts per selector)

    def reset(
        self,
        tasks: dict[str, dict] | None = None,
        task_ids: Iterable[str] = (),
        *,
        warnings: Iterable[str] = (),
        label_set: Iterable[str] | None = None,
        indexed: tuple[list[str], dict[str, int]] | None = None,
    ) -> None:
        """Forget everything for another config (its tasks, test ids, protocol warnings and label set).
        ``indexed``: :func:`index_task_ids` of the test ids, worked out off the event loop (its objects are kept)."""
        self._clear(tasks, task_ids, indexed)
        self.warnings = list(warnings)
        if label_set is not None:
            self.label_set = list(label_set)
        self.generation += 1
        self._touch()

    def set_warnings(self, warnings: Iterable[str]) -> None:
        """The protocol checks every summary view carries."""
        self.warnings = list(warnings)
        self._touch()

    # -- feeding --------------------------------------------------------------------------------------------------
    def _touch(self) -> None:
        self.version += 1

    def _add_task_ids(self, ids: Iterable[str]) -> None:
        _append_new_ids(self.task_ids, self._task_pos, ids)

    def apply(self, event: ev.Event) -> None:
        """Take one engine event."""
        if isinstance(event, ev.AttemptFinished):
            col = self.columns.get(event.label)
            if col is not None:
                col.add(event.record, event.traceback)
                if event.record.id not in self._task_pos:
                    self._add_task_ids([event.record.id])
            self.in_flight.discard((event.label, event.record.id, event.record.repeat))
        elif isinstance(event, ev.AttemptStarted):
            self.in_flight.add((event.label, event.task_id, event.repeat))
        elif isinstance(event, ev.RunStarted):
            if self.launch_labels != list(event.labels) or not self.run_active:
                self.begin_launch(event.labels, len(event.task_ids) * event.repeats, event.repeats)
            self._add_task_ids(event.task_ids)
            self.repeats = event.repeats
            self.run_active, self.run_cancelled = True, False
            self.max_cost, self.stop_reason = event.max_cost_usd, None
            self.sequential, self.sequential_looks, self.sequential_stopped = event.sequential, {}, False
            self.sequential_tasks = len(event.task_ids)
        elif isinstance(event, ev.RoundChecked):
            for look in event.looks:
                self.sequential_looks.setdefault(look.candidate, []).append(look)
            self.sequential_stopped = event.stopped
            if event.stopped:  # no further round starts: the launch has this many repeats
                self.repeats = event.round
        elif isinstance(event, ev.SelectorStarted):
            self.columns.pop(event.label, None)
            col = self.columns[event.label] = Column(
                key=event.label,
                label=event.label,
                selector=event.selector,
                source="live",
                commit=event.commit,
                expected=event.total,
                running=True,
                threshold=self.threshold,
                folder=Path(event.folder) if event.folder else None,
            )
            if col.folder is not None:  # a retry or a resume keeps the evaluation, and its annotations
                try:
                    col.annotations = read_annotations(col.folder).entries
                except InputError as exc:
                    self.log.append(("warning", str(exc)))
            self.order_columns()
        elif isinstance(event, ev.SelectorFinished):
            col = self.columns.get(event.label)
            if col is not None:
                col.summary, col.running, col.finished = event.summary, False, time.monotonic()
                if event.summary.expected_attempts:  # a launch stopped when decided expects fewer
                    col.expected = event.summary.expected_attempts
        elif isinstance(event, ev.RunLog):
            self.log.append((event.level, event.message))
        elif isinstance(event, ev.CardUpdated):
            self.log.append(("info", event.message))
        elif isinstance(event, ev.RunCancelled):
            self.run_cancelled = True
            self.log.append(("warning", f"cancelled: {event.finished} of {event.total} attempts finished and kept"))
        elif isinstance(event, ev.RunFinished):
            self.run_active = False
            self.stop_reason = event.stop_reason
            self.in_flight.clear()
            for col in self.columns.values():
                col.running = False
        self._touch()

    def begin_launch(self, labels: Iterable[str], per_selector: int, repeats: int, *, keep: Iterable[str] = ()) -> None:
        """A launch of ``labels`` starts: the view becomes exactly what it launches. Every other column is taken out
        (History and the per-task table put evaluations back beside it), and each launched label shows an empty,
        running column at once, not the earlier evaluation of that label read from disk (its attempts would show
        as the launch's progress until the launch's own first event). Called by the app before the run screen
        shows, and by ``RunStarted`` when it was not (the headless paths). ``keep``: labels that stay as they are
        (the earlier launches of a chain)."""
        labels, kept = list(labels), set(keep) - set(labels)
        # the others are not closed: a screen may still hold one; read again when put back
        self.columns = {k: c for k, c in self.columns.items() if k in kept}
        for label in labels:
            self.columns[label] = Column(
                key=label,
                label=label,
                selector=label,
                source="live",
                expected=per_selector,
                running=True,
                threshold=self.threshold,
            )
        self.launch_labels = labels
        self.repeats = repeats
        self.run_active, self.run_cancelled, self.stop_reason = True, False, None
        self.in_flight.clear()
        self.order_columns()
        self._touch()

    def apply_many(self, events: Iterable[ev.Event]) -> int:
        n = 0
        for event in events:
            self.apply(event)
            n += 1
        return n

    def stored_key(self, stored: StoredEvaluation) -> str:
        """The column key an evaluation read from disk gets: its name, or "<name> (disk)" beside a live column of
        that name."""
        shown = self.columns.get(stored.name)
        return stored.name if shown is None or shown.source == "disk" else f"{stored.name} (disk)"

    def new_task_ids(self, col: Column) -> set[str]:
        """The column's task ids the store does not hold (yet): meant for the worker that built the column, so that
        ``add_column`` on the event loop looks at these few instead of all of them (at a million attempts, hashing
        and looking up 111,112 fresh ids took 40-60 ms of the loop). Reads the store only."""
        ids, pos, found = col.table.ids, self._task_pos, set()
        for start in range(0, len(ids), LOOKUP_SLICE):  # slices: one long C call would hold the lock 40-60 ms
            part = set(ids[start : start + LOOKUP_SLICE])
            part.difference_update(pos)
            found |= part
        return found

    def add_column(self, col: Column, key: str | None = None, *, new_ids: set[str] | None = None) -> Column:
        """Put a column built off the event loop (``build_stored``) beside the others, under ``key`` if given: its
        new task ids go at the end, the columns are ordered as a launch orders them. ``new_ids``: what
        ``new_task_ids`` said in the worker (checked again here: the store may have gained some meanwhile).
        Milliseconds, whatever its size."""
        if key is not None:
            col.key = key
        if col.threshold != self.threshold:
            col.rethreshold(self.threshold)
        ids = col.table.ids
        if new_ids is None:
            new_ids = set(ids)
        missing = new_ids.difference(self._task_pos)
        if missing:
            self._add_task_ids([t for t in ids if t in missing])
        if col.summary is not None:
            self.repeats = max(self.repeats, col.summary.repeats)
        self.columns[col.key] = col
        self.order_columns()
        self._touch()
        return col

    def add_stored(
        self,
        stored: StoredEvaluation,
        *,
        key: str | None = None,
        results=None,
        annotations: AnnotationsFile | None = None,
    ) -> Column:
        """Read an evaluation from disk and put it beside the others, at once (the app reads in a worker:
        ``build_stored`` there, then ``add_column``). ``results``: its AttemptTable already read."""
        col = build_stored(stored, self.threshold, table=results, annotations=annotations)
        return self.add_column(col, key or self.stored_key(stored))

    def order_columns(self) -> None:
        """Columns as a launch shows them (none, root, checkpoints by step, others, final), and the baseline none
        unless the user chose another that is still shown."""
        ordered = sorted(self.columns.values(), key=lambda c: selector_rank(c.selector, c.label, c.archived))  # stable
        self.columns = {c.key: c for c in ordered}
        if not (self.baseline_chosen and self.baseline in self.columns):
            self.baseline_chosen = False
            self.baseline = "none" if "none" in self.columns else next(iter(self.columns), None)

    def set_baseline(self, key: str) -> None:
        """The user's choice of baseline: kept until that column goes."""
        if key in self.columns:
            self.baseline, self.baseline_chosen = key, True
            self._touch()

    def mismatches(self):
        """The columns that do not compare with final (else the first), by their summaries
        (``core.report.comparable``)."""
        from hermit_tui.core.report.comparable import summaries_mismatches

        summaries = {k: c.summary for k, c in self.columns.items() if c.summary is not None}
        return summaries_mismatches(summaries)

    def set_threshold(self, threshold: float) -> None:
        """The success threshold the views use for solved-at-least-once, pass^k and the grid's marks (hermit's
        files keep 1.0). Useful when scores are not on [0, 1]."""
        self.threshold = float(threshold)
        for col in self.columns.values():
            col.rethreshold(self.threshold)
        self._touch()

    def live_cost(self) -> tuple[float, int, int, int]:
        """(known cost, unknown-cost attempts, attempts done, attempts expected) over the live columns."""
        live = [c for c in self.columns.values() if c.source == "live"]
        return (
            sum(c.known_cost for c in live),
            sum(c.unknown_cost for c in live),
            sum(c.done for c in live),
            sum(c.expected for c in live),
        )

    def scores_outside_unit(self) -> int:
        return sum(col.outside_unit for col in self.columns.values())

    def remove_column(self, key: str) -> None:
        self.columns.pop(key, None)
        self.order_columns()
        self._touch()

    # -- reading --------------------------------------------------------------------------------------------------
    @property
    def keys(self) -> list[str]:
        return list(self.columns)

    def search_text(self, task_id: str) -> str:
        row = self.tasks.get(task_id, {})
        return " ".join([task_id, *(str(v) for v in row.values())]).lower()

    def _search_texts(self, ids: list[str]) -> list[str]:
        """The search text of each task id, lower case (kept: the tasks do not change within a config)."""
        n, texts = self._search
        if n < len(ids):
            texts = texts + [self.search_text(t) for t in ids[n:]]
            self._search = (len(ids), texts)
        return texts

    def rows(
        self,
        *,
        keys: list[str] | None = None,
        filter: Filter = "all",
        search: str = "",
        sort: str = "id",
        reverse: bool = False,
        compare: tuple[str, str] | None = None,
        label: str | None = None,
        only: Collection[str] | None = None,
        pause: Callable[[], None] | None = None,
    ) -> TaskRows:
        """The per-task table (a sequence of :class:`TaskRow`, built as they are read). ``compare`` = (baseline,
        candidate) for the regression/improvement filters (default: the store's baseline and the last column).
        ``label``: only tasks with an attempt carrying that label (``ANY_LABEL``: any label; ``UNLABELLED``: a
        failure carrying none). ``only``: just these task ids (a slice). Safe to call from a worker thread while the
        store changes (a snapshot of the ids)."""
        keys = keys if keys is not None else self.keys
        ids = self.task_ids[:]
        cols = [self.columns[k] for k in keys if k in self.columns]
        base_key = self.baseline if self.baseline in self.columns else (keys[0] if keys else None)
        base = self.columns.get(base_key) if base_key else None
        if compare is None and len(cols) >= 2:
            compare = (base_key or cols[0].key, cols[-1].key if cols[-1].key != base_key else cols[0].key)
        needle = search.strip().lower()
        search_mask = None
        if needle:
            texts = self._search_texts(ids)
            search_mask = np.fromiter((needle in t for t in texts[: len(ids)]), dtype=bool, count=len(ids))
        label_mask = None
        if label is not None:
            label_mask = np.zeros(len(ids), dtype=bool)
            wanted = self._label_tasks(label, cols)
            where = [g for g in map(self._task_pos.get, wanted) if g is not None and g < len(ids)]
            label_mask[where] = True
        if only is not None:
            only_mask = np.zeros(len(ids), dtype=bool)
            where = [g for g in map(self._task_pos.get, only) if g is not None and g < len(ids)]
            only_mask[where] = True
            label_mask = only_mask if label_mask is None else label_mask & only_mask
        pair = None if compare is None else (self.columns.get(compare[0]), self.columns.get(compare[1]))
        return compute_rows(
            ids, cols, base, pair, filter, search_mask, label_mask, sort, reverse, self._task_pos, pause
        )

    def error_groups(self) -> list[tuple[str, str, dict[str, list[tuple[str, int]]]]]:
        """Every error and judge_error attempt grouped by (status, message): per column, the (task, repeat) keys.
        Largest groups first."""
        groups: dict[tuple[str, str], dict[str, list[tuple[str, int]]]] = {}
        for key, col in self.columns.items():
            ix = col.index
            rows = ix.latest()
            status = ix.status
            rows = rows[status[rows] != 0]
            ids, task, rep, errors = ix.ids, ix.task, ix.repeat, col.table.errors
            for r in rows.tolist():
                group = groups.setdefault((STATUSES[status[r]], errors.get(r) or ""), {})
                group.setdefault(key, []).append((ids[task[r]], int(rep[r])))
        ordered = sorted(groups.items(), key=lambda kv: -sum(len(v) for v in kv[1].values()))
        return [(status, message, {k: sorted(v) for k, v in per.items()}) for (status, message), per in ordered]


def _append_new_ids(order: list[str], pos: dict[str, int], ids: Iterable[str]) -> None:
    """Append to ``order`` the ids ``pos`` does not hold, in order, each once, and their positions to ``pos``. C
    loops over slices: 111,112 ids in ~70 ms where one Python step per id took 0.1-0.2 s, and a thread doing it
    lets go of the interpreter lock between slices."""
    ids = list(ids)
    for start in range(0, len(ids), LOOKUP_SLICE):
        fresh = [t for t in dict.fromkeys(ids[start : start + LOOKUP_SLICE]) if t not in pos]
        pos.update(zip(fresh, range(len(order), len(order) + len(fresh))))
        order.extend(fresh)


def index_task_ids(ids: Iterable[str]) -> tuple[list[str], dict[str, int]]:
    """Task ids in order, each once, and their positions: what ``reset(..., indexed=)`` takes, worked out in a
    worker thread rather than on the event loop."""
    order: list[str] = []
    pos: dict[str, int] = {}
    _append_new_ids(order, pos, ids)
    return order, pos


def build_stored(
    stored: StoredEvaluation,
    threshold: float,
    *,
    key: str | None = None,
    table=None,
    annotations: AnnotationsFile | None = None,
    pause: Callable[[], None] | None = None,
) -> Column:
    """An evaluation read from disk as a column, ready for ``EvalStore.add_column`` (the whole reading: meant for a
    worker thread; it touches no store; ``pause``: called between steps, to give way to the interface). InputError
    when its results.jsonl cannot be read."""
    if table is None:
        from hermit_tui.core.records.columns import read_table

        table = read_table(stored.results_path, pause)
    if annotations is None:
        try:
            annotations = read_annotations(stored.folder)
        except InputError as exc:
            annotations = AnnotationsFile(skipped=[str(exc)])
    return disk_column(
        stored, table, threshold, annotations.entries, [*table.skipped, *annotations.skipped], key or stored.name, pause
    )


__all__ = [  # the columns', rows' and triage's names are part of the store's API
    "ANY_LABEL",
    "FILTERS",
    "FILTER_NAMES",
    "LABEL_FILTER_NAMES",
    "UNLABELLED",
    "WALK_GROUPS",
    "Cell",
    "Column",
    "EvalStore",
    "Failure",
    "Filter",
    "TaskRow",
    "TaskRows",
    "build_stored",
    "index_task_ids",
    "selector_rank",
]
