"""The store's triage state: annotations per evaluation, the failure taxonomy and the walk over unlabelled failures.

:class:`TriageStore` is mixed into ``EvalStore`` (dashboard/state/store.py): it reads the store's columns. The figures
come from the columns' arrays (``core.records.taxonomy``: the cost grows with the annotations, not the attempts) and the
walk is sorted with numpy, then cached until the records change (the app computes it in a worker on a large store); its
failures are built as they are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from hermit_tui.core.records import taxonomy as column_taxonomy
from hermit_tui.core.records.annotations import Annotation, SelectorTaxonomy
from hermit_tui.core.records.columns import OK

if TYPE_CHECKING:
    from hermit_tui.dashboard.state.column import Column

#: The per-task table's label filter, beside a label's own name: tasks with any label, tasks with a failure that
#: carries none.
ANY_LABEL, UNLABELLED = "\x00any", "\x00unlabelled"
LABEL_FILTER_NAMES = {ANY_LABEL: "any label", UNLABELLED: "unlabelled failures"}
#: The triage walk's groups, in the order it visits them.
WALK_GROUPS = ("regression", "error", "flaky", "failure")


class Failure(NamedTuple):
    """One failed attempt on the triage walk."""

    key: str  # the column
    task_id: str
    repeat: int
    group: str  # one of WALK_GROUPS


class Walk(Sequence):
    """The failures of the walk in order, as arrays; ``walk[i]`` builds the :class:`Failure`."""

    def __init__(self, cols: list[Column], col: np.ndarray, row: np.ndarray, group: np.ndarray):
        self.cols, self.col, self.row, self.group = cols, col, row, group

    def __len__(self) -> int:
        return len(self.row)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        c = self.cols[int(self.col[i])]
        row = int(self.row[i])
        table = c.table
        return Failure(c.key, table.ids[table.task[row]], int(table.repeat[row]), WALK_GROUPS[int(self.group[i])])

    def position(self, key: str, task_id: str, repeat: int) -> int | None:
        """Where the failure (column, task, repeat) is on the walk, None when it is not a failure on it."""
        for c_index, c in enumerate(self.cols):
            if c.key != key:
                continue
            row = c.index.row_of(task_id, repeat)
            if row < 0:
                return None
            found = np.flatnonzero((self.col == c_index) & (self.row == row))
            return int(found[0]) if len(found) else None
        return None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, Walk)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _live_rows(col: Column) -> dict:
    """The column's live annotations with their rows (what core.records.taxonomy takes)."""
    return {k: (a, col.index.row_of(*k)) for k, a in col.live_annotations().items()}


class TriageStore:
    """Triage methods of ``EvalStore`` (which provides ``columns``, ``baseline``, ``threshold``, ``task_ids``,
    ``repeats``, ``label_set``, ``version``, ``annotations_version``, ``_walk`` and ``_touch``)."""

    # what EvalStore provides (declared for the type checker; set in EvalStore.__init__)
    columns: dict[str, Column]
    baseline: str | None
    threshold: float
    task_ids: list[str]
    repeats: int
    label_set: list[str]
    version: int
    annotations_version: int
    _task_pos: dict[str, int]
    _walk: tuple[tuple[Any, ...], Walk] | None

    if TYPE_CHECKING:

        def _touch(self) -> None: ...

    @property
    def data_version(self) -> int:
        """``version`` without the bumps of annotation changes: figures computed from the records only (the compare
        screen's statistics) need not be computed again when a label changes."""
        return self.version - self.annotations_version

    def _annotations_touched(self, col: Column) -> None:
        col.changes += 1
        self.annotations_version += 1
        self._touch()

    def set_annotations(self, key: str, entries: dict[tuple[str, int], Annotation]) -> None:
        """An evaluation's annotations as read from (or just written to) its annotations.jsonl."""
        col = self.columns.get(key)
        if col is not None:
            col.annotations = dict(entries)
            self._annotations_touched(col)

    def put_annotation(self, key: str, annotation: Annotation) -> None:
        """One attempt's new annotation (an empty one clears it)."""
        col = self.columns.get(key)
        if col is None:
            return
        if annotation.empty:
            col.annotations.pop(annotation.key, None)
        else:
            col.annotations[annotation.key] = annotation
        self._annotations_touched(col)

    def set_label_set(self, labels: list[str]) -> None:
        self.label_set = list(labels)
        self.annotations_version += 1
        self._touch()

    def annotation(self, key: str, task_id: str, repeat: int) -> Annotation | None:
        col = self.columns.get(key)
        return col.annotation(task_id, repeat) if col is not None else None

    def taxonomy(self) -> dict[str, SelectorTaxonomy]:
        """Per column: attempts per label, failures and how many carry a label (the figures of
        ``core.records.annotations.selector_taxonomy``, from the column's running counts: the cost grows with the
        annotations, not with the attempts)."""
        return {k: self._column_taxonomy(c) for k, c in self.columns.items()}

    def _column_taxonomy(self, col: Column) -> SelectorTaxonomy:
        return column_taxonomy.selector_taxonomy(
            col.key, col.index, col.annotations, col.threshold, self.label_set, live=_live_rows(col)
        )

    def pair_taxonomy(self, a: str, b: str):
        """Per label, the tasks ``b`` fixed (``a`` had the label, ``b`` does not), introduced, and not triaged yet
        (``core.records.annotations.pair_taxonomy``, from the columns)."""
        ca, cb = self.columns[a], self.columns[b]
        return column_taxonomy.pair_taxonomy(
            a,
            ca.index,
            ca.annotations,
            b,
            cb.index,
            cb.annotations,
            self.label_set,
            self.task_ids,
            ca.threshold,
            live_a=_live_rows(ca),
            live_b=_live_rows(cb),
        )

    def labels_in_use(self) -> dict[str, int]:
        """Every label some attempt carries (attempts per label), the run's set first, then the others."""
        counts: dict[str, int] = {}
        for col in self.columns.values():
            for ann in col.live_annotations().values():
                for name in ann.labels:
                    counts[name] = counts.get(name, 0) + 1
        rank = {name: i for i, name in enumerate(self.label_set)}
        return dict(sorted(counts.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))

    def failure_walk(self) -> Walk:
        """Every failed attempt of the current (not archived) evaluations in triage order: regressions against the
        baseline first (the largest drops of a task's mean first), then pipeline and judge errors, then failures on
        flaky tasks, then the other failures; within a group by task, then column, then repeat. A failure is an
        attempt with status error/judge_error or a score below the success threshold (``core.records.annotations``)."""
        cols = [c for c in self.columns.values() if not c.archived]
        stamp = self._walk_stamp(cols)
        if self._walk is not None and self._walk[0] == stamp:
            return self._walk[1]
        pos = self._task_pos
        base = self.columns.get(self.baseline) if self.baseline else None
        parts = []
        for c_index, col in enumerate(cols):
            ix = col.index
            rows = ix.latest()
            rows = rows[column_taxonomy.failed_rows(ix, rows, self.threshold)]
            local = ix.task[rows].astype(np.int64)
            n, total = ix.cell("n").astype(float), ix.cell("total")
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
                drop = np.zeros(len(ix.ids))
                if base is not None and col is not base:
                    b_loc = np.fromiter(map(base.table.index.get, ix.ids, repeat(-1)), np.int64, len(ix.ids))
                    bn, btotal = base.index.cell("n"), base.index.cell("total")
                    ok = (b_loc >= 0) & (b_loc < len(bn))
                    bmean = np.full(len(ix.ids), np.nan)
                    bmean[ok] = np.where(bn[b_loc[ok]] > 0, btotal[b_loc[ok]] / np.maximum(bn[b_loc[ok]], 1), np.nan)
                    drop = bmean - mean
                drop = np.where(drop > 1e-9, drop, 0.0)
                solved, spread = ix.cell("solved"), ix.cell("hi") - ix.cell("lo")
                flaky = (n > 1) & (((solved > 0) & (solved < n)) | (spread > 1e-9))
            place = np.fromiter(map(pos.get, ix.ids, repeat(len(pos))), np.int64, len(ix.ids))
            d = drop[local]
            group = np.where(d > 0, 0, np.where(ix.status[rows] != OK, 1, np.where(flaky[local], 2, 3)))
            parts.append((np.full(len(rows), c_index), rows, group, -d, place[local], ix.repeat[rows]))
        if parts:
            c_arr, r_arr, g_arr, d_arr, p_arr, rep_arr = (np.concatenate(x) for x in zip(*parts))
            order = np.lexsort((rep_arr, c_arr, p_arr, d_arr, g_arr))
            walk = Walk(cols, c_arr[order], r_arr[order], g_arr[order])
        else:
            walk = Walk(cols, *(np.zeros(0, np.int64),) * 3)
        self._walk = (stamp, walk)
        return walk

    def _walk_stamp(self, cols: list[Column]) -> tuple:
        return (self.data_version, self.threshold, self.baseline, tuple((c.key, c.changes) for c in cols))

    def walk_ready(self) -> bool:
        """The walk is computed for the store as it is (``failure_walk`` returns at once)."""
        cols = [c for c in self.columns.values() if not c.archived]
        return self._walk is not None and self._walk[0] == self._walk_stamp(cols)

    def is_labelled(self, failure: Failure) -> bool:
        ann = self.annotation(failure.key, failure.task_id, failure.repeat)
        return ann is not None and bool(ann.labels)

    def triage_progress(self) -> tuple[int, int]:
        """(failures carrying a label, failures) over the current evaluations (from running counts: cheap)."""
        done = total = 0
        for col in self.columns.values():
            if col.archived:
                continue
            total += col.failures
            ix = col.index
            done += sum(1 for k, a in col.live_annotations().items() if a.labels and ix.failed_row(ix.row_of(*k)))
        return done, total

    def next_unlabelled(self, after: tuple[str, str, int] | None = None) -> Failure | None:
        """The first unlabelled failure after ``after`` (column, task, repeat) on the walk, wrapping around; from the
        start when ``after`` is not a failure on it. None when every failure carries a label."""
        walk = self.failure_walk()
        start = 0
        if after is not None:
            at = walk.position(*after)
            start = 0 if at is None else at + 1
        for i in range(len(walk)):
            f = walk[(start + i) % len(walk)]
            if not self.is_labelled(f):
                return f
        return None

    def _label_tasks(self, label: str, cols: list[Column]) -> set[str]:
        """The tasks the label filter keeps, over ``cols``."""
        out: set[str] = set()
        for col in cols:
            if label == UNLABELLED:
                out |= column_taxonomy.untriaged_tasks(col.index, _live_rows(col), self.threshold)
            else:
                out.update(
                    k[0]
                    for k, a in col.live_annotations().items()
                    if a.labels and (label == ANY_LABEL or label in a.labels)
                )
        return out
