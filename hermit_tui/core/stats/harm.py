"""Harmed tasks, honestly: the test tasks where the candidate does worse than the baseline *with evidence*, by a
per-task test on the repeats, with the false-discovery rate controlled over the tasks (Benjamini–Hochberg).

The per-task test is one-sided (H1: the candidate's score on this task is lower) and exact: the permutation
distribution of the candidate's mean under exchangeability of the task's attempts, by full enumeration of which
attempts are the candidate's. For pass/fail scores this is Fisher's exact test (hypergeometric); for graded scores
it is the exact permutation test of the difference of means (valid for any score). With few repeats the smallest
p-value a task can reach is 1 / C(m + n, n) (3 vs 3 repeats: 0.05), and with T tasks Benjamini–Hochberg needs at
least q / T for one discovery: :func:`repeats_needed` says how many repeats per selector would make one reachable,
so that too few repeats are said to be too few instead of the largest drops being listed as findings.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.records.scores import TaskTable
from hermit_tui.core.stats.multiplicity import BH, benjamini_hochberg

FDR_Q = 0.1
MAX_ENUMERATION = 200_000  # splits enumerated per task; beyond it the binary path (hypergeometric) or the bound
TEST = "one-sided exact permutation test per task (Fisher's exact test for pass/fail scores)"


class HarmedTask(BaseModel):
    task: str
    baseline_mean: float
    candidate_mean: float
    difference: float  # candidate - baseline
    baseline_repeats: int
    candidate_repeats: int
    p_value: float
    q_value: float  # BH-adjusted over the tasks tested


class HarmReport(BaseModel):
    """The per-task screen: ``harmed`` (q ≤ ``q``, most evidence first), the tasks tested, the smallest p-value any
    task could reach at these repeats and, when no task could reach the bar, the repeats per selector that would."""

    baseline: str
    candidate: str
    q: float = FDR_Q
    test: str = TEST
    adjustment: str = BH
    tested: int
    harmed: list[HarmedTask]
    smallest_reachable_p: float | None
    reachable: bool  # a single task could be flagged on its own evidence at these repeats (p ≤ q / tasks)
    repeats_needed: int | None  # with equal repeats per selector, the fewest that make one discovery reachable
    note: str


def fisher_lower_p(a_success: int, m: int, b_success: int, n: int) -> float:
    """One-sided Fisher exact p: P(candidate successes ≤ observed) given the margins (m baseline and n candidate
    attempts, a_success + b_success successes in all)."""
    total = a_success + b_success
    denom = math.comb(m + n, total)
    low = max(0, total - m)
    return sum(math.comb(n, k) * math.comb(m, total - k) for k in range(low, b_success + 1)) / denom


def permutation_lower_p(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided exact permutation p: the share of ways to choose len(b) of the pooled attempts as the candidate's
    whose sum is at most the observed candidate sum (ties count, so the test is conservative)."""
    pooled = np.concatenate([a, b])
    n = len(b)
    observed = float(b.sum())
    combos = math.comb(len(pooled), n)
    if combos > MAX_ENUMERATION:
        raise ValueError(f"{combos} splits: too many to enumerate")
    eps = 1e-9 * max(1.0, float(np.abs(pooled).max()))
    count = 0
    for pick in itertools.combinations(range(len(pooled)), n):
        if float(pooled[list(pick)].sum()) <= observed + eps:
            count += 1
    return count / combos


def task_p(a: np.ndarray, b: np.ndarray, threshold: float) -> float:
    """The per-task one-sided p-value (see the module)."""
    if len(a) == 0 or len(b) == 0:
        return 1.0
    pooled = np.concatenate([a, b])
    if bool(np.all((pooled == 0.0) | (pooled == 1.0))):
        return fisher_lower_p(int(a.sum()), len(a), int(b.sum()), len(b))
    if math.comb(len(pooled), len(b)) > MAX_ENUMERATION:  # many repeats of graded scores: pass/fail at the threshold
        return fisher_lower_p(int((a >= threshold).sum()), len(a), int((b >= threshold).sum()), len(b))
    return permutation_lower_p(a, b)


FISHER_TABLE = 5_000  # a (repeats, repeats) shape with more (successes, candidate successes) cells: scipy instead


@lru_cache(maxsize=256)
def _fisher_table(m: int, n: int) -> np.ndarray:
    """:func:`fisher_lower_p` for every margin of m baseline and n candidate attempts: cell [total, b_success]
    (cells no table can reach stay 1)."""
    out = np.ones((m + n + 1, n + 1))
    for total in range(m + n + 1):
        for b_s in range(max(0, total - m), min(n, total) + 1):
            out[total, b_s] = fisher_lower_p(total - b_s, m, b_s, n)
    return out


def _hypergeom_lower(b_s: np.ndarray, m: np.ndarray, n: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Fisher's one-sided p for many tasks at once: P(X ≤ b_s), X hypergeometric (m + n attempts, ``total``
    successes, n drawn). Exact (:func:`fisher_lower_p`, tabulated once per shape of repeats); scipy's
    hypergeometric distribution only for shapes too large to tabulate."""
    b_s, m, n, total = (np.asarray(x, dtype=np.int64) for x in (b_s, m, n, total))
    out = np.ones(len(b_s))
    for mm, nn in _shapes(m, n):
        rows = np.flatnonzero((m == mm) & (n == nn))
        if (mm + nn + 1) * (nn + 1) <= FISHER_TABLE:
            out[rows] = _fisher_table(mm, nn)[total[rows], b_s[rows]]
        else:
            from scipy.stats import hypergeom

            out[rows] = hypergeom.cdf(b_s[rows], mm + nn, total[rows], nn)
    return out


def _shapes(m: np.ndarray, n: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (m, n) pairs of repeats, ascending."""
    if not len(m):
        return []
    width = int(n.max()) + 1
    return [(int(c // width), int(c % width)) for c in np.unique(m.astype(np.int64) * width + n).tolist()]


def _per_task(values: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Per task, the sum of ``values`` (bool or int) over its attempts ``[start, start + length)``."""
    cum = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
    out: np.ndarray = cum[start + length] - cum[start]
    return out


def _gather(scores: np.ndarray, start: np.ndarray, k: int) -> np.ndarray:
    """Tasks x ``k`` scores of tasks that each have ``k`` attempts from ``start``."""
    out: np.ndarray = scores[start[:, None] + np.arange(k)]
    return out


def columns_p(
    a_scores: np.ndarray,
    a_start: np.ndarray,
    m: np.ndarray,
    b_scores: np.ndarray,
    b_start: np.ndarray,
    n: np.ndarray,
    threshold: float,
) -> np.ndarray:
    """:func:`task_p` for many tasks from columns (the same values): task i's baseline scores are
    ``a_scores[a_start[i]:a_start[i] + m[i]]``, its candidate's ``b_scores[b_start[i]:b_start[i] + n[i]]``.
    Pass/fail tasks by Fisher's exact test, graded ones by enumerating the splits for all tasks of one shape of
    repeats together (no loop over the tasks)."""
    a_scores, b_scores = np.asarray(a_scores, dtype=float), np.asarray(b_scores, dtype=float)
    a_start, b_start = np.asarray(a_start, dtype=np.int64), np.asarray(b_start, dtype=np.int64)
    m, n = np.asarray(m, dtype=np.int64), np.asarray(n, dtype=np.int64)
    out = np.ones(len(m))
    other = _per_task(~((a_scores == 0.0) | (a_scores == 1.0)), a_start, m)
    other += _per_task(~((b_scores == 0.0) | (b_scores == 1.0)), b_start, n)
    tested = (m > 0) & (n > 0)
    exact = tested & (other == 0)  # pass/fail: Fisher's test
    graded = tested & (other > 0)
    for mm, nn in _shapes(m[graded], n[graded]):
        rows = np.flatnonzero(graded & (m == mm) & (n == nn))
        if math.comb(mm + nn, nn) > MAX_ENUMERATION:  # many repeats of graded scores: pass/fail at the threshold
            exact[rows] = True
            continue
        combos = np.array(list(itertools.combinations(range(mm + nn), nn)), dtype=np.int64)
        chunk = max(1, 2_000_000 // len(combos))
        for first in range(0, len(rows), chunk):
            part = rows[first : first + chunk]
            pooled = np.concatenate([_gather(a_scores, a_start[part], mm), _gather(b_scores, b_start[part], nn)], 1)
            observed = pooled[:, mm:].sum(axis=1)
            eps = 1e-9 * np.maximum(1.0, np.abs(pooled).max(axis=1))
            sums = pooled[:, combos].sum(axis=2)
            out[part] = (sums <= (observed + eps)[:, None]).mean(axis=1)
    if exact.any():
        a_s = _per_task(a_scores >= threshold, a_start, m)[exact]
        b_s = _per_task(b_scores >= threshold, b_start, n)[exact]
        out[exact] = _hypergeom_lower(b_s, m[exact], n[exact], a_s + b_s)
    res: np.ndarray = np.minimum(out, 1.0)
    return res


def batch_p(pairs: Sequence[tuple[np.ndarray, np.ndarray]], threshold: float) -> list[float]:
    """:func:`task_p` for many tasks at once (the same values), by :func:`columns_p`."""
    m = np.array([len(a) for a, _ in pairs], dtype=np.int64)
    n = np.array([len(b) for _, b in pairs], dtype=np.int64)
    starts = (np.concatenate([[0], np.cumsum(m)[:-1]]), np.concatenate([[0], np.cumsum(n)[:-1]]))
    a_scores = np.concatenate([np.zeros(0)] + [np.asarray(a, dtype=float) for a, _ in pairs])
    b_scores = np.concatenate([np.zeros(0)] + [np.asarray(b, dtype=float) for _, b in pairs])
    out: list[float] = columns_p(a_scores, starts[0], m, b_scores, starts[1], n, threshold).tolist()
    return out


def smallest_p(m: int, n: int) -> float:
    """The smallest one-sided p-value a task with m baseline and n candidate attempts can reach."""
    return 1.0 / math.comb(m + n, n) if m and n else 1.0


def repeats_needed(tasks: int, q: float = FDR_Q, limit: int = 50) -> int | None:
    """The fewest equal repeats r per selector with 1 / C(2r, r) ≤ q / tasks (one BH discovery reachable)."""
    for r in range(1, limit + 1):
        if smallest_p(r, r) <= q / max(tasks, 1):
            return r
    return None


def harmed_tasks(baseline: str, table_a: TaskTable, candidate: str, table_b: TaskTable, q: float = FDR_Q) -> HarmReport:
    """The screen over the test tasks both selectors attempted (``table_a`` and ``table_b`` made for the same test
    ids and threshold), computed from the tables' columns."""
    if table_a.ids != table_b.ids:
        raise ValueError("the two tables are for different task ids")
    _, ia, ib = np.intersect1d(table_a.index, table_b.index, assume_unique=True, return_indices=True)
    m, n = np.diff(table_a.offsets)[ia], np.diff(table_b.offsets)[ib]
    keep = (m > 0) & (n > 0)
    ia, ib, m, n = ia[keep], ib[keep], m[keep], n[keep]
    a_start, b_start = table_a.offsets[ia], table_b.offsets[ib]
    tested = len(ia)
    pvals = columns_p(table_a.scores, a_start, m, table_b.scores, b_start, n, table_a.threshold)
    qvals = np.asarray(benjamini_hochberg(pvals.tolist()), dtype=float) if tested else np.zeros(0)
    smallest = min((smallest_p(x, y) for x, y in _shapes(m, n)), default=None)
    reachable = smallest is not None and smallest <= q / max(tested, 1)
    harmed = []
    for j in np.flatnonzero(qvals <= q).tolist():
        a = np.asarray(table_a.scores[a_start[j] : a_start[j] + m[j]], dtype=float)
        b = np.asarray(table_b.scores[b_start[j] : b_start[j] + n[j]], dtype=float)
        harmed.append(
            HarmedTask(
                task=table_a.ids[int(table_a.index[ia[j]])],
                baseline_mean=float(a.mean()),
                candidate_mean=float(b.mean()),
                difference=float(b.mean() - a.mean()),
                baseline_repeats=len(a),
                candidate_repeats=len(b),
                p_value=float(pvals[j]),
                q_value=float(qvals[j]),
            )
        )
    harmed.sort(key=lambda h: (h.q_value, h.p_value, h.difference))
    need = None if reachable else repeats_needed(tested, q)
    if not tested:
        note = "no task was attempted by both selectors"
    elif harmed:
        note = f"{len(harmed)} of {tested} tasks worse with evidence (q ≤ {q:g})"
    elif not reachable:
        note = (
            f"no single task can show harm on its own at these repeats: the smallest p-value a task can reach is "
            f"{smallest:.3g}, and {tested} tasks at q = {q:g} need {q / tested:.3g}"
            + (f"; {need} repeats per selector would make it reachable" if need else "")
        )
    else:
        note = f"no task worse with evidence (q ≤ {q:g}) among {tested}"
    return HarmReport(
        baseline=baseline,
        candidate=candidate,
        q=q,
        tested=tested,
        harmed=harmed,
        smallest_reachable_p=smallest,
        reachable=reachable,
        repeats_needed=need,
        note=note,
    )


__all__ = [
    "FDR_Q",
    "TEST",
    "HarmReport",
    "HarmedTask",
    "fisher_lower_p",
    "harmed_tasks",
    "permutation_lower_p",
    "repeats_needed",
    "smallest_p",
    "task_p",
    "batch_p",
    "columns_p",
]
