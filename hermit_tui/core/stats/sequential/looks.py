"""Stop when decided, read back: the design of a ``--stop-when-decided`` launch and its looks, recomputed from the
files, and how they read.

``hermit-tui eval --stop-when-decided`` runs whole rounds (round ``r`` = repeat ``r`` of every test task under every
selector) and, after each, compares every candidate with the baseline by the group-sequential test of
``core.stats.sequential``; the launch stops at the end of the first round after which every candidate is decided
("improvement", "regression", or with a margin "equivalent"), at the latest after ``eval.repeats`` rounds.

This module holds the design (:class:`SequentialPlan`), the state of the looks (:class:`RoundTracker`, one
``SequentialMonitor`` per candidate), and what the report, the card and the dashboard need to show them again from
the files (:func:`pair_looks`, :func:`sequential_pair`): the looks are recomputed from results.jsonl, round by round,
exactly as the launch computed them (the score scale of each look is [0, 1] widened to the scores seen up to that
round). The launch's own part, the round barrier and the plan made from its options, is ``core.run.rounds``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.present import p_value, short_num
from hermit_tui.core.records.results import SequentialEntry, Summary
from hermit_tui.core.stats.figures import PairStats, VerdictKind
from hermit_tui.core.stats.sequential.monitor import (
    ADJUSTED_METHOD,
    ALPHA,
    FUTILITY_METHOD,
    METHOD,
    ORDERED_METHOD,
    ClusteredMonitor,
    SequentialLook,
    SequentialMonitor,
    Spending,
    candidate_spend,
    cluster_codes,
    cluster_key,
    cluster_look_order,
    look_order,
    look_schedule,
)


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
    batches: int = 1  # looks within the first round (core.stats.sequential.look_schedule; 1: after whole rounds only)
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
    from hermit_tui.core.stats.sequential.monitor import BATCH_METHOD

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
    ``core.stats.sequential.look_order`` (the runner schedules them so)."""

    def __init__(self, plan: SequentialPlan, task_ids: Sequence[str]):
        self.plan = plan
        if plan.cluster_of is not None:  # whole clusters in the clustered look order (core.stats.sequential)
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


def replay(
    entry: SequentialEntry,
    baseline_records: Records,
    candidate_records: Records,
    candidate: str,
    task_ids: Sequence[str],
) -> list[SequentialLook] | None:
    """The looks of a candidate's recorded launch, recomputed from the records round by round (None when a round
    it ran is not complete in the records)."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(entry):  # the anytime-valid design: its recorded stream of tasks
        return anytime_looks.replay(entry, baseline_records, candidate_records, candidate)
    base, cand = _by_key(baseline_records), _by_key(candidate_records)
    plan = SequentialPlan(
        baseline=entry.baseline,
        candidates=[candidate],
        max_rounds=entry.max_rounds,
        margin=entry.margin,
        alpha=entry.alpha,
        method=entry.method,
        # a summary written before issue 25, item 4, spent the whole alpha for each candidate, by O'Brien-Fleming
        spend=entry.spend if entry.spend is not None else entry.alpha,
        split_over=entry.split_over or 1,
        spending=_recorded_spending(entry),
        batches=entry.batches or 1,
        futility=entry.futility,
        # the clustered design: replayed by the clusters the launch recorded (not the cluster file as it is now)
        cluster_by=entry.cluster_by,
        clusters_sha256=entry.clusters_sha256,
        cluster_of=entry.cluster_of if entry.clusters_sha256 is not None else None,
    )
    if plan.cluster_of is not None:  # the recorded mapping must be the one its sha256 says (not edited since)
        from hermit_tui.core.stats.clusters import Clustering

        recorded = Clustering(by=entry.cluster_by or "", of=plan.cluster_of)
        if recorded.digest() != entry.clusters_sha256 or len({cluster_key(t, plan.cluster_of) for t in task_ids}) < 2:
            return None
    tracker = RoundTracker(plan, task_ids)
    if not 1 <= entry.rounds <= entry.max_rounds:
        return None
    records = {entry.baseline: base, candidate: cand}
    wanted = (entry.rounds, entry.tasks_looked or len(tracker.task_ids))
    if wanted not in tracker.schedule:
        return None
    while (tracker.rounds, tracker.tasks_looked) != wanted:
        if not tracker.complete(records, tracker.looks + 1):
            return None
        tracker.check(records)
    return tracker.pairs[candidate].looks


def _recorded_spending(entry: SequentialEntry) -> Spending:
    if "Kim-DeMets" in entry.method:
        return "power"
    return "hsd" if "Hwang-Shih-DeCani" in entry.method else "obf"


def monitored_pair(a: str, summary_a: Summary | None, b: str, summary_b: Summary | None) -> tuple[str, str] | None:
    """(baseline, candidate) when evaluations ``a`` and ``b`` (labels, summaries) are a candidate and its baseline
    of one ``--stop-when-decided`` launch, else None."""
    for base, sb, cand, sc in ((a, summary_a, b, summary_b), (b, summary_b, a, summary_a)):
        ec = sc.sequential if sc is not None else None
        eb = sb.sequential if sb is not None else None
        if ec is None or eb is None or ec.decision is None or ec.baseline != base or eb.baseline != base:
            continue
        if eb.candidates is not None and cand in eb.candidates and eb.rounds == ec.rounds:
            return base, cand
    return None


def negated(look: SequentialLook) -> SequentialLook:
    """The same look read the other way round (baseline - candidate)."""
    flip = {"improvement": "regression", "regression": "improvement"}
    return look.model_copy(
        update=dict(
            baseline=look.candidate,
            candidate=look.baseline,
            decision=flip.get(look.decision, look.decision),
            mean_diff=None if look.mean_diff is None else -look.mean_diff,
            ci_low=None if look.ci_high is None else -look.ci_high,
            ci_high=None if look.ci_low is None else -look.ci_low,
            z=None if look.z is None else -look.z,
        )
    )


def pair_look(
    a: str,
    summary_a: Summary | None,
    records_a: Records,
    b: str,
    summary_b: Summary | None,
    records_b: Records,
    task_ids: Sequence[str] | None,
) -> tuple[SequentialLook | None, list[str]]:
    """The last look of :func:`pair_looks` (None when the pair was not monitored), with what to warn about."""
    looks, notes = pair_looks(a, summary_a, records_a, b, summary_b, records_b, task_ids)
    return (looks[-1] if looks else None), notes


def pair_looks(
    a: str,
    summary_a: Summary | None,
    records_a: Records,
    b: str,
    summary_b: Summary | None,
    records_b: Records,
    task_ids: Sequence[str] | None,
) -> tuple[list[SequentialLook], list[str]]:
    """The looks, round by round, of the pair b - a when a and b are a candidate and its baseline of one
    ``--stop-when-decided`` launch (recomputed from the records, read as b - a), with what to warn about; ([],
    warnings) otherwise. ``task_ids``: the test task ids (None, or more than the launch ran: those the baseline's
    first round has, which must be as many as the candidate's summary says)."""
    found = monitored_pair(a, summary_a, b, summary_b)
    if found is None:
        note = unmonitored_note(a, summary_a, b, summary_b)
        return [], [note] if note else []
    base, cand = found
    summary = summary_b if cand == b else summary_a
    entry = summary.sequential if summary is not None else None
    if summary is None or entry is None:  # (monitored_pair found both)
        return [], []
    by_label = {a: _by_key(records_a), b: _by_key(records_b)}
    first = {tid for (tid, rep) in by_label[base] if rep == 1}
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(entry):  # replayed from the recorded stream (it may stop before every test task)
        ids = anytime_looks.recorded_order(entry)
    elif (entry.batches or 1) > 1:  # looks within round 1: the look order and sizes need every test task's id
        every = list(task_ids) if task_ids is not None else sorted(first)
        ids = every if len(every) == summary.tasks and first <= set(every) else []
    else:
        ids = [t for t in (task_ids if task_ids is not None else sorted(first)) if t in first]
    whole = len(ids) == summary.tasks or anytime_looks.is_anytime(entry)
    looks = replay(entry, by_label[base], by_label[cand], cand, ids) if whole else None
    if not looks:
        return [], [
            f"{cand} vs {base}: the stop-when-decided launch's {entry.rounds} rounds are not all in the "
            "records, so its sequential test cannot be recomputed: the fixed design's figures are shown, "
            "and they ignore that the launch stopped on what it saw"
        ]
    warnings = []
    if looks[-1].decision != entry.decision:
        warnings.append(
            f"{cand} vs {base}: the launch recorded '{entry.decision}', its records now give "
            f"'{looks[-1].decision}' (attempts re-run since the decision?)"
        )
    return ([negated(look) for look in looks] if cand == a else looks), warnings


def _by_key(records: Records) -> Mapping[tuple[str, int], Any]:
    if isinstance(records, Mapping):
        return records
    items: Iterable[Any] = records
    return {(r.id, r.repeat): r for r in items}


def unmonitored_note(a: str, summary_a: Summary | None, b: str, summary_b: Summary | None) -> str | None:
    """Two candidates of one stop-when-decided launch were compared with the baseline, not with each other."""
    ea = summary_a.sequential if summary_a is not None else None
    eb = summary_b.sequential if summary_b is not None else None
    if ea is None or eb is None or ea.baseline != eb.baseline or a == ea.baseline or b == eb.baseline:
        return None
    return (
        f"{b} vs {a}: both were compared with {ea.baseline} by a stop-when-decided launch, not with each other; "
        "this pair's fixed-design figures ignore that the launch stopped on what it saw"
    )


SEQUENTIAL_RULE = (
    "after each look of a stop-when-decided launch (a whole round, or a batch of the first round's tasks), "
    "'an improvement' ('a regression') when the "
    "repeated 95% confidence interval for the mean difference lies above (below) 0, 'equivalent' (with "
    "a margin M) when it lies within -M..M; 'stopped for futility' (without a margin) when the conditional power "
    "of a later decision under the current estimate is below 2%; the first decision is kept; otherwise 'undecided'"
)
FIXED_P_NOTE = (
    "the p-value is the fixed design's, not adjusted for the looks after each round: for reference only "
    "(the decision is the sequential test's)"
)
ADJUSTED_P_NOTE = (
    "the p-value is adjusted for the stopping rule (stagewise ordering of the looks, or with the futility rule the "
    "sample-mean ordering, Jennison & Turnbull 2000, ch. 8); the decision is the repeated interval's"
)


AT_STOPPING = "as observed at stopping, which stopping early tends to overstate"


def stopped_how(decisions: Iterable[str | None]) -> str:
    """How a launch that stopped before its end stopped, from its candidates' last decisions: "stopped for
    futility" when every one of them was futile, else "stopped when decided"."""
    seen = list(decisions)
    return "stopped for futility" if seen and all(d == "futile" for d in seen) else "stopped when decided"


def stop_state(candidates: int, futile: int) -> str:
    """What a launch that stopped says of its ``candidates``, ``futile`` of them stopped for futility (no decision
    in reach), the others decided."""
    if not futile:
        return "every candidate is decided"
    if futile < candidates:
        return f"every candidate is decided or stopped for futility ({futile} of {candidates})"
    return f"{'the candidate is' if candidates == 1 else 'every candidate is'} stopped for futility"


def entry_stopped_how(entry: Any) -> str:
    """:func:`stopped_how` of a recorded ``sequential`` entry: its candidates' decisions (a baseline's entry lists
    them), else its own."""
    return stopped_how(list(entry.candidates.values()) if entry.candidates else [entry.decision])


ADJUSTED = "median-unbiased for the stopping rule"

_num = short_num


def look_text(look: SequentialLook) -> str:
    """Where ``look`` was taken: 'round r of R', or within round 1 'n of the G tasks of round 1 (of R)'."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.look_text(look)
    if look.within_first_round:
        return f"{look.tasks} of the {look.total_tasks} tasks of round 1 (of {look.max_rounds})"
    return f"round {look.rounds} of {look.max_rounds}"


def decided_where(look: SequentialLook) -> str:
    """Where ``look``'s decision was taken: 'at round r', or 'after n of the G tasks of round 1'."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.decided_where(look)
    if look.decided_tasks is not None and look.total_tasks is not None and look.decided_tasks < look.total_tasks:
        return f"after {look.decided_tasks} of the {look.total_tasks} tasks of round 1"
    return f"at round {look.decided_at}"


def adjusted_text(look: SequentialLook) -> str | None:
    """The inference adjusted for the stopping rule, in words ('median-unbiased for the stopping rule, 95% CI ...,
    p ...; observed ...'), or None before the candidate stopped."""
    if not look.adjusted or look.adjusted_low is None or look.adjusted_high is None:
        return None
    p = "" if look.adjusted_p is None else f", p {p_value(look.adjusted_p)}"
    later = look.decided_at is not None and (look.rounds, look.tasks) != (look.decided_at, look.decided_tasks)
    where = (
        f"after {look.tasks} of the {look.total_tasks} tasks of round 1"
        if look.within_first_round
        else f"at round {look.rounds}"
    )
    at = f" {where}" if later else ""
    observed = "" if look.mean_diff is None else f"; observed {look.mean_diff:+.3f}{at}, not adjusted"
    return f"{ADJUSTED}, 95% CI {_num(look.adjusted_low)} to {_num(look.adjusted_high)}{p}{observed}"


def sequential_text(look: SequentialLook, a: str, b: str) -> str:
    """The verdict of a monitored pair, b - a, in one or two sentences: the estimate adjusted for the stopping rule
    once the candidate stopped (the observed one, flagged, before)."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.sequential_text(look, a, b)
    d = look.mean_diff
    when = f"decided {decided_where(look)} of {look.max_rounds}" if look.decided_at is not None else look_text(look)
    ci = (
        "no interval yet"
        if look.ci_low is None or look.ci_high is None
        else f"repeated 95% CI {_num(look.ci_low)} to {_num(look.ci_high)}"
    )
    if d is None:
        return f"Undecided: no complete round of {a} and {b} yet."
    adjusted = adjusted_text(look)
    est = look.adjusted_estimate if adjusted is not None and look.adjusted_estimate is not None else d
    if look.decision in ("improvement", "regression"):
        higher = "higher" if est > 0 else "lower"
        word = "an improvement" if look.decision == "improvement" else "a regression"
        early = f"{adjusted}; " if adjusted else (f"{AT_STOPPING}; " if look.stopped_early else "")
        return f"Stopped when decided: {b} scores {_num(abs(est))} {higher} than {a} ({early}{ci}; {when}): {word}."
    lead = f"{b} − {a} = {est:+.3f} ({f'{adjusted}; ' if adjusted else ''}{ci}"
    if look.decision == "equivalent":
        return f"Stopped when decided: {lead}; {when}): equivalent within ±{look.margin:g}."
    if look.decision == "futile":
        cp = "" if look.conditional_power is None else f"{look.conditional_power:.2g}, "
        return (
            f"Stopped for futility {decided_where(look)} of {look.max_rounds}: {lead}); no decision was in reach "
            f"(conditional power {cp}under the current estimate, below {look.futility or 0:g}): no clear difference."
        )
    reach = "includes 0" + (f" and reaches beyond ±{look.margin:g}" if look.margin is not None else "")
    done = look.rounds >= look.max_rounds
    head = f"Undecided after all {look.max_rounds} rounds" if done else f"Undecided so far ({when})"
    return f"{head}: {lead}); the interval {reach}."


def sequential_method(look: SequentialLook) -> str:
    """The interval's method, in words."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.sequential_method(look)
    from hermit_tui.core.stats.intervals import METHOD_TEXT

    text = f"repeated 95% confidence interval (the intersection over the rounds run): {look.method}"
    if look.ci_method is not None and look.nominal_level is not None:
        text += (
            f"; round {look.rounds}'s interval: {METHOD_TEXT[look.ci_method]} at the nominal confidence "
            f"1 − {1 - look.nominal_level:.2g}"
        )
    if look.futility is not None:
        text += f"; {FUTILITY_METHOD.format(cp=look.futility)}"
    if look.adjusted:
        method = ADJUSTED_METHOD if look.futility is None else ORDERED_METHOD
        text += f"; the estimate, interval and p at stopping: {method}"
    return text


def boundary_text(look: SequentialLook) -> str:
    """This look's boundary against what was observed: critical z, observed z, the interval against 0 and ±M."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.boundary_text(look)

    def z(x: float | None) -> str:
        if x is None:
            return "—"
        return ("∞" if x > 0 else "−∞") if math.isinf(x) else f"{x:.2f}"

    parts = [f"{look_text(look)}: boundary |z| ≥ {z(look.boundary_z)}, observed z {z(look.z)}"]
    if look.ci_low is not None:
        target = "0" + (f" and ±{look.margin:g}" if look.margin is not None else "")
        parts.append(f"repeated 95% CI {look.ci_low:+.3f} to {look.ci_high:+.3f} against {target}")
    if look.alpha_spent is not None:
        split = f", α {look.alpha:g} split over {look.candidates} candidates" if look.candidates > 1 else ""
        parts.append(f"α spent {look.alpha_spent:.2g} of {look.boundary_alpha:.3g}{split}")
    return "; ".join(parts)


def sequential_pair(pair: PairStats, look: SequentialLook) -> PairStats:
    """``pair`` (a ``core.stats.figures.PairStats``, b - a) with the sequential look in place of the fixed design's
    interval, decision, verdict and rule; ``look`` must read b - a (see :func:`negated`)."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.sequential_pair(pair, look)  # type: ignore[no-any-return]
    decision = VerdictKind.UNCLEAR if look.decision in ("undecided", "futile") else VerdictKind(look.decision)
    adjusted = look.adjusted_p is not None
    return pair.model_copy(
        update=dict(
            sequential=look,
            ci_low=look.ci_low,
            ci_high=look.ci_high,
            ci_method=look.ci_method,
            n_eff=None,
            method=sequential_method(look),
            decision=decision,
            verdict=sequential_text(look, pair.a, pair.b),
            rule=SEQUENTIAL_RULE,
            p_value=look.adjusted_p if adjusted else pair.p_value,
            test=ADJUSTED_P_NOTE if adjusted else (f"{pair.test}; {FIXED_P_NOTE}" if pair.test else FIXED_P_NOTE),
        )
    )


__all__ = [
    "ADJUSTED",
    "ADJUSTED_P_NOTE",
    "AT_STOPPING",
    "adjusted_text",
    "decided_where",
    "design_method",
    "entry_stopped_how",
    "look_text",
    "FIXED_P_NOTE",
    "SEQUENTIAL_RULE",
    "Records",
    "RoundTracker",
    "SequentialPlan",
    "boundary_text",
    "monitored_pair",
    "negated",
    "pair_look",
    "pair_looks",
    "replay",
    "round_scores",
    "sequential_method",
    "sequential_pair",
    "sequential_text",
    "stop_state",
    "stopped_how",
    "unmonitored_note",
]
