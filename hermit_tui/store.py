"""The dashboard's state: what the engine reported and what was read from disk, aggregated per selector and per task.

Data flows one way: engine events (or files) -> ``EvalStore`` -> widgets. The store is plain Python (no Textual), so
it is tested without a terminal; widgets read it and never write it.
"""
from __future__ import annotations

import gc
import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hermit_tui.core import events as ev
from hermit_tui.core.annotations import (
    DEFAULT_LABEL_SET, Annotation, AnnotationsFile, applying, is_failure, read_annotations,
)
from hermit_tui.core.errors import InputError
from hermit_tui.core.evalstore import StoredEvaluation
from hermit_tui.core.records import SOLVED_THRESHOLD, AttemptRecord, Summary
from hermit_tui.store_triage import (  # noqa: F401 - the triage names are part of the store's API
    ANY_LABEL, LABEL_FILTER_NAMES, UNLABELLED, WALK_GROUPS, Failure, TriageStore,
)

Filter = Literal["all", "errors", "regressions", "improvements", "flaky", "unknown_cost"]
FILTERS: tuple[Filter, ...] = ("all", "errors", "regressions", "improvements", "flaky", "unknown_cost")
FILTER_NAMES = {"all": "all tasks", "errors": "errors only", "regressions": "regressions", "improvements":
                "improvements", "flaky": "flaky", "unknown_cost": "unknown cost"}
@dataclass(slots=True)
class Cell:
    """One task under one selector: its attempts aggregated."""

    total: float = 0.0
    n: int = 0
    solved: int = 0
    errors: int = 0
    judge_errors: int = 0
    unknown_cost: int = 0
    failed: int = 0  # attempts that did not solve the task (core.annotations.is_failure)
    lo: float = math.inf
    hi: float = -math.inf

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def solved_once(self) -> bool:
        return self.solved > 0

    @property
    def flaky(self) -> bool:
        """Some repeats solved the task and some did not, or the scores differ across repeats."""
        return self.n > 1 and (0 < self.solved < self.n or self.hi - self.lo > 1e-9)

    def add(self, rec: AttemptRecord, threshold: float = SOLVED_THRESHOLD) -> None:
        s = rec.judge.score
        self.total += s
        self.n += 1
        self.solved += s >= threshold
        self.errors += rec.status == "error"
        self.judge_errors += rec.status == "judge_error"
        self.unknown_cost += rec.cost_usd is None
        self.failed += rec.status != "ok" or not s >= threshold
        self.lo = min(self.lo, s)
        self.hi = max(self.hi, s)


@dataclass
class Column:
    """One evaluation shown side by side: a live one, or one read from disk."""

    key: str
    label: str
    selector: str
    source: Literal["live", "disk"]
    commit: str | None = None
    expected: int = 0
    summary: Summary | None = None
    records: dict[tuple[str, int], AttemptRecord] = field(default_factory=dict)
    tracebacks: dict[tuple[str, int], str] = field(default_factory=dict)
    cells: dict[str, Cell] = field(default_factory=dict)
    running: bool = False
    threshold: float = SOLVED_THRESHOLD  # what counts as solved in the views (the files keep hermit's 1.0)
    folder: Path | None = None  # where a disk column was read from (a live one: where it is written)
    archived: bool = False  # an archived (earlier) evaluation: shown, never retried or published
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    score_sum: float = 0.0
    errors: int = 0
    judge_errors: int = 0
    unknown_cost: int = 0
    known_cost: float = 0.0
    outside_unit: int = 0  # attempts scored outside [0, 1]
    failures: int = 0  # attempts that did not solve their task (core.annotations.is_failure at ``threshold``)
    note: str = ""
    # the evaluation's triage annotations (annotations.jsonl), latest per (task, repeat); some may describe an
    # earlier attempt that was re-run since: ``live_annotations`` leaves those out
    annotations: dict[tuple[str, int], Annotation] = field(default_factory=dict)
    changes: int = 0  # bumped when a record or an annotation changes (caches key on it)
    _live: tuple[int, dict] | None = None

    @property
    def done(self) -> int:
        return len(self.records)

    @property
    def mean(self) -> float | None:
        return self.score_sum / self.done if self.done else None

    @property
    def title(self) -> str:
        return self.key

    def eta_s(self) -> float | None:
        if not self.running or not self.done or self.expected <= self.done:
            return None
        elapsed = time.monotonic() - self.started
        return elapsed / self.done * (self.expected - self.done)

    def cost_text(self) -> str:
        """Known cost so far, with the unknown ones counted, never shown as $0."""
        known = f"${self.known_cost:.4f}"
        return f"{known} + {self.unknown_cost} unknown" if self.unknown_cost else known

    def add(self, rec: AttemptRecord, tb: str | None = None) -> None:
        key = (rec.id, rec.repeat)
        self.changes += 1
        if key in self.records:  # a retried attempt replaces the earlier one
            self._remove(self.records[key])
        self.records[key] = rec
        if tb:
            self.tracebacks[key] = tb
        else:
            self.tracebacks.pop(key, None)
        self.cells.setdefault(rec.id, Cell()).add(rec, self.threshold)
        self.failures += is_failure(rec, self.threshold)
        self.score_sum += rec.judge.score
        self.errors += rec.status == "error"
        self.judge_errors += rec.status == "judge_error"
        self.outside_unit += not 0.0 <= rec.judge.score <= 1.0
        if rec.cost_usd is None:
            self.unknown_cost += 1
        else:
            self.known_cost += rec.cost_usd

    def _remove(self, old: AttemptRecord) -> None:
        self.failures -= is_failure(old, self.threshold)
        self.score_sum -= old.judge.score
        self.outside_unit -= not 0.0 <= old.judge.score <= 1.0
        self.errors -= old.status == "error"
        self.judge_errors -= old.status == "judge_error"
        if old.cost_usd is None:
            self.unknown_cost -= 1
        else:
            self.known_cost -= old.cost_usd
        cell = Cell()
        for rec in self.records.values():
            if rec.id == old.id and rec is not old:
                cell.add(rec, self.threshold)
        self.cells[old.id] = cell

    def rethreshold(self, threshold: float) -> None:
        """Recount what is solved under another success threshold."""
        self.threshold = threshold
        self.cells = {}
        self.failures = 0
        for rec in self.records.values():
            self.cells.setdefault(rec.id, Cell()).add(rec, threshold)
            self.failures += is_failure(rec, threshold)

    def attempts_of(self, task_id: str) -> list[AttemptRecord]:
        return sorted((r for (t, _), r in self.records.items() if t == task_id), key=lambda r: r.repeat)

    def live_annotations(self) -> dict[tuple[str, int], Annotation]:
        """The annotations that describe the attempts recorded now."""
        if self._live is None or self._live[0] != self.changes:
            self._live = (self.changes, applying(self.annotations, self.records))
        return self._live[1]

    def annotation(self, task_id: str, repeat: int) -> Annotation | None:
        return self.live_annotations().get((task_id, repeat))

    def stale_annotation(self, task_id: str, repeat: int) -> Annotation | None:
        """An annotation made on an earlier attempt at this task and repeat (re-run since), if any."""
        ann = self.annotations.get((task_id, repeat))
        return ann if ann is not None and (task_id, repeat) not in self.live_annotations() else None


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


@dataclass(slots=True)
class TaskRow:
    """A row of the per-task table."""

    task_id: str
    cells: list[Cell | None]
    deltas: list[float | None]  # each column's mean minus the baseline column's mean

    def value(self, sort_key: str, columns: list[str]) -> tuple:
        """A sort key: missing values sort last whatever the direction."""
        if sort_key == "id":
            return (0, self.task_id)
        kind, _, name = sort_key.partition(":")
        if name not in columns:
            return (1, 0.0)
        i = columns.index(name)
        if kind == "mean":
            v = self.cells[i].mean if self.cells[i] else None
        elif kind == "solved":
            v = float(self.cells[i].solved_once) if self.cells[i] and self.cells[i].n else None
        else:
            v = self.deltas[i]
        return (1, 0.0) if v is None else (0, v)


class EvalStore(TriageStore):
    """Everything the dashboard shows about one config's evaluations (the triage part: store_triage.py)."""

    def __init__(self, tasks: dict[str, dict] | None = None, task_ids: Iterable[str] = ()):
        self.tasks: dict[str, dict] = dict(tasks or {})
        self.task_ids: list[str] = list(task_ids)
        self.columns: dict[str, Column] = {}
        self.baseline: str | None = None
        self.log: list[tuple[str, str]] = []  # (level, message)
        self.version = 0
        self.repeats = 1
        self.run_active = False
        self.run_cancelled = False
        self.warnings: list[str] = []
        self.threshold = SOLVED_THRESHOLD
        self.baseline_chosen = False  # the user picked a baseline: keep it when columns come and go
        self.in_flight: set[tuple[str, str, int]] = set()  # (label, task, repeat) started, not finished yet
        self._search_text: dict[str, str] = {}
        self.max_cost: float | None = None  # the launch's --max-cost (USD)
        self.stop_reason: str | None = None  # why the last launch stopped early without a cancel
        self.label_set: list[str] = list(DEFAULT_LABEL_SET)  # the run's labels, keys 1-9 (hermit-tui's settings)
        self.annotations_version = 0  # the part of ``version`` that annotation changes bumped
        self._walk: tuple[tuple, list[Failure]] | None = None
        # --stop-when-decided: the launch's plan, and per candidate its looks against the baseline, round by round
        self.sequential = None  # core.stopping.SequentialPlan of the live (or last) launch, None without one
        self.sequential_looks: dict[str, list] = {}
        self.sequential_stopped = False
        self.sequential_tasks = 0  # test tasks of that launch (a round's attempts per selector)

    # -- feeding --------------------------------------------------------------------------------------------------
    def _touch(self) -> None:
        self.version += 1

    def apply(self, event: ev.Event) -> None:
        """Take one engine event."""
        if isinstance(event, ev.AttemptFinished):
            col = self.columns.get(event.label)
            if col is not None:
                col.add(event.record, event.traceback)
            self.in_flight.discard((event.label, event.record.id, event.record.repeat))
        elif isinstance(event, ev.AttemptStarted):
            self.in_flight.add((event.label, event.task_id, event.repeat))
        elif isinstance(event, ev.RunStarted):
            known = self._known_ids()
            for tid in event.task_ids:
                if tid not in known:
                    self.task_ids.append(tid)
                    known.add(tid)
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
            col = self.columns[event.label] = Column(key=event.label, label=event.label, selector=event.selector,
                                                     source="live", commit=event.commit, expected=event.total,
                                                     running=True, threshold=self.threshold,
                                                     folder=Path(event.folder) if event.folder else None)
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

    def apply_many(self, events: Iterable[ev.Event]) -> int:
        n = 0
        for event in events:
            self.apply(event)
            n += 1
        return n

    def _known_ids(self) -> set[str]:
        return set(self.task_ids)

    def add_stored(self, stored: StoredEvaluation, *, key: str | None = None, results=None,
                   annotations: AnnotationsFile | None = None) -> Column:
        """Put an evaluation read from disk beside the others.

        Reading 100,000 records creates millions of objects that live as long as the store: the cyclic garbage
        collector would walk them again and again while they are made (most of the time spent), so it is paused
        here and the survivors are frozen out of later collections."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._add_stored(stored, key=key, results=results, annotations=annotations)
        finally:
            gc.freeze()
            if enabled:
                gc.enable()

    def _add_stored(self, stored: StoredEvaluation, *, key: str | None, results=None,
                    annotations: AnnotationsFile | None = None) -> Column:
        """``results``: the evaluation's results file already read (off the event loop), else read here; the same
        for ``annotations``."""
        results = results if results is not None else stored.load_results()
        if annotations is None:
            try:
                annotations = read_annotations(stored.folder)
            except InputError as exc:
                annotations = AnnotationsFile(skipped=[str(exc)])
        key = key or (stored.name if stored.name not in self.columns or self.columns[stored.name].source == "disk"
                      else f"{stored.name} (disk)")
        s = stored.summary
        col = Column(key=key, label=stored.label, selector=s.adapter if s else stored.label, source="disk",
                     commit=s.commit if s else None, summary=s, folder=stored.folder, archived=stored.archived,
                     threshold=self.threshold,
                     expected=(s.expected_attempts or s.tasks * s.repeats) if s else len(results.records))
        for rec in results.records:
            col.add(rec, rec.traceback)
        col.annotations = dict(annotations.entries)
        if results.skipped or annotations.skipped:
            col.note = "; ".join([*results.skipped, *annotations.skipped])
        known = self._known_ids()
        for rec in results.records:
            if rec.id not in known:
                self.task_ids.append(rec.id)
                known.add(rec.id)
        if s is not None:
            self.repeats = max(self.repeats, s.repeats)
        self.columns[key] = col
        self.order_columns()
        self._touch()
        return col

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
        """The columns that do not compare with final (else the first), by their summaries (``core.comparable``)."""
        from hermit_tui.core.comparable import summaries_mismatches
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
        return (sum(c.known_cost for c in live), sum(c.unknown_cost for c in live), sum(c.done for c in live),
                sum(c.expected for c in live))

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
        text = self._search_text.get(task_id)
        if text is None:
            row = self.tasks.get(task_id, {})
            text = " ".join([task_id, *(str(v) for v in row.values())]).lower()
            self._search_text[task_id] = text
        return text

    def rows(self, *, keys: list[str] | None = None, filter: Filter = "all", search: str = "",
             sort: str = "id", reverse: bool = False, compare: tuple[str, str] | None = None,
             label: str | None = None) -> list[TaskRow]:
        """The per-task table. ``compare`` = (baseline, candidate) for the regression/improvement filters
        (default: the store's baseline and the last column). ``label``: only tasks with an attempt carrying that
        label (``ANY_LABEL``: any label; ``UNLABELLED``: a failure carrying none)."""
        keys = keys if keys is not None else self.keys
        cols = [self.columns[k] for k in keys if k in self.columns]
        base_key = self.baseline if self.baseline in self.columns else (keys[0] if keys else None)
        base = self.columns.get(base_key) if base_key else None
        if compare is None and len(cols) >= 2:
            compare = (base_key or cols[0].key, cols[-1].key if cols[-1].key != base_key else cols[0].key)
        needle = search.strip().lower()
        wanted = self._label_tasks(label, cols) if label is not None else None
        out: list[TaskRow] = []
        for tid in self.task_ids:
            if wanted is not None and tid not in wanted:
                continue
            if needle and needle not in self.search_text(tid):
                continue
            cells = [c.cells.get(tid) for c in cols]
            b = base.cells.get(tid) if base else None
            bmean = b.mean if b else None
            deltas = [None if (c is None or c.mean is None or bmean is None) else c.mean - bmean for c in cells]
            if filter != "all" and not self._keep(filter, tid, cells, compare):
                continue
            out.append(TaskRow(tid, cells, deltas))
        if sort != "id" or reverse:
            names = [c.key for c in cols]
            present = [r for r in out if r.value(sort, names)[0] == 0]
            missing = [r for r in out if r.value(sort, names)[0] != 0]
            present.sort(key=lambda r: r.value(sort, names), reverse=reverse)
            out = present + missing
        return out

    def _keep(self, filter: Filter, tid: str, cells: list[Cell | None], compare) -> bool:
        live = [c for c in cells if c is not None]
        if filter == "errors":
            return any(c.errors or c.judge_errors for c in live)
        if filter == "flaky":
            return any(c.flaky for c in live)
        if filter == "unknown_cost":
            return any(c.unknown_cost for c in live)
        if compare is None:
            return False
        a = self.columns.get(compare[0])
        b = self.columns.get(compare[1])
        ca = a.cells.get(tid) if a else None
        cb = b.cells.get(tid) if b else None
        if not ca or not cb or ca.mean is None or cb.mean is None:
            return False
        d = cb.mean - ca.mean
        return d < -1e-9 if filter == "regressions" else d > 1e-9

    def error_groups(self) -> list[tuple[str, str, dict[str, list[tuple[str, int]]]]]:
        """Every error and judge_error attempt grouped by (status, message): per column, the (task, repeat) keys.
        Largest groups first."""
        groups: dict[tuple[str, str], dict[str, list[tuple[str, int]]]] = {}
        for key, col in self.columns.items():
            for (tid, rep), rec in col.records.items():
                if rec.status != "ok":
                    groups.setdefault((rec.status, rec.error or ""), {}).setdefault(key, []).append((tid, rep))
        ordered = sorted(groups.items(), key=lambda kv: -sum(len(v) for v in kv[1].values()))
        return [(status, message, {k: sorted(v) for k, v in per.items()}) for (status, message), per in ordered]
