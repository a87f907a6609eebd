"""Stop when decided, anytime-valid: the design of a ``--stop-when-decided --anytime`` launch, its looks, and how
they are read back from the files.

The launch runs task by task in a fixed order (:func:`core.stats.sequential.look_order`, the sha256 of the task id),
every repeat of a task under every selector together: one task is one observation, the paired difference of its
task means ``d = mean_r(candidate) - mean_r(baseline)`` (scores counted in [0, 1]: NaN as 0, outside the range as
its nearest end). After each look (a batch of consecutive tasks in that order, as many as the launch's slots run at
once) every candidate's confidence sequence (``core.stats.anytime``, Waudby-Smith & Ramdas 2023) is updated on its
differences so far; the launch stops once every candidate is decided (the sequence lies above 0: improvement, below
0: regression, within ±M: equivalent), else it runs every task and ends undecided.

A confidence sequence holds the true mean difference at every number of tasks at once, so the decision may be taken
at any look, and an undecided comparison may be continued later (``--resume``, also after tasks were added to the
test split) without restarting the error budget: the continued stream is the recorded tasks in their recorded order
(summary.json's ``sequential.order``), then the tasks not yet looked at in the look order. What a continuation may
not change is the observation itself (the repeats per task, the protocol) or the error split (alpha, the
candidates): :meth:`AnytimePlan.same_design` says what changed.

``alpha`` is split over the candidates (Bonferroni: the chance of any false claim over them is at most ``alpha``);
each candidate's sequence spends its whole share, since the sequence's guarantee is exact for bounded scores (no
normal approximation to allow for).

**With clusters** (``--cluster-by`` / ``--cluster-file``, :func:`with_clusters`) one observation is a whole cluster:
the stream takes the clusters in the order of their keys' sha256 (``look_order`` of the keys), a cluster's tasks
together (in the look order of their ids); a look never splits a cluster, and a cluster counts only when every
repeat of each of its tasks under every selector is done. The sequence is the clustered one of
``core.stats.anytime.clustered_confidence_sequence`` for the task-weighted mean difference (the clustered fixed
design's estimand), with ``K`` the largest cluster of the split at the first look. A continuation keeps ``K`` and
the clusters already looked at: added tasks may only form new clusters of at most ``K`` tasks
(:meth:`AnytimePlan.stream`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.stats.sequential.anytime import (
    ALPHA,
    CLUSTERED,
    METHOD,
    _covers,
    cluster_sets,
    paired_confidence_sequence,
)
from hermit_tui.core.stats.sequential.looks import Records, SequentialPlan, stop_state, stopped_how
from hermit_tui.core.stats.sequential.monitor import Decision, SequentialLook, decide, look_order

ANYTIME_RULE = (
    "after each look of an anytime-valid stop-when-decided launch (a batch of tasks in the order of their ids' "
    "sha256, every repeat of each), 'an improvement' ('a regression') when the anytime-valid 95% confidence "
    "sequence for the mean difference lies above (below) 0, 'equivalent' (with a margin M) when it lies within "
    "-M..M; 'stopped for futility' (without a margin) when even a difference of +1 (-1) on every task not yet "
    "looked at would leave 0 inside it at the last task of the split; otherwise 'undecided'"
)


CLUSTERED_RULE = (
    "after each look of an anytime-valid stop-when-decided launch with clusters (whole clusters in the order of their "
    "keys' sha256, every repeat of each task), 'an improvement' ('a regression') when the anytime-valid 95% "
    "confidence sequence for the task-weighted mean difference lies above (below) 0, 'equivalent' (with a margin M) "
    "when it lies within -M..M; 'stopped for futility' (without a margin) when even a difference of +1 (-1) on every "
    "cluster not yet looked at would leave 0 inside it at the last cluster of the split; otherwise 'undecided'"
)


def is_anytime(thing: Any) -> bool:
    """Whether a plan, a ``sequential`` entry or a look is of the anytime-valid design (by its method)."""
    method = getattr(thing, "method", None)
    return method == METHOD or (isinstance(method, str) and method.startswith(_CLUSTERED_HEAD))


_CLUSTERED_HEAD = METHOD.split(" on the ")[0] + " " + CLUSTERED


def clustered_method(by: str, cap: int) -> str:
    """The method of a clustered launch's sequence, naming its clusters (``by``: the field, or ``file:<path>``)."""
    return (
        f"{_CLUSTERED_HEAD} (clustered by {by}; each cluster one observation, weighted by its tasks over the "
        f"largest cluster's {cap}) in a fixed order, inverted for the task-weighted mean difference, running "
        "intersection"
    )


def clustered_by(thing: Any) -> str | None:
    """What a clustered look's (or entry's) sequence was clustered by (from its method), or None."""
    method = getattr(thing, "method", None)
    if not isinstance(method, str) or not method.startswith(_CLUSTERED_HEAD + " (clustered by "):
        return None
    return method[len(_CLUSTERED_HEAD + " (clustered by ") :].split("; each cluster one observation")[0]


def recorded_clusters(entry: SequentialEntry | None) -> tuple[int, list[int]] | None:
    """(K, the cluster sizes of the stream in order) a clustered anytime launch recorded (summary.json's
    ``sequential.cluster_cap`` and ``sequential.cluster_sizes``), or None (an unclustered one)."""
    cap = getattr(entry, "cluster_cap", None) if entry is not None else None
    sizes = getattr(entry, "cluster_sizes", None) if entry is not None else None
    if not isinstance(cap, int) or not isinstance(sizes, list) or not all(isinstance(n, int) for n in sizes):
        return None
    return cap, [int(n) for n in sizes]


def recorded_order(entry: SequentialEntry | None) -> list[str]:
    """The tasks an anytime launch looked at, in order (summary.json's ``sequential.order``; [] when absent)."""
    order = getattr(entry, "order", None) if entry is not None else None
    return [str(t) for t in order] if isinstance(order, list) else []


def anytime_share(alpha: float, candidates: int) -> float:
    """Each candidate's share of ``alpha`` when ``candidates`` are compared with one baseline (Bonferroni), all of
    it spent: the sequence's guarantee is exact for bounded scores."""
    return alpha / max(1, candidates)


class AnytimePlan(SequentialPlan):
    """The plan of a ``--stop-when-decided --anytime`` launch. ``max_rounds`` is the repeats of each task (all
    run before the task is looked at); ``order``: the tasks an earlier launch of this evaluation looked at, in order
    (a continuation's stream begins with them); ``tasks_per_look``: the consecutive tasks one look adds (the slots
    the launch runs at once, so the barrier after each look leaves few of them idle)."""

    method: str = METHOD
    order: list[str] = []
    tasks_per_look: int = 1
    # stop a candidate that the rest of the split cannot decide even at the clearest results (``_Stream.in_reach``)
    out_of_reach: bool = False
    row_digests: dict[str, str] = {}  # task id -> sha256 of its row (what a continuation checks of the recorded tasks)
    # --cluster-by: the field (None: unclustered), task id -> cluster key of the split, and K (the largest cluster)
    cluster_by: str | None = None
    cluster_of: dict[str, str] = {}
    cluster_cap: int | None = None

    @property
    def clustered(self) -> bool:
        return self.cluster_by is not None and self.cluster_cap is not None

    def cluster_key(self, task_id: str) -> str:
        return self.cluster_of.get(task_id, "\0" + task_id)  # (a task the mapping lacks: a cluster of its own)

    def cluster_sizes(self, stream: Sequence[str]) -> list[int]:
        """The sizes of the clusters of ``stream`` (a cluster's tasks are consecutive in it), in order."""
        sizes: list[int] = []
        prev: str | None = None
        for t in stream:
            key = self.cluster_key(t)
            if key == prev:
                sizes[-1] += 1
            else:
                sizes.append(1)
            prev = key
        return sizes

    @property
    def split_cluster_sizes(self) -> list[int] | None:
        """The sizes of the split's clusters (None: unclustered)."""
        if not self.clustered:
            return None
        counts: dict[str, int] = {}
        for key in self.cluster_of.values():
            counts[key] = counts.get(key, 0) + 1
        return list(counts.values())

    @property
    def method_text(self) -> str:
        return clustered_method(str(self.cluster_by), int(self.cluster_cap or 1)) if self.clustered else METHOD

    def order_digest(self, order: Sequence[str]) -> str | None:
        """The sha256 of the rows of ``order``'s tasks, in order (None when a row's digest is not known)."""
        import hashlib

        if any(t not in self.row_digests for t in order):
            return None
        return hashlib.sha256("\n".join(self.row_digests[t] for t in order).encode()).hexdigest()

    @property
    def each_spend(self) -> float:
        """Each candidate's share of alpha (Bonferroni), all of it spent."""
        return self.spend if self.spend is not None else anytime_share(self.alpha, self.family)

    def same_design(self, entry: SequentialEntry) -> list[str]:
        """How a recorded entry differs from this plan (what a continuation must keep)."""
        if not is_anytime(entry):
            return ["it was launched with the group-sequential design: resume it without --anytime"]
        changed = []
        if entry.baseline != self.baseline:
            changed.append(f"baseline {entry.baseline} -> {self.baseline}")
        if entry.max_rounds != self.max_rounds:
            changed.append(
                f"repeats per task (eval.repeats) {entry.max_rounds} -> {self.max_rounds} (a task's observation is "
                "the mean of its repeats)"
            )
        if entry.margin != self.margin:
            changed.append(f"margin {entry.margin or 'none'} -> {self.margin or 'none'}")
        if entry.alpha != self.alpha:
            changed.append(f"alpha {entry.alpha} -> {self.alpha}")
        if entry.split_over is not None and entry.split_over != self.family:
            changed.append(f"the candidates alpha is split over {entry.split_over} -> {self.family}")
        return changed

    def stream(self, task_ids: Sequence[str]) -> list[str]:
        """The order the tasks are looked at: the recorded ones in their order, then the others in the look order.
        ValueError when a recorded task is no longer among ``task_ids``."""
        ids = [str(t) for t in task_ids]
        known = set(ids)
        gone = [t for t in self.order if t not in known]
        if gone:
            raise ValueError(
                f"{len(gone)} task(s) already looked at are no longer in the test split (e.g. {gone[0]!r}): the "
                "stream cannot continue without them"
            )
        seen = set(self.order)
        if not self.clustered:
            return list(self.order) + look_order([t for t in ids if t not in seen])
        looked = {self.cluster_key(t) for t in self.order}
        members: dict[str, list[str]] = {}
        for t in ids:
            if t not in seen:
                members.setdefault(self.cluster_key(t), []).append(t)
        joined = [k for k in members if k in looked]
        if joined:
            t = members[joined[0]][0]
            raise ValueError(
                f"task {t!r} joins cluster {joined[0][:40]!r}, already looked at: a cluster is one observation, "
                "looked at once whole; give added tasks clusters of their own"
            )
        cap = int(self.cluster_cap or 0)
        big = [k for k, m in members.items() if len(m) > cap]
        if big:
            raise ValueError(
                f"the new cluster {big[0][:40]!r} has {len(members[big[0]])} tasks, more than the {cap} of the "
                "largest cluster the sequence was started with (its observations are scaled by that size)"
            )
        out = list(self.order)
        for key in look_order(list(members)):
            out += look_order(members[key])
        return out

    def take_recorded(self, order: Sequence[str], entry: SequentialEntry | None) -> None:
        """A continuation: the recorded stream ``order`` (and, clustered, the recorded ``K``). ValueError when the
        clusters of the tasks looked at are not those the launch recorded, or one design is clustered and the other
        not."""
        self.order = list(order)
        recorded = recorded_clusters(entry)
        if recorded is None and not self.clustered:
            return
        if recorded is None or not self.clustered:
            was = "clustered" if recorded is not None else "not clustered"
            raise ValueError(f"the recorded sequence was {was}: resume it with the clusters it was started with")
        by = getattr(entry, "cluster_by", None)
        if by != self.cluster_by:
            raise ValueError(f"it was clustered by {by}, not {self.cluster_by}: resume it with the same clusters")
        cap, sizes = recorded
        looked, total = [], 0
        for n in sizes:
            if total >= len(self.order):
                break
            looked.append(n)
            total += n
        if self.cluster_sizes(self.order) != looked:
            raise ValueError(
                "the clusters of the tasks already looked at are not the ones recorded (summary.json "
                "sequential.cluster_sizes): resume it with the same --cluster-by or --cluster-file"
            )
        self.cluster_cap = cap


def anytime_plan(
    plan: SequentialPlan, concurrency: int, selectors: int, rows: Sequence[Mapping[str, Any]] = ()
) -> AnytimePlan:
    """``plan`` (made by ``core.run.rounds.plan_for``) as the anytime-valid design; a look adds as many tasks as
    ``concurrency`` slots run at once with ``selectors`` selectors and ``plan.max_rounds`` repeats of a task.
    ``rows``: the test task rows (their digests let a continuation check the tasks already looked at)."""
    import hashlib
    import json

    per_task = max(1, plan.max_rounds * selectors)
    digests = {
        str(r["id"]): hashlib.sha256(json.dumps(dict(r), sort_keys=True, default=str).encode()).hexdigest()
        for r in rows
    }
    return AnytimePlan(
        baseline=plan.baseline,
        candidates=list(plan.candidates),
        max_rounds=plan.max_rounds,
        margin=plan.margin,
        alpha=plan.alpha,
        tasks_per_look=max(1, math.ceil(concurrency / per_task)),
        row_digests=digests,
        out_of_reach=plan.futility is not None,  # (off with --no-futility or a margin, as the group design's rule)
    )


def with_clusters(plan: AnytimePlan, by: str, of: Mapping[str, str], task_ids: Sequence[str]) -> AnytimePlan:
    """``plan`` with the clusters of the split's tasks ``task_ids`` (``of``: task id -> cluster, a task it lacks
    its own cluster): ``K`` is the largest (a continuation takes the recorded one, ``take_recorded``)."""
    keyed = {t: of.get(t, "\0" + t) for t in map(str, task_ids)}
    counts: dict[str, int] = {}
    for key in keyed.values():
        counts[key] = counts.get(key, 0) + 1
    return plan.model_copy(update=dict(cluster_by=by, cluster_of=keyed, cluster_cap=max(counts.values(), default=1)))


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
    """The launch's anytime-valid state, with :class:`core.stats.looks.RoundTracker`'s interface (the runner's
    ``core.run.rounds.RoundGate`` drives either): look ``j`` is the ``j``-th batch of ``plan.tasks_per_look`` tasks
    of the stream, every repeat of each under every selector."""

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
    """The tracker of ``plan``'s design: :class:`AnytimeTracker` or ``core.stats.looks.RoundTracker``."""
    from hermit_tui.core.stats.sequential.looks import RoundTracker

    if isinstance(plan, AnytimePlan):
        return AnytimeTracker(plan, task_ids)
    return RoundTracker(plan, task_ids)


def replay(
    entry: SequentialEntry, baseline_records: Records, candidate_records: Records, candidate: str
) -> list[SequentialLook] | None:
    """The last look of a candidate's recorded anytime launch, recomputed from the records: the sequence over the
    tasks of ``entry.order`` in that order, decided (or not) after all of them, as the launch decided after its last
    look (None when a task looked at lacks a repeat in the records)."""
    from hermit_tui.core.stats.sequential.looks import _by_key

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
    records = {entry.baseline: _by_key(baseline_records), candidate: _by_key(candidate_records)}
    while not tracker.looks >= len(tracker.schedule):
        if not tracker.complete(records, tracker.looks + 1):
            return None
        tracker.check(records)
    return tracker.pairs[candidate].looks


# ---------------------------------------------------------------------------------------------- how they read


def look_text(look: SequentialLook) -> str:
    """Where ``look`` was taken: 'n of the G tasks (R repeats each)'."""
    return f"{look.tasks} of the {look.total_tasks} tasks ({look.max_rounds} repeat{'s' * (look.max_rounds != 1)} each)"


def decided_where(look: SequentialLook) -> str:
    return f"after {look.decided_tasks} of the {look.total_tasks} tasks"


def entry_where(entry: SequentialEntry) -> str:
    """Where a recorded anytime entry stands: 'after n of the G tasks (R repeats each)'."""
    r = entry.max_rounds
    return f"after {entry.tasks_looked} of the {entry.total_tasks} tasks ({r} repeat{'s' * (r != 1)} each)"


def sequential_text(look: SequentialLook, a: str, b: str) -> str:
    """The verdict of a monitored pair, b - a, in one or two sentences."""
    from hermit_tui.core.stats.sequential.looks import AT_STOPPING, _num

    d = look.mean_diff
    if d is None or look.ci_low is None or look.ci_high is None:
        return f"Undecided: no task of {a} and {b} looked at yet."
    ci = f"anytime-valid 95% CS {_num(look.ci_low)} to {_num(look.ci_high)}"
    if look.decision in ("improvement", "regression"):
        higher = "higher" if d > 0 else "lower"
        word = "an improvement" if look.decision == "improvement" else "a regression"
        early = f"{AT_STOPPING}; " if look.stopped_early else ""
        return (
            f"Stopped when decided: {b} scores {_num(abs(d))} {higher} than {a} ({early}{ci}; decided "
            f"{decided_where(look)}): {word}."
        )
    if look.decision == "equivalent":
        return (
            f"Stopped when decided: {b} − {a} = {d:+.3f} ({ci}; decided {decided_where(look)}): equivalent within "
            f"±{look.margin:g}."
        )
    if look.decision == "futile":
        left = (look.total_tasks or 0) - (look.tasks or 0)
        return (
            f"Stopped for futility {decided_where(look)}: {b} − {a} = {d:+.3f} ({ci}); the other {left} task"
            f"{'s' * (left != 1)} could not decide it even with a difference of ±1 on each: no clear difference "
            "(add tasks and resume to continue it without restarting the error budget)."
        )
    reach = "includes 0" + (f" and reaches beyond ±{look.margin:g}" if look.margin is not None else "")
    done = look.tasks is not None and look.total_tasks is not None and look.tasks >= look.total_tasks
    head = f"Undecided after all {look.total_tasks} tasks" if done else f"Undecided so far ({look_text(look)})"
    more = "; add tasks and resume to continue it without restarting the error budget" if done else ""
    return f"{head}: {b} − {a} = {d:+.3f} ({ci}); the sequence {reach}{more}."


def sequential_method(look: SequentialLook) -> str:
    split = f", α {look.alpha:g} split over {look.candidates} candidates" if look.candidates > 1 else ""
    return f"anytime-valid 95% confidence sequence after {look_text(look)}: {look.method}{split}"


def boundary_text(look: SequentialLook) -> str:
    """This look's sequence against 0 and ±M, and the error it may spend."""
    target = "0" + (f" and ±{look.margin:g}" if look.margin is not None else "")
    parts = [look_text(look)]
    if look.ci_low is not None and look.ci_high is not None:
        parts.append(f"anytime-valid 95% CS {look.ci_low:+.3f} to {look.ci_high:+.3f} against {target}")
    split = f", α {look.alpha:g} split over {look.candidates} candidates" if look.candidates > 1 else ""
    parts.append(f"α {look.boundary_alpha:.3g} at any number of tasks{split}")
    return "; ".join(parts)


FIXED_P_NOTE = (
    "the p-value is the fixed design's, not adjusted for the looks after each batch of tasks: for reference only "
    "(the decision is the confidence sequence's)"
)


def sequential_pair(pair: Any, look: SequentialLook) -> Any:
    """``pair`` (a ``core.stats.figures.PairStats``, b - a) with the anytime look in place of the fixed design's
    interval, decision, verdict and rule (``core.stats.looks.sequential_pair`` for this design)."""
    from hermit_tui.core.stats.figures import VerdictKind

    decision = VerdictKind.UNCLEAR if look.decision in ("undecided", "futile") else VerdictKind(look.decision)
    return pair.model_copy(
        update=dict(
            sequential=look,
            ci_low=look.ci_low,
            ci_high=look.ci_high,
            ci_method=None,
            n_eff=None,
            method=sequential_method(look),
            decision=decision,
            verdict=sequential_text(look, pair.a, pair.b),
            rule=CLUSTERED_RULE if clustered_by(look) is not None else ANYTIME_RULE,
            test=f"{pair.test}; {FIXED_P_NOTE}" if pair.test else FIXED_P_NOTE,
        )
    )


SMALL_SPLIT = 100  # tasks: under it an anytime-valid launch rarely decides (benchmarks/RESULTS.md, anytime launches)


def fewest_tasks_to_decide(spend: float, margin: float | None = None, most: int = 1 << 17) -> int | None:
    """The fewest tasks after which a candidate's confidence sequence at ``spend`` can be decided at all, whatever
    the results: the first time it is decided (``decide``) when every task shows the largest difference (+1; by
    symmetry -1) or, with a ``margin``, when every task shows none, whichever comes first. Sooner no stream of
    differences in [-1, 1] decides: the largest difference raises the lower bound most at each task and shrinks the
    variance estimate, so the bets grow fastest (tests/test_anytime_eval.py searches for a faster stream). None when
    not within ``most`` tasks."""
    n = 64
    while True:
        n = min(n, most)
        streams = [(np.ones(n), None)] + ([(np.zeros(n), margin)] if margin is not None else [])
        firsts = []
        for diffs, m in streams:
            low, high = paired_confidence_sequence(diffs, spend)
            first = next((i + 1 for i in range(n) if decide(float(low[i]), float(high[i]), m) != "undecided"), None)
            if first is not None:
                firsts.append(first)
        if firsts or n >= most:
            return min(firsts) if firsts else None
        n *= 4


def small_split_note(
    n_tasks: int,
    candidates: int = 1,
    margin: float | None = None,
    spend: float | None = None,
    clusters: Sequence[int] | None = None,
) -> str | None:
    """A warning when an anytime-valid launch is chosen on a split too small for it to decide, else None. Under
    :func:`fewest_tasks_to_decide` (at each candidate's share ``spend`` of alpha, by default ``anytime_share`` of
    0.05 over ``candidates``) it cannot decide at all; under
    ``SMALL_SPLIT`` tasks it rarely does: its confidence sequence pays for looking at any time with width
    (simulated, 2,000 launches each: an effect of 0.2 was decided in 0.9% of launches on 50 tasks, in 90% on 200).
    ``clusters``: a clustered launch's cluster sizes. Its observations are the clusters, counted instead of the
    tasks (no fewer than :func:`fewest_tasks_to_decide` can decide: a cluster's observation lies within the range of
    a task's), each weighing its tasks over the largest cluster's ``K``: under ``SMALL_SPLIT`` full weights (the
    sum of ``n / K``) it rarely decides (benchmarks/RESULTS.md, anytime with clusters)."""
    if clusters is not None:
        return _small_clustered(n_tasks, list(clusters), candidates, margin, spend)
    tasks = f"{n_tasks} test task{'s' * (n_tasks != 1)}"
    spend = spend if spend is not None else anytime_share(ALPHA, candidates)
    fewest = fewest_tasks_to_decide(spend, margin)
    if fewest is not None and n_tasks < fewest:
        share = f" at α {spend:.3g} for each of {candidates} candidates" if candidates > 1 else ""
        clearest = "a difference of ±1 on every task" + (f", or of 0 for ±{margin:g}" if margin is not None else "")
        return (
            f"anytime-valid on {tasks} cannot decide: even the clearest results ({clearest}) decide its confidence "
            f"sequence{share} only from {fewest} tasks on; on a small split, stop when decided without it"
        )
    if n_tasks >= SMALL_SPLIT:
        return None
    return (
        f"anytime-valid on {tasks} rarely decides (an effect of 0.2 is decided in 1% of simulated launches on 50 "
        "tasks, 90% on 200): on a small split, stop when decided without it"
    )


def _small_clustered(
    n_tasks: int, sizes: list[int], candidates: int, margin: float | None, spend: float | None
) -> str | None:
    clusters = len(sizes)
    where = f"{n_tasks} test task{'s' * (n_tasks != 1)} in {clusters} cluster{'s' * (clusters != 1)}"
    spend = spend if spend is not None else anytime_share(ALPHA, candidates)
    fewest = fewest_tasks_to_decide(spend, margin)
    if fewest is not None and clusters < fewest:
        share = f" at α {spend:.3g} for each of {candidates} candidates" if candidates > 1 else ""
        return (
            f"anytime-valid on {where} cannot decide: a cluster is one observation, and even the clearest results "
            f"decide its confidence sequence{share} only from {fewest} clusters on; on so few clusters, run the "
            "fixed design with them"
        )
    cap = max(sizes, default=1)
    weight = sum(sizes) / cap
    if weight >= SMALL_SPLIT:
        return None
    return (
        f"anytime-valid on {where} rarely decides: a cluster is one observation weighing its tasks over the "
        f"largest cluster's {cap}, and these weigh as {weight:.0f} full ones (under {SMALL_SPLIT} the sequence is "
        "too wide to decide an effect of 0.2 in most launches: benchmarks/RESULTS.md); consider the fixed design "
        "with them"
    )


def interval_words(look: SequentialLook) -> tuple[str, str]:
    """(what the interval is called, where it was taken) for a one-line figure: '95% CS', ' (anytime-valid, ...)'."""
    return "anytime-valid 95% CS", f" (after {look_text(look)})"


DECISION_WORDS = {"futile": "stopped for futility"}  # a decision as the notices and log lines say it


def finished_notice(plan: SequentialPlan, looks: Sequence[SequentialLook], stopped: bool) -> str:
    """The dashboard's notice when an anytime launch ends: where it stopped and each candidate's decision."""
    decided = ", ".join(f"{look.candidate} {DECISION_WORDS.get(look.decision, look.decision)}" for look in looks)
    last = max(looks, key=lambda look: look.tasks or 0) if looks else None
    if last is None:
        return f"Evaluation finished: no task looked at, against {plan.baseline}"
    if stopped:
        how = stopped_how(look.decision for look in looks)
        return f"{how.capitalize()} after {last.tasks} of the {last.total_tasks} tasks (anytime-valid): {decided}"
    return f"Evaluation finished: {last.tasks} of the {last.total_tasks} tasks, {decided} against {plan.baseline}"


def look_line(plan: SequentialPlan, looks: Sequence[SequentialLook]) -> str:
    """What a launch logs when an anytime look is checked."""
    parts = []
    for look in looks:
        ci = "" if look.ci_low is None else f" (anytime-valid 95% CS {look.ci_low:+.3f} to {look.ci_high:+.3f})"
        parts.append(f"{look.candidate} vs {plan.baseline}: {DECISION_WORDS.get(look.decision, look.decision)}{ci}")
    where = look_text(looks[0]) if looks else "no task"
    return f"{where}: " + "; ".join(parts)


def decided_line(tracker: AnytimeTracker) -> str:
    n, total = tracker.tasks_looked, len(tracker.task_ids)
    candidates = tracker.plan.candidates
    futile = sum(1 for c in candidates if (lk := tracker.last(c)) is not None and lk.decision == "futile")
    every = stop_state(len(candidates), futile)
    if futile == len(candidates):
        every += " (the other tasks could not decide it)"
    if n < total:
        return (
            f"{every} after {n} of the {total} tasks (anytime-valid): no further attempt starts "
            f"(the other {total - n} tasks were not run)"
        )
    return f"{every} after all {total} tasks (anytime-valid)"


__all__ = [
    "ANYTIME_RULE",
    "CLUSTERED_RULE",
    "DECISION_WORDS",
    "AnytimePlan",
    "AnytimeTracker",
    "anytime_plan",
    "anytime_share",
    "boundary_text",
    "clustered_by",
    "clustered_method",
    "decided_line",
    "decided_where",
    "entry_where",
    "fewest_tasks_to_decide",
    "finished_notice",
    "interval_words",
    "sequential_pair",
    "is_anytime",
    "look_line",
    "look_text",
    "recorded_clusters",
    "recorded_order",
    "replay",
    "sequential_method",
    "sequential_text",
    "tracker_for",
    "with_clusters",
]
