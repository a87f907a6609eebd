"""The store's triage state: annotations per evaluation, the failure taxonomy and the walk over unlabelled failures.

:class:`TriageStore` is mixed into ``EvalStore`` (store.py): it reads the store's columns and keeps the figures cheap
enough to recompute on every update of a 100,000-attempt store (running counts, the columns' cells), except the
walk, which is cached until the records change (the app computes it in a worker on a large store).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from hermit_tui.core.annotations import Annotation, SelectorTaxonomy, is_failure, pair_changes

if TYPE_CHECKING:
    from hermit_tui.store import Column

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


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0


class TriageStore:
    """Triage methods of ``EvalStore`` (which provides ``columns``, ``baseline``, ``threshold``, ``task_ids``,
    ``repeats``, ``label_set``, ``version``, ``annotations_version``, ``_walk`` and ``_touch``)."""

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
        ``core.annotations.selector_taxonomy``, from the column's running counts: the cost grows with the
        annotations, not with the attempts)."""
        return {k: self._column_taxonomy(c) for k, c in self.columns.items()}

    def _column_taxonomy(self, col: Column) -> SelectorTaxonomy:
        live = col.live_annotations()
        counts: dict[str, int] = {}
        failure_counts: dict[str, int] = {}
        labelled_failures = labelled = notes = 0
        corrected: dict[str, float] = {}  # task -> sum of (corrected - recorded) over its corrected attempts
        for key, ann in live.items():
            rec = col.records[key]
            notes += bool(ann.note)
            if ann.corrected_score is not None:
                corrected[key[0]] = corrected.get(key[0], 0.0) + ann.corrected_score - _finite(rec.judge.score)
            if not ann.labels:
                continue
            labelled += 1
            failed = is_failure(rec, col.threshold)
            labelled_failures += failed
            for name in ann.labels:
                counts[name] = counts.get(name, 0) + 1
                if failed:
                    failure_counts[name] = failure_counts.get(name, 0) + 1
        recorded_mean = corrected_mean = None
        if corrected:
            means = {tid: (cell.total / cell.n, cell.n) for tid, cell in col.cells.items() if cell.n}
            if means:
                recorded_mean = sum(m for m, _ in means.values()) / len(means)
                corrected_mean = recorded_mean + sum(d / means[tid][1] for tid, d in corrected.items()
                                                     if tid in means) / len(means)
        rank = {name: i for i, name in enumerate(self.label_set)}

        def ordered(c: dict[str, int]) -> dict[str, int]:
            return dict(sorted(c.items(), key=lambda kv: (-kv[1], rank.get(kv[0], len(rank)), kv[0])))
        return SelectorTaxonomy(label=col.key, attempts=col.done, failures=col.failures,
                                labelled_failures=labelled_failures, labelled_attempts=labelled,
                                counts=ordered(counts), failure_counts=ordered(failure_counts), notes=notes,
                                corrected=sum(1 for a in live.values() if a.corrected_score is not None),
                                stale=len(col.annotations) - len(live), corrected_mean=corrected_mean,
                                recorded_mean=recorded_mean)

    def pair_taxonomy(self, a: str, b: str):
        """Per label, the tasks ``b`` fixed (``a`` had the label, ``b`` does not), introduced, and not triaged yet
        (``core.annotations.pair_taxonomy``, from the columns' cells: the cost grows with the tasks)."""
        ca, cb = self.columns[a], self.columns[b]
        paired = {t for t, c in ca.cells.items() if c.n} & {t for t, c in cb.cells.items() if c.n}
        return pair_changes(a, b, self._task_labels(ca), self._task_labels(cb), self._untriaged(ca),
                            self._untriaged(cb), paired, self.label_set, self.task_ids)

    @staticmethod
    def _task_labels(col: Column) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for key, ann in col.live_annotations().items():
            if ann.labels:
                out.setdefault(key[0], set()).update(ann.labels)
        return out

    @staticmethod
    def _untriaged(col: Column) -> set[str]:
        """Tasks with a failure that carries no label."""
        labelled: dict[str, int] = {}
        for key, ann in col.live_annotations().items():
            if ann.labels and is_failure(col.records[key], col.threshold):
                labelled[key[0]] = labelled.get(key[0], 0) + 1
        return {tid for tid, cell in col.cells.items() if cell.failed > labelled.get(tid, 0)}

    def labels_in_use(self) -> dict[str, int]:
        """Every label some attempt carries (attempts per label), the run's set first, then the others."""
        counts: dict[str, int] = {}
        for col in self.columns.values():
            for ann in col.live_annotations().values():
                for name in ann.labels:
                    counts[name] = counts.get(name, 0) + 1
        rank = {name: i for i, name in enumerate(self.label_set)}
        return dict(sorted(counts.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))

    def failure_walk(self) -> list[Failure]:
        """Every failed attempt of the current (not archived) evaluations in triage order: regressions against the
        baseline first (the largest drops of a task's mean first), then pipeline and judge errors, then failures on
        flaky tasks, then the other failures; within a group by task, then column, then repeat. A failure is an
        attempt with status error/judge_error or a score below the success threshold (``core.annotations``)."""
        cols = [c for c in self.columns.values() if not c.archived]
        stamp = (self.data_version, self.threshold, self.baseline, tuple((c.key, c.changes) for c in cols))
        if self._walk is not None and self._walk[0] == stamp:
            return self._walk[1]
        rank = {tid: i for i, tid in enumerate(self.task_ids)}
        base = self.columns.get(self.baseline) if self.baseline else None
        threshold, groups = self.threshold, WALK_GROUPS
        keyed = []
        for c_index, col in enumerate(cols):
            tasks = {}  # the tasks with a failure: (regression drop, flaky, rank)
            for tid, cell in col.cells.items():
                if not cell.failed:
                    continue
                bcell = base.cells.get(tid) if base is not None and col is not base else None
                drop = bcell.mean - cell.mean if bcell is not None and bcell.n and cell.n else 0.0
                tasks[tid] = (drop if drop > 1e-9 else 0.0, cell.flaky, rank.get(tid, len(rank)))
            for (tid, rep), rec in col.records.items():
                found = tasks.get(tid)
                if found is None or (rec.status == "ok" and rec.judge.score >= threshold):
                    continue
                drop, flaky, place = found
                group = 0 if drop else 1 if rec.status != "ok" else 2 if flaky else 3
                keyed.append(((group, -drop, place, tid, c_index, rep), (col.key, tid, rep, groups[group])))
        keyed.sort(key=lambda kv: kv[0])
        walk = [Failure(*f) for _, f in keyed]
        self._walk = (stamp, walk)
        return walk

    def walk_ready(self) -> bool:
        """The walk is computed for the store as it is (``failure_walk`` returns at once)."""
        cols = [c for c in self.columns.values() if not c.archived]
        stamp = (self.data_version, self.threshold, self.baseline, tuple((c.key, c.changes) for c in cols))
        return self._walk is not None and self._walk[0] == stamp

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
            done += sum(1 for k, a in col.live_annotations().items()
                        if a.labels and is_failure(col.records[k], col.threshold))
        return done, total

    def next_unlabelled(self, after: tuple[str, str, int] | None = None) -> Failure | None:
        """The first unlabelled failure after ``after`` (column, task, repeat) on the walk, wrapping around; from the
        start when ``after`` is not a failure on it. None when every failure carries a label."""
        walk = self.failure_walk()
        start = 0
        if after is not None:
            at = next((i for i, f in enumerate(walk) if (f.key, f.task_id, f.repeat) == after), None)
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
            live = col.live_annotations()
            if label == UNLABELLED:
                for key, rec in col.records.items():
                    ann = live.get(key)
                    if (ann is None or not ann.labels) and is_failure(rec, self.threshold):
                        out.add(key[0])
            else:
                out.update(k[0] for k, a in live.items() if a.labels and (label == ANY_LABEL or label in a.labels))
        return out
