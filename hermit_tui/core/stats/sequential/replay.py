"""Stop when decided, read back: the looks of a ``--stop-when-decided`` launch recomputed from the files, for the
report, the card and the dashboard (:func:`pair_looks`): from results.jsonl, round by round, exactly as the launch
computed them (the score scale of each look is [0, 1] widened to the scores seen up to that round); an anytime-valid
launch by its recorded stream (:mod:`.anytime_tracker`)."""

from __future__ import annotations

from collections.abc import Sequence

from hermit_tui.core.records.results import SequentialEntry, Summary
from hermit_tui.core.stats.sequential.look import SequentialLook
from hermit_tui.core.stats.sequential.schedule import cluster_key
from hermit_tui.core.stats.sequential.spending import Spending
from hermit_tui.core.stats.sequential.tracker import Records, RoundTracker, SequentialPlan, by_key


def replay(
    entry: SequentialEntry,
    baseline_records: Records,
    candidate_records: Records,
    candidate: str,
    task_ids: Sequence[str],
) -> list[SequentialLook] | None:
    """The looks of a candidate's recorded launch, recomputed from the records round by round (None when a round
    it ran is not complete in the records)."""
    from hermit_tui.core.stats.sequential import anytime_looks, anytime_tracker

    if anytime_looks.is_anytime(entry):  # the anytime-valid design: its recorded stream of tasks
        return anytime_tracker.replay(entry, baseline_records, candidate_records, candidate)
    base, cand = by_key(baseline_records), by_key(candidate_records)
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
    by_label = {a: by_key(records_a), b: by_key(records_b)}
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


__all__ = ["monitored_pair", "negated", "pair_look", "pair_looks", "replay", "unmonitored_note"]
