"""The paired randomisation test of two selectors, valid with equal or unequal repeats.

Null hypothesis: the adapter changes nothing, i.e. on every task the attempts of the two selectors are
interchangeable. The statistic is the sum over tasks of ``d_i = mean_b,i - mean_a,i`` (the estimand's difference,
times the number of tasks). Its null distribution is built task by task, independently:

- a task with the same number of repeats for both selectors: swapping the two selectors' attempt sets changes
  nothing under the null, so ``d_i`` and ``-d_i`` are equally likely (a sign flip);
- a task with unequal repeats (``k_a != k_b``: retries, a resumed run, sequential stopping): a sign flip is not
  valid there (``d_i`` is a mean of ``k_b`` minus a mean of ``k_a`` attempts, not symmetric about 0: with 10 repeats
  against 1 a sign-flip test rejects about 10% of true nulls at 5%). Instead, the task's ``k_a + k_b`` attempts are
  re-dealt: every way of choosing which ``k_b`` of them are b's is equally likely (Fisher's two-sample randomisation
  within the task).

**Exact** while cheap: the null distribution of the sum is the convolution of the per-task distributions, computed
exactly (equal values merged) while the work stays under :data:`EXACT_WORK` value pairs. That covers every
data set of up to 20 tasks with equal repeats (2^20 sign patterns), and hundreds of tasks when scores take few values
(pass/fail, halves), with equal or unequal repeats.
**Large-sample** beyond: the normal approximation to the same randomisation distribution, with its exact variance
(``sum d_i^2`` for sign flips, ``S_i^2 (1/k_a + 1/k_b)`` for a re-dealt task with pooled sample variance ``S_i^2``);
when every task is sign-flipped and the differences lie on a lattice (pass/fail or partial-credit scores), with a
continuity correction of half the support's spacing. Two-sided normal approximations have errors of order ``1/G``
(the skewness terms cancel); the agreement with the exact test is checked in tests/test_paired_test.py and
benchmarks/bench_stats.py. With re-dealt pass/fail tasks and the same repeats on every task, the large-sample test
is the Cochran-Mantel-Haenszel test (without continuity correction). Both cost at most linear time in
the number of tasks (the exact one is bounded by :data:`EXACT_WORK`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import combinations

import numpy as np
from pydantic import BaseModel

EXACT_WORK = 2_200_000  # value pairs the exact convolution may combine in all (2^21: 20 sign flips)
MAX_DEALS = 20_000  # a task whose re-deals exceed this many subsets goes to the normal approximation
DECIMALS = 9  # values closer than 1e-9 are one value (ties)
TIE_TOL = 1e-9


class TestResult(BaseModel):
    """A two-sided p-value and how it was computed."""

    p_value: float
    exact: bool
    description: str
    flipped_tasks: int  # tasks randomised by sign flips
    redealt_tasks: int  # tasks randomised by re-dealing their attempts


def _merge(values: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal values (to :data:`DECIMALS` places) made one, keeping a value as computed (rounded keys would drift)."""
    flat, weights = values.ravel(), probs.ravel()
    keys, first, inverse = np.unique(np.round(flat, DECIMALS), return_index=True, return_inverse=True)
    return flat[first], np.bincount(inverse.ravel(), weights=weights, minlength=len(keys))


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of finite values (sorted, each once), as it computes them. numpy 2.4's plain
    ``np.unique`` asks ``np.ma.is_masked`` and so imports numpy.ma, ~15 ms of a small report's run (issue 30)."""
    ordered = np.sort(values, axis=None)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _lattice_step(values: np.ndarray) -> int | None:
    """The smallest s <= 10,000 with every value times s a whole number (to 1e-9), or None."""
    from fractions import Fraction

    scale = 1
    for x in _distinct(np.round(values, DECIMALS))[:256].tolist():
        q = Fraction(x).limit_denominator(10_000)
        if abs(float(q) - x) > 1e-9:
            return None
        scale = math.lcm(scale, q.denominator)
        if scale > 10_000:
            return None
    return scale


def _flip_work(live: np.ndarray) -> float:
    """The value pairs the exact sign-flip convolution of ``live`` (non-zero differences) will combine: the support
    doubles with each task until the lattice of the differences (if any) bounds it."""
    sizes = 2.0 ** np.minimum(np.arange(len(live)), 60)
    step = _lattice_step(np.abs(live))
    if step is not None:
        span = 2 * step * np.concatenate([[0.0], np.cumsum(np.abs(live))[:-1]]) + 1
        sizes = np.minimum(sizes, span)
    return float(2 * sizes.sum())


def _redeal_distribution(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The values of ``mean(b*) - mean(a*)`` over every re-deal of the pooled attempts, with probabilities; None when
    there are more than :data:`MAX_DEALS` re-deals."""
    ka, kb = len(a), len(b)
    pooled = np.concatenate([a, b])
    n = ka + kb
    if math.comb(n, kb) > MAX_DEALS:
        return None
    total = pooled.sum()
    sums = np.fromiter((pooled[list(c)].sum() for c in combinations(range(n), kb)), dtype=float, count=math.comb(n, kb))
    values = sums / kb - (total - sums) / ka
    return _merge(values, np.full(len(values), 1.0 / len(values)))


def paired_randomisation_test(
    ka: np.ndarray,
    ma: np.ndarray,
    sa: np.ndarray,
    kb: np.ndarray,
    mb: np.ndarray,
    sb: np.ndarray,
    scores_of: Callable[[int], tuple[np.ndarray, np.ndarray]],
    *,
    exact_work: float = EXACT_WORK,
) -> TestResult:
    """The test over paired tasks, given per task the attempt counts ``k``, means ``m`` and sds ``s`` (ddof 1, NaN
    with one attempt) of a and b; ``scores_of(i)`` returns task i's attempt scores (a's, b's) for the exact test."""
    ka, kb = np.asarray(ka, dtype=float), np.asarray(kb, dtype=float)
    diffs = np.asarray(mb, dtype=float) - np.asarray(ma, dtype=float)
    g = len(diffs)
    equal = ka == kb
    n_flip, n_redeal = int(equal.sum()), int(g - equal.sum())
    observed = abs(float(diffs.sum()))

    def described(how: str, exact: bool, p: float) -> TestResult:
        parts = []
        if n_flip:
            parts.append(f"sign flips on {n_flip} task{'s' * (n_flip != 1)} with equal repeats")
        if n_redeal:
            parts.append(f"re-dealt attempts on {n_redeal} task{'s' * (n_redeal != 1)} with unequal repeats")
        text = f"paired randomisation test, two-sided ({'; '.join(parts) or 'no task'}): {how}"
        return TestResult(
            p_value=float(min(1.0, max(0.0, p))),
            exact=exact,
            description=text,
            flipped_tasks=n_flip,
            redealt_tasks=n_redeal,
        )

    if g == 0 or (not n_redeal and not np.any(np.abs(diffs) > TIE_TOL)):
        return described("exact (no task differs)", True, 1.0)

    exact = _exact(diffs, equal, scores_of, observed, exact_work) if exact_work > 0 else None
    if exact is not None:
        p, what = exact
        return described(f"exact, over every {what}", True, p)

    # pooled sum of squares of a re-dealt task: within a, within b, and the part from the two means
    ss_a = np.where(ka > 1, (ka - 1) * np.nan_to_num(np.asarray(sa, dtype=float)) ** 2, 0.0)
    ss_b = np.where(kb > 1, (kb - 1) * np.nan_to_num(np.asarray(sb, dtype=float)) ** 2, 0.0)
    pooled_var = (ss_a + ss_b + ka * kb / (ka + kb) * diffs**2) / np.maximum(ka + kb - 1, 1)
    variance = float(np.sum(np.where(equal, diffs**2, pooled_var * (1 / ka + 1 / kb))))
    if variance <= 0:
        return described("exact (no task can change under the null)", True, 1.0)
    from hermit_tui.core.stats.special import ndtr

    half_step = _half_spacing(diffs) if not n_redeal else 0.0
    z = max(0.0, observed - half_step) / math.sqrt(variance)
    cc = f", continuity correction {half_step:.3g}" if half_step else ""
    return described(
        f"normal approximation to the randomisation distribution (z = {z:.2f}{cc})", False, float(2 * ndtr(-z))
    )


def _half_spacing(diffs: np.ndarray) -> float:
    """Half the spacing of the sign-flip distribution's support when the differences lie on a lattice (the
    continuity correction: sums of +/- m_i / s move in steps of 2 gcd(m) / s), else 0."""
    live = np.abs(diffs[np.abs(diffs) > TIE_TOL])
    step = _lattice_step(live) if len(live) else None
    if step is None:
        return 0.0
    ints = np.round(live * step).astype(np.int64)  # the gcd of the values, repeated or not
    return float(np.gcd.reduce(ints)) / step


def _exact(
    diffs: np.ndarray,
    equal: np.ndarray,
    scores_of: Callable[[int], tuple[np.ndarray, np.ndarray]],
    observed: float,
    budget: float,
) -> tuple[float, str] | None:
    """(p, what was enumerated) by convolving the per-task null distributions, or None when too costly."""
    if np.all(equal) and _flip_work(diffs[np.abs(diffs) > TIE_TOL]) > budget:  # a tie flips to itself
        return None
    values, probs = np.zeros(1), np.ones(1)
    work = 0
    for i in range(len(diffs)):
        d = diffs[i]
        if equal[i]:
            if abs(d) <= TIE_TOL:
                continue
            tv, tp = np.array([d, -d]), np.array([0.5, 0.5])
        else:
            a, b = (np.asarray(x, dtype=float) for x in scores_of(i))
            if a.min() == a.max() == b.min() == b.max():
                continue  # every attempt scored the same: re-dealing changes nothing
            dist = _redeal_distribution(a, b)
            if dist is None:
                return None
            tv, tp = dist
            if len(tv) == 1:
                continue
        work += len(values) * len(tv)
        if work > budget:
            return None
        values, probs = _merge(values[:, None] + tv[None, :], probs[:, None] * tp[None, :])
    tol = TIE_TOL * max(1.0, observed)
    p = float(probs[np.abs(values) >= observed - tol].sum())
    what = "sign pattern" if np.all(equal) else "re-deal" if not np.any(equal) else "sign pattern and re-deal"
    return p, what


__all__ = ["EXACT_WORK", "TestResult", "paired_randomisation_test"]
