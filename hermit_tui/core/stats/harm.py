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


def smallest_p(m: int, n: int) -> float:
    """The smallest one-sided p-value a task with m baseline and n candidate attempts can reach."""
    return 1.0 / math.comb(m + n, n) if m and n else 1.0


def repeats_needed(tasks: int, q: float = FDR_Q, limit: int = 50) -> int | None:
    """The fewest equal repeats r per selector with 1 / C(2r, r) ≤ q / tasks (one BH discovery reachable)."""
    for r in range(1, limit + 1):
        if smallest_p(r, r) <= q / max(tasks, 1):
            return r
    return None


def _scores(table: TaskTable, pos: int) -> np.ndarray:
    where = np.searchsorted(table.index, pos)
    if where >= len(table.index) or table.index[where] != pos:
        return np.zeros(0)
    return np.asarray(table.scores[table.offsets[where] : table.offsets[where + 1]], dtype=float)


def harmed_tasks(baseline: str, table_a: TaskTable, candidate: str, table_b: TaskTable, q: float = FDR_Q) -> HarmReport:
    """The screen over the test tasks both selectors attempted (``table_a`` and ``table_b`` made for the same test
    ids and threshold)."""
    if table_a.ids != table_b.ids:
        raise ValueError("the two tables are for different task ids")
    rows: list[tuple[str, np.ndarray, np.ndarray]] = []
    for pos, tid in enumerate(table_a.ids):
        a, b = _scores(table_a, pos), _scores(table_b, pos)
        if len(a) and len(b):
            rows.append((tid, a, b))
    pvals = [task_p(a, b, table_a.threshold) for _, a, b in rows]
    qvals = benjamini_hochberg(pvals)
    smallest = min((smallest_p(len(a), len(b)) for _, a, b in rows), default=None)
    reachable = smallest is not None and smallest <= q / max(len(rows), 1)
    harmed = [
        HarmedTask(
            task=tid,
            baseline_mean=float(a.mean()),
            candidate_mean=float(b.mean()),
            difference=float(b.mean() - a.mean()),
            baseline_repeats=len(a),
            candidate_repeats=len(b),
            p_value=p,
            q_value=float(qv),
        )
        for (tid, a, b), p, qv in zip(rows, pvals, qvals)
        if qv is not None and qv <= q
    ]
    harmed.sort(key=lambda h: (h.q_value, h.p_value, h.difference))
    need = None if reachable else repeats_needed(len(rows), q)
    if not rows:
        note = "no task was attempted by both selectors"
    elif harmed:
        note = f"{len(harmed)} of {len(rows)} tasks worse with evidence (q ≤ {q:g})"
    elif not reachable:
        note = (
            f"no single task can show harm on its own at these repeats: the smallest p-value a task can reach is "
            f"{smallest:.3g}, and {len(rows)} tasks at q = {q:g} need {q / len(rows):.3g}"
            + (f"; {need} repeats per selector would make it reachable" if need else "")
        )
    else:
        note = f"no task worse with evidence (q ≤ {q:g}) among {len(rows)}"
    return HarmReport(
        baseline=baseline,
        candidate=candidate,
        q=q,
        tested=len(rows),
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
]
