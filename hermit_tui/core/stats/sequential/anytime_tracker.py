"""The looks of a ``--stop-when-decided --anytime`` launch: each candidate's stream of paired task differences and
its confidence sequence (``_Stream``), the launch's state (:class:`AnytimeTracker`, with ``RoundTracker``'s
interface), and a recorded launch's looks recomputed from the records (:func:`replay`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.stats.sequential.anytime import _covers, cluster_sets, paired_confidence_sequence
from hermit_tui.core.stats.sequential.anytime_looks import recorded_clusters, recorded_order
from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan, with_clusters
from hermit_tui.core.stats.sequential.look import Decision, SequentialLook, decide
from hermit_tui.core.stats.sequential.tracker import Records, SequentialPlan


def _score(value: float) -> float:
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0


def task_mean(records: Mapping[tuple[str, int], Any], task_id: str, repeats: int) -> float | None:
    """The mean score of ``task_id``'s ``repeats`` repeats (each in [0, 1]), or None when one is missing."""
    total = 0.0
    for r in range(1, repeats + 1):
        rec = records.get((task_id, r))
        if rec is None:
            return None
        total += _score(rec.judge.score)
    return total / repeats


class _Stream:
    """One candidate's paired task differences, in the stream's order, and its confidence sequence."""

    def __init__(self, plan: AnytimePlan, candidate: str, total: int, sizes: Sequence[int] = ()):
        self.plan, self.candidate, self.total = plan, candidate, total
        self.diffs: list[float] = []
        self.looks: list[SequentialLook] = []
        # clustered: the sizes of the stream's clusters in order, the clusters' mean differences so far, and the
        # sequence's set at each of them (not intersected)
        self.sizes = list(sizes)
        self.dbar: list[float] = []
        self.raw: tuple[list[float], list[float]] = ([], [])

    def _interval(self, diffs: Sequence[float]) -> tuple[float, float]:
        plan = self.plan
        if not plan.clustered:
            low_s, high_s = paired_confidence_sequence(np.asarray(self.diffs), plan.each_spend)
            return float(low_s[-1]), float(high_s[-1])
        start = len(self.dbar)
        pos = 0
        for n in self.sizes[start:]:
            if pos >= len(diffs):
                break
            self.dbar.append(float(np.mean(diffs[pos : pos + n])))
            pos += n
        if pos != len(diffs):
            raise ValueError("a look must end at the end of a cluster")
        if len(self.dbar) > start:
            lows, highs = cluster_sets(
                self.dbar,
                self.sizes[: len(self.dbar)],
                int(plan.cluster_cap or 1),
                plan.each_spend,
                times=range(start, len(self.dbar)),
            )
            self.raw[0].extend(map(float, lows))
            self.raw[1].extend(map(float, highs))
        low, high = max(self.raw[0]), min(self.raw[1])
        return low, max(low, high)

    def add(self, diffs: Sequence[float], look: int) -> SequentialLook:
        self.diffs += list(diffs)
        plan = self.plan
        low, high = self._interval(list(diffs))
        prev = self.looks[-1] if self.looks else None
        decision: Decision = decide(low, high, plan.margin)
        n = len(self.diffs)
        if decision == "undecided" and plan.out_of_reach and plan.margin is None and not self.in_reach():
            decision = "futile"
        if prev is not None and prev.decision != "undecided":
            decision = prev.decision  # the first decision is kept
        decided_tasks = (
            prev.decided_tasks
            if prev is not None and prev.decided_tasks is not None
            else (n if decision != "undecided" else None)
        )
        out = SequentialLook(
            baseline=plan.baseline,
            candidate=self.candidate,
            decision=decision,
            rounds=plan.max_rounds,
            max_rounds=plan.max_rounds,
            method=plan.method_text,
            alpha=plan.alpha,
            spend=plan.each_spend,
            candidates=plan.family,
            margin=plan.margin,
            decided_at=plan.max_rounds if decided_tasks is not None else None,
            decided_tasks=decided_tasks,
            mean_diff=float(np.mean(self.diffs)),
            ci_low=low,
            ci_high=high,
            tasks=n,
            total_tasks=self.total,
            look=look,
        )
        self.looks.append(out)
        return out

    def in_reach(self) -> bool:
        """Whether the tasks not yet looked at could still decide the sequence: with a difference of +1 (-1) on
        every one of them it would lie above (below) 0 at the last task. Those are the clearest results: no other
        continuation decides sooner (``fewest_tasks_to_decide``), so a candidate out of reach would end undecided
        whatever its remaining tasks showed. A stop for it spends no error: the sequence holds at any stopping time,
        and a launch given more tasks continues it (``--resume``). The last look has nothing left: in reach (it
        ends undecided, not futile)."""
        left = self.total - len(self.diffs)
        if left <= 0:
            return True
        spend = self.plan.each_spend
        if self.plan.clustered:  # the clearest continuation: +1 (-1) on every cluster left, of its known size
            # 0 leaves the sequence at a later cluster exactly when the test of m = 0 rejects there (cluster_sets)
            cap = int(self.plan.cluster_cap or 1)
            w = np.asarray(self.sizes, dtype=float) / cap
            done = len(self.dbar)
            for sign in (1.0, -1.0):
                dbar = np.concatenate([self.dbar, np.full(len(self.sizes) - done, sign)])
                if not _covers(dbar, w, np.zeros(1), spend)[0, done:].all():
                    return True
            return False
        up, _ = paired_confidence_sequence(np.concatenate([self.diffs, np.ones(left)]), spend)
        _, down = paired_confidence_sequence(np.concatenate([self.diffs, -np.ones(left)]), spend)
        return bool(up[-1] > 0 or down[-1] < 0)


class AnytimeTracker:
    """The launch's anytime-valid state, with :class:`core.stats.sequential.tracker.RoundTracker`'s interface (the
    runner's ``core.run.rounds.RoundGate`` drives either): look ``j`` is the ``j``-th batch of ``plan.tasks_per_look``
    tasks of the stream, every repeat of each under every selector."""

    def __init__(self, plan: AnytimePlan, task_ids: Sequence[str]):
        self.plan = plan
        self.task_ids = plan.stream(task_ids)
        total = len(self.task_ids)
        step = max(1, plan.tasks_per_look)
        # the recorded tasks are one look (so a resume finds the recorded state again whatever its batch size), then
        # batches of ``step``
        done = len(plan.order)
        sizes = plan.cluster_sizes(self.task_ids) if plan.clustered else []
        if plan.clustered:  # a look ends at the end of a cluster: the first one at least ``step`` tasks on
            bounds = [int(b) for b in np.cumsum(sizes)]
            ends = [done] if done else []
            for b in bounds:
                if b > done and b >= (ends[-1] if ends else 0) + step or b == total and b > done:
                    ends.append(b)
        else:
            ends = ([done] if done else []) + list(range(done + step, total, step)) + ([total] if total > done else [])
        self._ends = ends or [0]
        self.schedule: tuple[tuple[int, int], ...] = tuple((plan.max_rounds, n) for n in self._ends)
        self.pairs = {c: _Stream(plan, c, total, sizes) for c in plan.candidates}
        self.looks = 0
        self._position = {t: i for i, t in enumerate(self.task_ids)}

    @property
    def rounds(self) -> int:
        """The repeats of each task looked at (0 before any look): the summaries' ``repeats``."""
        return self.plan.max_rounds if self.looks else 0

    @property
    def tasks_looked(self) -> int:
        return self.schedule[self.looks - 1][1] if self.looks else 0

    @property
    def attempts_each(self) -> int:
        return self.tasks_looked * self.plan.max_rounds

    @property
    def decided(self) -> bool:
        return self.looks > 0 and all(p.looks and p.looks[-1].decision != "undecided" for p in self.pairs.values())

    @property
    def finished(self) -> bool:
        return self.decided or self.looks >= len(self.schedule)

    def look_of(self, task_id: str, repeat: int) -> int:
        """The look (from 1) whose data an attempt of ``task_id`` (any repeat) is part of."""
        import bisect

        pos = self._position.get(str(task_id), len(self.task_ids) - 1)
        return min(len(self._ends), bisect.bisect_right(self._ends, pos) + 1)

    def _span(self, look: int) -> list[str]:
        start = self.schedule[look - 2][1] if look > 1 else 0
        return self.task_ids[start : self.schedule[look - 1][1]]

    def complete(self, records: Mapping[str, Mapping[tuple[str, int], Any]], look: int) -> bool:
        labels = [self.plan.baseline, *self.plan.candidates]
        r = self.plan.max_rounds
        return all(task_mean(records[label], t, r) is not None for label in labels for t in self._span(look))

    def check(self, records: Mapping[str, Mapping[tuple[str, int], Any]]) -> list[SequentialLook]:
        """Look at the next batch of the stream (it must be complete): one look per candidate."""
        j = self.looks + 1
        if j > len(self.schedule):
            raise ValueError(f"all {len(self.schedule)} looks were already checked")
        r, ids = self.plan.max_rounds, self._span(j)
        base = [task_mean(records[self.plan.baseline], t, r) for t in ids]
        looks = []
        for label, pair in self.pairs.items():
            cand = [task_mean(records[label], t, r) for t in ids]
            if any(x is None for x in base) or any(x is None for x in cand):
                raise ValueError(f"look {j} is not complete")
            looks.append(pair.add([float(b) - float(a) for a, b in zip(base, cand)], j))  # type: ignore[arg-type]
        self.looks = j
        return looks

    def last(self, label: str) -> SequentialLook | None:
        looks = self.pairs[label].looks if label in self.pairs else []
        return looks[-1] if looks else None

    def entry(self, label: str) -> SequentialEntry:
        """summary.json's ``sequential`` object for ``label``: the design, the tasks looked at in order, and (for a
        candidate) its decision and confidence sequence."""
        plan = self.plan
        n = self.tasks_looked
        common: dict[str, Any] = dict(
            baseline=plan.baseline,
            rounds=plan.max_rounds,
            max_rounds=plan.max_rounds,
            method=plan.method_text,
            alpha=plan.alpha,
            spend=plan.each_spend,
            split_over=plan.family,
            margin=plan.margin,
            tasks_looked=n,
            total_tasks=len(self.task_ids),
            order=self.task_ids[:n],
            order_rows_sha256=plan.order_digest(self.task_ids[:n]),
        )
        if plan.clustered:  # what a replay and a continuation need: K and the clusters of the stream, in order
            common |= dict(
                cluster_by=plan.cluster_by,
                cluster_cap=plan.cluster_cap,
                cluster_sizes=plan.cluster_sizes(self.task_ids),
            )
        if label == plan.baseline:
            decisions = {c: (look.decision if (look := self.last(c)) else "undecided") for c in plan.candidates}
            return SequentialEntry(**common, candidates=decisions)
        look = self.last(label)
        if look is None:
            return SequentialEntry(**common, decision="undecided")
        return SequentialEntry(
            **common,
            decision=look.decision,
            decided_at=look.decided_at,
            decided_tasks=look.decided_tasks,
            interval=(look.ci_low, look.ci_high),
            mean_diff=look.mean_diff,
        )


def tracker_for(plan: SequentialPlan, task_ids: Sequence[str]) -> Any:
    """The tracker of ``plan``'s design: :class:`AnytimeTracker` or ``core.stats.sequential.tracker.RoundTracker``."""
    from hermit_tui.core.stats.sequential.tracker import RoundTracker

    if isinstance(plan, AnytimePlan):
        return AnytimeTracker(plan, task_ids)
    return RoundTracker(plan, task_ids)


def replay(
    entry: SequentialEntry, baseline_records: Records, candidate_records: Records, candidate: str
) -> list[SequentialLook] | None:
    """The last look of a candidate's recorded anytime launch, recomputed from the records: the sequence over the
    tasks of ``entry.order`` in that order, decided (or not) after all of them, as the launch decided after its last
    look (None when a task looked at lacks a repeat in the records)."""
    from hermit_tui.core.stats.sequential.tracker import by_key

    order = recorded_order(entry)
    n = entry.tasks_looked if entry.tasks_looked is not None else len(order)
    if n < 1 or len(order) < n or entry.max_rounds < 1:
        return None
    plan = AnytimePlan(
        baseline=entry.baseline,
        candidates=[candidate],
        max_rounds=entry.max_rounds,
        margin=entry.margin,
        alpha=entry.alpha,
        spend=entry.spend,
        split_over=entry.split_over or 1,
        order=order[:n],  # one look over them all
        out_of_reach=entry.decision == "futile",  # the rule was on (it is what stopped the launch)
    )
    clusters = recorded_clusters(entry)
    if clusters is not None:  # the recorded clusters of the stream, by their sizes in order
        cap, sizes = clusters
        keys = [str(i) for i, size in enumerate(sizes) for _ in range(size)]
        if len(keys) < n or any(size < 1 or size > cap for size in sizes):
            return None
        by = getattr(entry, "cluster_by", None)
        plan = with_clusters(plan, str(by) if by else "recorded clusters", dict(zip(order[:n], keys)), order[:n])
        plan.cluster_cap = cap
    tracker = AnytimeTracker(plan, order[:n])
    for stream in tracker.pairs.values():  # the test tasks the launch had (it may have stopped before the last)
        stream.total = max(n, entry.total_tasks or n)
        if clusters is not None:
            stream.sizes = clusters[1]
    records = {entry.baseline: by_key(baseline_records), candidate: by_key(candidate_records)}
    while not tracker.looks >= len(tracker.schedule):
        if not tracker.complete(records, tracker.looks + 1):
            return None
        tracker.check(records)
    return tracker.pairs[candidate].looks


__all__ = ["AnytimeTracker", "replay", "tracker_for"]
