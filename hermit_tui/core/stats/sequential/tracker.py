"""The design of a ``--stop-when-decided`` launch (:class:`SequentialPlan`) and the launch's state of the looks
(:class:`RoundTracker`, one ``SequentialMonitor`` or ``ClusteredMonitor`` per candidate), fed from the records.

``hermit-tui eval --stop-when-decided`` runs whole rounds (round ``r`` = repeat ``r`` of every test task under every
selector) and, after each, compares every candidate with the baseline by the group-sequential test of
``core.stats.sequential.monitor``; the launch stops at the end of the first round after which every candidate is decided
("improvement", "regression", or with a margin "equivalent"), at the latest after ``eval.repeats`` rounds.

The launch's own part, the round barrier and the plan made from its options, is ``core.run.rounds``; the looks
recomputed from the files are :mod:`.replay`'s, and how they read :mod:`.text`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.stats.sequential.clustered import ClusteredMonitor
from hermit_tui.core.stats.sequential.look import METHOD, SequentialLook
from hermit_tui.core.stats.sequential.monitor import SequentialMonitor
from hermit_tui.core.stats.sequential.schedule import cluster_codes, cluster_look_order, look_order, look_schedule
from hermit_tui.core.stats.sequential.spending import ALPHA, Spending, candidate_spend


class SequentialPlan(BaseModel):
    """Who is compared with whom in a ``--stop-when-decided`` launch (labels: the folders under eval/)."""

    baseline: str
    candidates: list[str]
    max_rounds: int
    margin: float | None = None
    alpha: float = ALPHA  # family-wise over the candidates
    method: str = METHOD
    spend: float | None = None  # each candidate's boundaries' total (None: candidate_spend over the candidates)
    split_over: int | None = None  # the candidates alpha is split over (None: len(candidates))
    spending: Spending = "hsd"  # the spending function ("obf": a launch recorded before issue 25, item 4)
    batches: int = 1  # looks within the first round (schedule.look_schedule; 1: after whole rounds only)
    futility: float | None = None  # the non-binding futility rule's conditional power (None: none, as before it)
    # the clustered design (--cluster-by / --cluster-file; None: tasks taken as independent): the spec, the
    # mapping's sha256 (as the fingerprint's), and each test task the mapping names with its cluster
    cluster_by: str | None = None
    clusters_sha256: str | None = None
    cluster_of: dict[str, str] | None = None

    @property
    def clustered(self) -> bool:
        return self.clusters_sha256 is not None and self.cluster_of is not None

    def first_round_order(self, task_ids: Sequence[str]) -> list[str]:
        """The order in which round 1's looks take the tasks (whole clusters in the clustered design; the
        anytime-valid design's ``AnytimePlan`` has clusters of its own, and its stream's order)."""
        if self.clusters_sha256 is not None and self.cluster_of is not None:
            return cluster_look_order(task_ids, self.cluster_of)
        return look_order(task_ids)

    @property
    def family(self) -> int:
        return self.split_over if self.split_over is not None else len(self.candidates)

    @property
    def each_spend(self) -> float:
        """What each candidate's boundaries spend: Bonferroni's share of alpha, 0.9 of it (``candidate_spend``)."""
        return self.spend if self.spend is not None else candidate_spend(self.alpha, self.family)

    def same_design(self, entry: SequentialEntry) -> list[str]:
        """How a recorded ``sequential`` entry differs from this plan (what a resume must keep)."""
        changed = []
        if entry.baseline != self.baseline:
            changed.append(f"baseline {entry.baseline} -> {self.baseline}")
        if entry.max_rounds != self.max_rounds:
            changed.append(f"maximum rounds (eval.repeats) {entry.max_rounds} -> {self.max_rounds}")
        if entry.margin != self.margin:
            changed.append(f"margin {entry.margin or 'none'} -> {self.margin or 'none'}")
        if entry.alpha != self.alpha:
            changed.append(f"alpha {entry.alpha} -> {self.alpha}")
        if entry.spend is not None and abs(entry.spend - self.each_spend) > 1e-12:
            changed.append(f"alpha spent per candidate {entry.spend:.4g} -> {self.each_spend:.4g}")
        if (entry.batches or 1) != self.batches:
            changed.append(f"looks within the first round {entry.batches or 1} -> {self.batches}")
        if entry.futility != self.futility:
            hint = " (--no-futility resumes it without one)" if entry.futility is None else ""
            changed.append(f"futility rule {entry.futility or 'none'} -> {self.futility or 'none'}{hint}")
        if entry.clusters_sha256 != self.clusters_sha256:
            was = "none" if entry.clusters_sha256 is None else f"sha256 {entry.clusters_sha256[:12]}"
            now = "none" if self.clusters_sha256 is None else f"sha256 {self.clusters_sha256[:12]}"
            changed.append(f"clusters (--cluster-by / --cluster-file) {was} -> {now}")
        if entry.method != self.method:  # e.g. a launch begun before the design changed (issue 25, item 4)
            changed.append("the sequential design (spending function, alpha split) of an earlier hermit-tui version")
        return changed


def design_method(batches: int) -> str:
    """The method text a plan with ``batches`` looks in the first round records (``METHOD`` with whole rounds)."""
    from hermit_tui.core.stats.sequential.look import BATCH_METHOD

    return METHOD if batches <= 1 else BATCH_METHOD


def _score(value: float) -> float:
    return value if math.isfinite(value) else 0.0  # a NaN or infinite score counts 0, as everywhere else


def round_scores(records: Mapping[tuple[str, int], Any], task_ids: Sequence[str], r: int) -> np.ndarray | None:
    """Round ``r``'s scores in task order, or None when a task has no attempt in that round."""
    out = np.empty(len(task_ids))
    for i, tid in enumerate(task_ids):
        rec = records.get((tid, r))
        if rec is None:
            return None
        out[i] = _score(rec.judge.score)
    return out


class _Pair:
    """One candidate's monitor, fed look by look on the score scale seen so far ([0, 1] widened)."""

    def __init__(self, plan: SequentialPlan, candidate: str, tasks: int, codes: np.ndarray | None = None):
        self.monitor: SequentialMonitor
        self.looks: list[SequentialLook] = []
        if codes is not None:
            self.monitor = ClusteredMonitor(
                plan.baseline,
                candidate,
                plan.max_rounds,
                codes,
                batches=plan.batches,
                alpha=plan.alpha,
                spend=plan.each_spend,
                candidates=plan.family,
                margin=plan.margin,
                futility=plan.futility,
            )
            return
        self.monitor = SequentialMonitor(
            plan.baseline,
            candidate,
            plan.max_rounds,
            alpha=plan.alpha,
            spend=plan.each_spend,
            candidates=plan.family,
            spending=plan.spending,
            margin=plan.margin,
            batches=plan.batches,
            total_tasks=tasks,
            futility=plan.futility,
        )

    def add(self, a: np.ndarray, b: np.ndarray) -> SequentialLook:
        m = self.monitor
        m.lo = min(m.lo, float(a.min(initial=0.0)), float(b.min(initial=0.0)))
        m.hi = max(m.hi, float(a.max(initial=1.0)), float(b.max(initial=1.0)))
        look = m.add_look(a, b)
        self.looks.append(look)
        return look


class RoundTracker:
    """The launch's sequential state: after each look of the schedule (a batch of the first round's tasks in the
    look order, or a whole round), one look per candidate.

    ``task_ids``: the test tasks; with looks within the first round they are taken in
    ``core.stats.sequential.schedule.look_order`` (the runner schedules them so)."""

    def __init__(self, plan: SequentialPlan, task_ids: Sequence[str]):
        self.plan = plan
        if plan.cluster_of is not None:  # whole clusters in the clustered look order (core.stats.sequential.schedule)
            self.task_ids = cluster_look_order(task_ids, plan.cluster_of)
            codes = cluster_codes(self.task_ids, plan.cluster_of)
            self.pairs = {c: _Pair(plan, c, len(self.task_ids), codes) for c in plan.candidates}
            self.schedule = self.pairs[plan.candidates[0]].monitor.schedule or ()
        else:
            self.task_ids = look_order(task_ids) if plan.batches > 1 else list(task_ids)
            self.schedule = look_schedule(max(1, len(self.task_ids)), plan.max_rounds, plan.batches)
            self.pairs = {c: _Pair(plan, c, len(self.task_ids)) for c in plan.candidates}
        self.looks = 0  # looks checked

    @property
    def rounds(self) -> int:
        """The round of the last look checked (0 before any): the rounds begun, for the summaries' ``repeats``."""
        return self.schedule[self.looks - 1][0] if self.looks else 0

    @property
    def tasks_looked(self) -> int:
        """The paired tasks of the last look checked (fewer than the test tasks: it stopped within round 1)."""
        return self.schedule[self.looks - 1][1] if self.looks else 0

    @property
    def attempts_each(self) -> int:
        """Each selector's attempts in the looks checked."""
        return (self.rounds - 1) * len(self.task_ids) + self.tasks_looked if self.looks else 0

    @property
    def decided(self) -> bool:
        """Every candidate is decided: no further look is needed."""
        return self.looks > 0 and all(p.monitor.decided for p in self.pairs.values())

    @property
    def finished(self) -> bool:
        return self.decided or self.looks >= len(self.schedule)

    def look_of(self, task_id: str, repeat: int) -> int:
        """The look (from 1) whose data an attempt of ``task_id`` at ``repeat`` is part of."""
        batches = self.plan.batches
        if repeat > 1 or batches <= 1:
            return batches + repeat - 1
        if not hasattr(self, "_position"):
            self._position = {t: i for i, t in enumerate(self.task_ids)}
        pos = self._position.get(str(task_id), len(self.task_ids) - 1)
        return next(k for k, (_, n) in enumerate(self.schedule[:batches], start=1) if pos < n)

    def _span(self, look: int) -> tuple[int, list[str]]:
        """(round, the tasks it adds) of look ``look`` (from 1)."""
        r, n = self.schedule[look - 1]
        if r == 1 and self.plan.batches > 1:
            start = self.schedule[look - 2][1] if look > 1 else 0
            return 1, self.task_ids[start:n]
        return r, self.task_ids

    def complete(self, records: Mapping[str, Mapping[tuple[str, int], Any]], look: int) -> bool:
        """Whether look ``look`` (from 1) has an attempt for each of its tasks under every selector."""
        r, ids = self._span(look)
        labels = [self.plan.baseline, *self.plan.candidates]
        return all(round_scores(records[label], ids, r) is not None for label in labels)

    def check(self, records: Mapping[str, Mapping[tuple[str, int], Any]]) -> list[SequentialLook]:
        """Look at the next look of the schedule (it must be complete): one look per candidate."""
        j = self.looks + 1
        if j > len(self.schedule):
            raise ValueError(f"all {len(self.schedule)} looks were already checked")
        r, ids = self._span(j)
        a = round_scores(records[self.plan.baseline], ids, r)
        looks = []
        for label, pair in self.pairs.items():
            b = round_scores(records[label], ids, r)
            if a is None or b is None:
                raise ValueError(f"look {j} (round {r}) is not complete")
            looks.append(pair.add(a, b))
        self.looks = j
        return looks

    def last(self, label: str) -> SequentialLook | None:
        looks = self.pairs[label].looks if label in self.pairs else []
        return looks[-1] if looks else None

    def entry(self, label: str) -> SequentialEntry:
        """summary.json's ``sequential`` object for ``label`` (a candidate or the baseline)."""
        plan = self.plan
        common = dict(
            baseline=plan.baseline,
            rounds=self.rounds,
            max_rounds=plan.max_rounds,
            method=plan.method,
            alpha=plan.alpha,
            spend=plan.each_spend,
            split_over=plan.family,
            margin=plan.margin,
            batches=plan.batches,
            tasks_looked=self.tasks_looked,
            total_tasks=len(self.task_ids),
            futility=plan.futility,
        )
        clustered: dict[str, Any] = {}
        if plan.cluster_of is not None:
            clustered = dict(
                cluster_by=plan.cluster_by,
                clusters_sha256=plan.clusters_sha256,
                clusters=len(set(cluster_codes(self.task_ids, plan.cluster_of).tolist())),
                cluster_of={t: plan.cluster_of[t] for t in self.task_ids if t in plan.cluster_of},
            )
        if label == plan.baseline:
            return SequentialEntry(
                **common, **clustered, candidates={c: _decision(self.last(c)) for c in plan.candidates}
            )
        look = self.last(label)
        if look is None:
            return SequentialEntry(**common, **clustered, decision="undecided")
        return SequentialEntry(**look.summary(), mean_diff=look.mean_diff, **clustered)


def _decision(look: SequentialLook | None) -> str:
    return look.decision if look is not None else "undecided"


#: An evaluation's records, by (task id, repeat) or as read: AttemptRecords, or anything whose items have a record's
#: ``id``, ``repeat`` and ``judge.score`` (the store's columns, ``core.records.index.Snapshot``).
Records = Mapping[tuple[str, int], Any] | Iterable[Any]


def by_key(records: Records) -> Mapping[tuple[str, int], Any]:
    if isinstance(records, Mapping):
        return records
    items: Iterable[Any] = records
    return {(r.id, r.repeat): r for r in items}


__all__ = ["design_method", "Records", "RoundTracker", "SequentialPlan", "round_scores"]
