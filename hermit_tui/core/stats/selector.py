"""Error bars for evaluations, one selector: the task mean with its 95% interval, solved rates and the variance split.

**The estimand** (:data:`ESTIMAND`): a selector's *mean score* is the mean over test tasks of each task's mean score
over its repeats, failed attempts scoring 0: the expected score on a test task drawn at random, every task weighted
alike. With the same number of repeats on every task it is hermit's ``mean_score`` (the mean over attempts); when
repeats differ (retries, a resumed run, sequential stopping) the two differ, the statistics use the task mean
throughout (the table, its standard error and interval, the pair figures, the variance notes and the verdict), and
hermit's attempt mean is shown beside it with a warning. Solved rates divide by all test tasks, as hermit does.

The interval: ``core.stats.intervals``; a pair of selectors compared: ``core.stats.figures``, which builds on the
helpers here (the interval's fields and method line, the clustered standard error, the exact mean). Input: per
selector, ``AttemptRecord`` objects, ``(task_id, repeat, score)`` tuples or
:class:`~hermit_tui.core.records.scores.AttemptColumns`, plus the test task ids (``core.records.scores``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.records.results import SOLVED_THRESHOLD
from hermit_tui.core.records.scores import Attempt, AttemptColumns, TaskTable, score_range, tabulate
from hermit_tui.core.stats.clusters import Clustering, cluster_df, clustered_text, clustered_var
from hermit_tui.core.stats.intervals import METHOD_TEXT, Interval, Method, task_mean_interval

ESTIMAND = (
    "the mean over test tasks of each task's mean score over its repeats (failed attempts score "
    "0); with equal repeats on every task this is hermit's mean_score, the mean over attempts"
)
SE_METHOD = "standard error = sd of the per-task means / sqrt(tasks) (the task is the unit of sampling)"


Attempts = Iterable[Attempt] | AttemptColumns | TaskTable


@dataclass(slots=True)
class TaskStat:
    """One task's attempts: mean and spread across repeats (``sd`` is None with a single repeat). A slotted
    dataclass, not a model: a report holds one per task and selector (333,336 at a million attempts; ~130 bytes each
    instead of ~500), and pydantic validates and serialises it the same way."""

    mean: float
    sd: float | None
    n: int
    solved: int  # repeats scoring at least the threshold


class SelectorStats(BaseModel):
    """One selector's mean score (the task mean, see :data:`ESTIMAND`) with its 95% interval, solved rates and
    variance split. Figures are None when they cannot be computed (no attempt, or one task for an interval)."""

    label: str
    threshold: float
    n_tasks: int  # test tasks with at least one attempt
    n_missing: int  # test tasks with no attempt
    n_test: int  # all test tasks: the denominator of the solved rates, as hermit's
    n_attempts: int
    n_ignored: int = 0  # attempts on ids outside the test tasks, or duplicates of a (task, repeat) seen again
    repeats: int | None  # k when every attempted task has the same number of repeats
    repeats_min: int
    repeats_max: int
    mean: float | None  # the task mean (the estimand)
    attempt_mean: float | None  # the mean over attempts: hermit's mean_score
    estimand: str = ESTIMAND
    se: float | None  # of the task mean
    ci_low: float | None
    ci_high: float | None
    ci_method: Method | None = None
    n_eff: float | None = None  # the effective sample size behind a score interval
    method: str = ""  # the interval and standard error, in words
    cluster_by: str | None = None  # --cluster-by: the field whose values cluster the tasks (se, interval clustered)
    n_clusters: int | None = None  # the clusters of the attempted tasks (the units of the interval)
    scale: tuple[float, float] = (0.0, 1.0)  # the range the interval respects
    per_task: dict[str, TaskStat]
    solved_once: float | None  # share of all test tasks with an attempt scoring at least the threshold
    solved_once_ci: tuple[float, float] | None  # Wilson 95%
    pass_k: float | None  # share of all test tasks whose every repeat is solved; None with fewer than 2 repeats
    pass_k_ci: tuple[float, float] | None
    rule_of_three: str | None  # when every task or no task is solved
    # Variance split of the task means: Var(task mean) = between + within * mean(1/k) (method of moments: the within
    # part is capped at the observed variance of the task means, so between >= 0 and the two parts add up to it).
    between_var: float | None
    within_var: float | None  # mean per-task variance across repeats; None with one repeat everywhere
    within_share: float | None  # (within / k) / Var(task mean): the share that is run-to-run noise
    se_more_tasks: float | None  # projected standard error with twice the tasks
    se_more_repeats: float | None  # projected standard error with twice the repeats
    se_repeats_floor: float | None  # no number of repeats brings the standard error below this (None: unknown)
    lever: Literal["tasks", "either"] | None  # "either": doubling repeats gives >= 90% of the gain of doubling tasks
    lever_note: str | None
    scores_outside_unit: bool
    nonfinite_scores: int = 0  # NaN or infinite scores, counted as 0
    warnings: list[str] = []


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a proportion (no continuity correction); (0, 1) when ``n`` is 0."""
    if n <= 0:
        return (0.0, 1.0)
    from hermit_tui.core.stats.intervals import wilson_bounds

    low, high = wilson_bounds(successes / n, n, z)
    return float(low), float(high)


def _per_task(table: TaskTable) -> dict[str, TaskStat]:
    """The per-task figures, built directly (the model's validation passes TaskStat instances through)."""
    ids = table.ids
    sd = [None if x != x else x for x in table.sd.tolist()]
    return dict(
        zip(
            map(ids.__getitem__, table.index.tolist()),
            map(TaskStat, table.mean.tolist(), sd, table.n.tolist(), table.solved.tolist()),
        )
    )


def _interval_fields(interval: Interval | None) -> dict[str, Any]:
    if interval is None:
        return dict(ci_low=None, ci_high=None, ci_method=None, n_eff=None)
    return dict(ci_low=interval.low, ci_high=interval.high, ci_method=interval.method, n_eff=interval.n_eff)


def _method_text(
    interval: Interval | None, what: str, clusters: Clustering | None = None, units: int = 0, df: float | None = None
) -> str:
    cl = ""
    if clusters is not None:
        of = f"{units} clusters" + (f", {df:.3g} df" if df is not None and math.isfinite(df) else "")
        cl = f"; {clustered_text(clusters.by, of)}"
    if interval is None:
        need = "2 clusters" if clusters is not None else "2 tasks"
        return f"no interval (needs {need}); {what}{cl}"
    extra = f", effective sample size {interval.n_eff:.1f}" if interval.n_eff is not None else ""
    return f"{METHOD_TEXT[interval.method]}{extra}; {what}{cl}"


def _clustered_se(values: np.ndarray, codes: np.ndarray | None, sd: float | None) -> float | None:
    """The standard error of the mean of ``values``: sd / sqrt(n), or CR2 cluster-robust (None with < 2 clusters)."""
    if codes is None:
        return sd / math.sqrt(len(values)) if sd is not None else None
    if len(values) < 2 or len(set(codes.tolist())) < 2:
        return None
    return math.sqrt(max(float(clustered_var(values, codes)), 0.0))


# ---------------------------------------------------------------------------------------------------- one selector


def exact_mean(values: np.ndarray) -> float:
    """The mean of ``values`` from their correctly rounded sum (``math.fsum``), so it does not depend on their order:
    numpy's pairwise sum over the tasks in one order gave the demo's none 0.33749999999999991 where the card, reading
    the tasks in another, had 0.33750000000000002, shown as 0.337 on one screen and 0.338 on the next."""
    return math.fsum(values.tolist()) / len(values)


def selector_stats(
    label: str,
    records: Attempts,
    task_ids: Sequence[str] | None,
    threshold: float = SOLVED_THRESHOLD,
    scale: tuple[float, float] | None = None,
    clusters: Clustering | None = None,
) -> SelectorStats:
    """The task mean with its 95% interval, per-task figures, solved rates and the variance split of one selector.
    ``clusters``: the standard error and interval are clustered by it (``core.stats.clusters``).

    ``task_ids`` are the test task ids (None: the ids in the records). Attempts on other ids are ignored and counted.
    ``scale``: the range the interval respects (default: [0, 1] widened to the scores observed).
    """
    table = tabulate(records, task_ids, threshold)
    lo, hi = scale if scale is not None else score_range(table)
    g, n_test = table.n_tasks, len(table.ids)
    counts = table.n
    outside = bool(len(table.scores) and (table.scores.min() < 0 or table.scores.max() > 1))
    common = dict(
        label=label,
        threshold=threshold,
        n_tasks=g,
        n_missing=n_test - g,
        n_test=n_test,
        n_attempts=table.n_attempts,
        n_ignored=table.n_ignored,
        repeats=int(counts[0]) if g and counts.min() == counts.max() else None,
        repeats_min=int(counts.min()) if g else 0,
        repeats_max=int(counts.max()) if g else 0,
        per_task=_per_task(table),
        scores_outside_unit=outside,
        nonfinite_scores=table.nonfinite,
        scale=(lo, hi),
    )
    codes = clusters.codes([table.ids[i] for i in table.index.tolist()]) if clusters is not None else None
    units = len(set(codes.tolist())) if codes is not None else 0
    if clusters is not None:
        common |= dict(cluster_by=clusters.by, n_clusters=units)
    if not g:
        return SelectorStats(
            **common,
            mean=None,
            attempt_mean=None,
            se=None,
            ci_low=None,
            ci_high=None,
            method=_method_text(None, SE_METHOD),
            solved_once=None,
            solved_once_ci=None,
            pass_k=None,
            pass_k_ci=None,
            rule_of_three=None,
            **_NO_SPLIT,
            warnings=[f"{label}: no attempt on any of the {n_test} test tasks"] if n_test else [],
        )

    means = table.mean
    mean = exact_mean(means)
    attempt_mean = float(table.scores.mean())
    sd = float(means.std(ddof=1)) if g > 1 else None
    se = _clustered_se(means, codes, sd)
    binary = bool(np.all((table.scores == lo) | (table.scores == hi)))
    interval = task_mean_interval(means, counts, binary, lo, hi, clusters=codes)

    solved = int((table.solved > 0).sum())
    has_pass_k = int(counts.min()) >= 2
    all_solved = int((table.solved == counts).sum())
    warnings = []
    if clusters is not None and units < 2 and g > 1:
        warnings.append(f"{label}: the attempted tasks fall in one cluster of {clusters.by}: no interval")
    if int(counts.min()) != int(counts.max()):
        warnings.append(
            f"{label}: unequal repeats ({counts.min()}-{counts.max()} per task): the mean score is the "
            f"mean of the task means, {mean:.4f}; hermit's mean_score over attempts is {attempt_mean:.4f}"
        )
    if n_test > g:
        warnings.append(
            f"{label}: {n_test - g} of {n_test} test tasks have no attempt: the mean and its interval "
            f"cover the {g} attempted tasks; the solved rates count the missing ones as unsolved"
        )
    return SelectorStats(
        **common,
        mean=mean,
        attempt_mean=attempt_mean,
        se=se,
        **_interval_fields(interval),
        method=_method_text(interval, SE_METHOD, clusters, units, cluster_df(codes) if codes is not None else None),
        solved_once=solved / n_test,
        solved_once_ci=wilson(solved, n_test),
        pass_k=all_solved / n_test if has_pass_k else None,
        pass_k_ci=wilson(all_solved, n_test) if has_pass_k else None,
        rule_of_three=_rule_of_three(solved, all_solved if has_pass_k else None, n_test, threshold),
        **_split(table),
        warnings=warnings,
    )


#: The variance split's fields where there is none to make (no task attempted; the cases of :func:`_split` add why)
_NO_SPLIT: dict[str, Any] = dict(
    between_var=None,
    within_var=None,
    within_share=None,
    se_more_tasks=None,
    se_more_repeats=None,
    se_repeats_floor=None,
    lever=None,
    lever_note=None,
)


def _split(table: TaskTable) -> dict[str, Any]:
    """Between/within variance split of the task means and what more tasks or repeats would do to the se."""
    g = table.n_tasks
    means = table.mean
    inv_k = float(np.mean(1.0 / table.n))  # 1/k, or its average with unequal repeats
    has_sd = ~np.isnan(table.sd)
    if g < 2:
        return _NO_SPLIT | dict(lever_note="One task: the between-task variance cannot be estimated.")
    var_means = float(means.var(ddof=1))
    if not has_sd.any():
        return _NO_SPLIT | dict(
            between_var=var_means,
            lever_note=(
                "One attempt per task: the run-to-run variance cannot be separated from the between-task variance; "
                "more tasks narrow the interval, repeats may too."
            ),
        )
    within = float(np.mean(np.square(table.sd[has_sd])))
    noise = min(within * inv_k, var_means)  # the within part cannot exceed what was observed
    between = var_means - noise
    share = noise / var_means if var_means > 0 else None
    se_tasks = math.sqrt(var_means / (2 * g))
    se_reps = math.sqrt((between + noise / 2) / g)
    lever = "either" if share is not None and share >= 0.9 else "tasks"
    floor: float | None = math.sqrt(between / g)
    if var_means == 0:
        note = (
            "Every task has the same mean score: the sample shows no spread (standard error 0), so the "
            "interval is the no-spread bound, which more tasks narrow and more repeats do not."
        )
        floor = None
    elif between <= 1e-15:
        floor = None
        note = (
            f"Run-to-run noise accounts for all the spread of the task means (the between-task variance is "
            f"estimated at 0). Doubling the tasks would bring the standard error to {se_tasks:.3g}, doubling "
            f"the repeats to {se_reps:.3g}; this sample cannot tell how far more repeats alone could go."
        )
    else:
        note = (
            f"Run-to-run noise is {share:.0%} of the variance of a task's mean. Doubling the tasks would bring "
            f"the standard error to {se_tasks:.3g}, doubling the repeats to {se_reps:.3g}; no number of repeats "
            f"brings it below {floor:.3g}."
        )
    return dict(
        between_var=between,
        within_var=within,
        within_share=share,
        se_more_tasks=se_tasks,
        se_more_repeats=se_reps,
        se_repeats_floor=floor,
        lever=lever,
        lever_note=note,
    )


def _rule_of_three(solved: int, all_solved: int | None, g: int, threshold: float) -> str | None:
    bound = min(1.0, 3 / g)
    what = f"a score of at least {threshold:g}"
    if solved == 0:
        return f"No task of {g} reached {what}: the true solved rate is below {bound:.2g} (rule of three, 95%)."
    if all_solved == g:
        return (
            f"Every repeat of all {g} tasks reached {what}: the true pass^k rate is above {1 - bound:.2g} "
            "(rule of three, 95%)."
        )
    if solved == g:
        return (
            f"All {g} tasks reached {what} at least once: the true solved rate is above {1 - bound:.2g} "
            "(rule of three, 95%)."
        )
    return None


__all__ = ["ESTIMAND", "SelectorStats", "TaskStat", "selector_stats", "wilson"]
