"""How the anytime-valid design reads: a look's verdict, method and sequence against 0 and ±M, the pair's figures
with the sequence in place of the fixed design's (:func:`sequential_pair`), the warning when a split is too small for
it to decide (:func:`small_split_note`) and the launch's notices and log lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermit_tui.core.stats.sequential.anytime import ALPHA, paired_confidence_sequence
from hermit_tui.core.stats.sequential.anytime_looks import clustered_by, decided_where, look_text
from hermit_tui.core.stats.sequential.anytime_plan import anytime_share
from hermit_tui.core.stats.sequential.anytime_tracker import AnytimeTracker
from hermit_tui.core.stats.sequential.look import SequentialLook, decide, stop_state, stopped_how
from hermit_tui.core.stats.sequential.tracker import SequentialPlan

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


def sequential_text(look: SequentialLook, a: str, b: str) -> str:
    """The verdict of a monitored pair, b - a, in one or two sentences."""
    from hermit_tui.core.present import short_interval
    from hermit_tui.core.present import short_num as _num
    from hermit_tui.core.stats.sequential.look import AT_STOPPING

    d = look.mean_diff
    if d is None or look.ci_low is None or look.ci_high is None:
        return f"Undecided: no task of {a} and {b} looked at yet."
    ci = f"anytime-valid 95% CS {short_interval(look.ci_low, look.ci_high)}"
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
    interval, decision, verdict and rule (``core.stats.sequential.text.sequential_pair`` for this design)."""
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
    "boundary_text",
    "decided_line",
    "fewest_tasks_to_decide",
    "finished_notice",
    "sequential_pair",
    "look_line",
    "sequential_method",
    "sequential_text",
]
