"""One look's figures from the scores so far (:func:`sequential_look`): the variance components, the repeated
confidence interval at the look's nominal level, and the critical values on z those intervals apply
(:func:`applied_bounds`).

Small samples: the normal boundary ``c_r`` is turned into a nominal two-sided level ``p_r = 2 (1 - Phi(c_r))``, and
the interval at round ``r`` is :func:`_repeated_interval` on the task differences at confidence ``1 - p_r`` (Student
t with G - 1 df, or the bounded score interval / no-spread bound: the fixed design's methods before issue 25, kept
here because the selector interval's no-spread floor would make the extreme early levels uninformative), which keeps
it within the range of a difference (the "significance level approach" to group-sequential t-tests, J&T 2000 sec.
3.8). Its error rates are measured by simulation in ``benchmarks/bench_stats.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hermit_tui.core.stats.intervals import CONFIDENCE, Interval, no_spread_share, t_quantile, wilson_bounds
from hermit_tui.core.stats.sequential.look import BATCH_METHOD, METHOD, OLD_METHOD, SequentialLook, decide
from hermit_tui.core.stats.sequential.schedule import look_boundaries, look_schedule
from hermit_tui.core.stats.sequential.spending import ALPHA, Spending, candidate_spend, spending_at


def variance_components(diffs: np.ndarray) -> tuple[float, float | None]:
    """(between, within) of the per-task, per-round paired differences ``diffs`` (G x r): ``within`` = mean over tasks
    of the variance across rounds (None with one round), ``between = max(0, Var(task means) - within / r)``."""
    g, r = diffs.shape
    task_means = diffs.mean(axis=1)
    var_means = float(task_means.var(ddof=1)) if g > 1 else 0.0
    if r < 2:
        return 0.0, None
    within = float(np.mean(diffs.var(axis=1, ddof=1)))
    return max(0.0, var_means - within / r), within


def sequential_look(
    baseline: str,
    candidate: str,
    a: np.ndarray,
    b: np.ndarray,
    max_rounds: int,
    *,
    alpha: float = ALPHA,
    spend: float | None = None,
    candidates: int = 1,
    spending: Spending = "hsd",
    margin: float | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
    batches: int = 1,
    total_tasks: int | None = None,
) -> SequentialLook:
    """The decision after the looks so far, from this look's interval alone (no memory of earlier looks: see
    :class:`SequentialMonitor`). ``a`` and ``b``: scores, n tasks x r rounds, in ``[lo, hi]``: the whole rounds so
    far, or (``batches`` > 1, one round) the first n of the ``total_tasks`` tasks in the look order, n being one of
    :func:`look_schedule`'s. ``alpha``: the launch's family-wise level; ``spend``: what this candidate's boundaries
    spend (default :func:`candidate_spend` of ``alpha`` over ``candidates``)."""
    spend = candidate_spend(alpha, candidates) if spend is None else spend
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError("baseline and candidate scores must both be tasks x rounds")
    g, r = a.shape
    if not 1 <= r <= max_rounds:
        raise ValueError(f"{r} rounds for a maximum of {max_rounds}")
    total = g if total_tasks is None else total_tasks
    batches = max(1, batches)
    schedule = look_schedule(max(total, 1), max_rounds, batches) if total >= batches else ((1, total),)
    index = batches + r - 2 if r > 1 else next((j for j, (_, n) in enumerate(schedule[:batches]) if n == g), None)
    if index is None or (r > 1 and g != total):
        raise ValueError(f"{g} tasks x {r} rounds is not a look of the schedule ({total} tasks, {batches} in round 1)")
    diffs = b - a
    task_diffs = diffs.mean(axis=1)
    mean_diff = float(task_diffs.mean()) if g else None
    base = dict(
        method={"power": BATCH_METHOD, "obf": OLD_METHOD}.get(spending, METHOD),
        batches=batches,
        tasks=g,
        total_tasks=total,
        look=index + 1,
        baseline=baseline,
        candidate=candidate,
        rounds=r,
        max_rounds=max_rounds,
        alpha=alpha,
        spend=spend,
        candidates=candidates,
        spending=spending,
        margin=margin,
        mean_diff=mean_diff,
    )
    if g < 2 or mean_diff is None:
        return SequentialLook(**base, decision="undecided", ci_low=None, ci_high=None)
    between, within = variance_components(diffs)
    c = look_boundaries(total, max_rounds, batches, spend, spending)[index]
    t_r = (g / total if r == 1 else r) / max_rounds
    from scipy.special import ndtr

    nominal = 1.0 - 2 * (1 - float(ndtr(c))) if math.isfinite(c) else 1.0
    width = hi - lo
    interval = None
    if math.isfinite(c) and nominal < 1.0:
        interval = _repeated_interval(mean_diff, float(task_diffs.std(ddof=1)), g, -width, width, level=nominal)
    low, high = (interval.low, interval.high) if interval else (-width, width)
    sd = float(task_diffs.std(ddof=1))
    z = mean_diff / (sd / math.sqrt(g)) if sd > 0 else (0.0 if mean_diff == 0 else math.copysign(math.inf, mean_diff))
    decision = decide(low, high, margin)
    return SequentialLook(
        **base,
        decision=decision,
        decided_at=r if decision != "undecided" else None,
        decided_tasks=g if decision != "undecided" else None,
        ci_low=low,
        ci_high=high,
        ci_method=interval.method if interval else None,
        boundary_z=c,
        nominal_level=nominal,
        spending_time=t_r,
        alpha_spent=spending_at(t_r, spend, spending),
        between_var=between,
        within_var=within,
        z=z,
    )


def applied_bounds(
    cs: Sequence[float], schedule: Sequence[tuple[int, int]], info: Sequence[float], width: float, start: int = 0
) -> list[float]:
    """The critical values on the observed z (mean over its standard error) that the looks' repeated intervals
    (:func:`_repeated_interval` at each look's nominal level) applied: the smallest z whose interval excludes 0, with
    a look's sd of task differences ``sqrt(n / I)`` from its information (looks before ``start``: inf, not computed).
    On few tasks they lie above the normal
    boundary (Student's t, the score interval's pull towards the middle: 3.06 against 2.63 at 25 tasks)."""
    from scipy.special import ndtr

    out = []
    for j, (c, (_, n), i) in enumerate(zip(cs, schedule, info)):
        if j < start or not math.isfinite(c) or n < 2 or i <= 0:  # (before ``start``: not needed, left out)
            out.append(math.inf)
            continue
        level, se = 2 * float(ndtr(c)) - 1, 1 / math.sqrt(i)
        sd, crit = se * math.sqrt(n), t_quantile(n - 1, level)

        def excludes(m: float, sd: float = sd, n: int = n, level: float = level, crit: float = crit) -> bool:
            got = _repeated_interval(m, sd, n, -width, width, level=level, crit=crit)
            return got is not None and got.low > 0

        lo, hi = 0.0, min(width, 12 * se)
        if not excludes(hi):
            out.append(math.inf)
            continue
        for _ in range(24):  # to 12 se / 2^24
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if excludes(mid) else (mid, hi)
        out.append(hi / se)
    return out


T_MIN_TASKS = 30
T_MIN_COUNT = 10.0
FEW = 3.0  # effective observations on the far side of the mean below which an end gets Clopper-Pearson's bound
NEAR = 0.2  # ... when the mean is this close to that end (a fifth of the range)
Z95 = 1.959963984540054


def _repeated_interval(
    mean: float,
    sd: float,
    n_tasks: int,
    lo: float,
    hi: float,
    *,
    max_n_eff: float | None = None,
    level: float = CONFIDENCE,
    crit: float | None = None,
) -> Interval | None:
    """Round r's interval for the mean of ``n_tasks`` task differences in ``[lo, hi]`` with sample sd ``sd``: the
    fixed design's method before issue 25 (Student t from 30 tasks and 10 effective observations on each side, else
    the effective-sample-size score interval with Clopper-Pearson next to an end, or the no-spread bound), kept for
    the repeated intervals, whose extreme early levels the selector interval's no-spread floor would make
    uninformative.

    ``max_n_eff``: an upper bound on the effective sample size (the attempts' worth, for pass/fail scores).
    None with fewer than 2 tasks. The bounds are clipped to ``[lo, hi]`` against rounding only.
    """
    if n_tasks < 2 or not (math.isfinite(mean) and math.isfinite(sd)):
        return None
    width = hi - lo
    if width <= 0:
        return Interval(low=lo, high=hi, method="no-spread")
    mean = min(max(mean, lo), hi)
    if sd <= 1e-12 * width:
        q = no_spread_share(n_tasks, level)
        return Interval(low=max(lo, mean - q * (mean - lo)), high=min(hi, mean + q * (hi - mean)), method="no-spread")
    crit = t_quantile(n_tasks - 1, level) if crit is None else crit  # (given: the caller computed it)
    se = sd / math.sqrt(n_tasks)
    p, se_p = (mean - lo) / width, se / width
    n_raw = p * (1 - p) / (se_p * se_p)
    if n_tasks >= T_MIN_TASKS and n_raw * p >= T_MIN_COUNT and n_raw * (1 - p) >= T_MIN_COUNT:
        return Interval(low=max(lo, mean - crit * se), high=min(hi, mean + crit * se), method="t")
    n_eff = max(n_raw, float(n_tasks))
    if max_n_eff is not None:
        n_eff = min(n_eff, max(max_n_eff, float(n_tasks)))
    low, high = wilson_bounds(p, n_eff, crit)
    low, high = _near_the_ends(p, n_eff, crit, low, high, level)
    return Interval(low=lo + width * low, high=lo + width * high, method="score", n_eff=n_eff)


def _near_the_ends(p: float, n_eff: float, crit: float, low: float, high: float, level: float) -> tuple[float, float]:
    """Wilson's bounds widened to Clopper-Pearson's on the effective counts where few fall beyond the mean."""
    from scipy.special import betaincinv

    n = n_eff * (Z95 / crit) ** 2  # the degrees-of-freedom adjustment of Korn & Graubard
    x = n * p
    tail = (1 - level) / 2
    if n_eff * (1 - p) <= FEW and 1 - p <= NEAR:
        high = max(high, float(betaincinv(x + 1, n - x, 1 - tail)) if n - x > 0 else 1.0)
    if n_eff * p <= FEW and p <= NEAR:
        low = min(low, float(betaincinv(x, n - x + 1, tail)) if x > 0 else 0.0)
    return max(0.0, low), min(1.0, high)


__all__ = ["sequential_look", "variance_components"]
