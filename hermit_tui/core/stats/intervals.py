"""95% intervals for a selector's mean and a pair's mean difference that cover in every regime and never leave the
possible range, and the test that belongs to the pair's interval.

The unit of sampling is the task: a selector's interval is for the mean of its per-task mean scores, a pair's for the
mean of the per-task differences ``b - a``. Values lie in a known range ``[lo, hi]`` (scores in [0, 1]; other scales:
the lowest and highest score observed). Everything here works on numpy arrays of data sets as well as on one data set
(the benchmark computes thousands at once with the same code); data sets of different sizes (the slices of a report)
go through their :class:`PairSummary` instead (:func:`summary_bounds`, :func:`summary_p_values`, :func:`mean_bounds`:
the same values as one call per data set).

**A selector** (:func:`task_mean_interval`, :func:`mean_interval`): with ``p`` the mean rescaled to [0, 1], ``se`` its
standard error over tasks and ``G`` the tasks,

1. Wilson's score interval (Wilson 1927) with the sample size replaced by an effective one, ``n_eff = p (1 - p) /
   se^2`` (Korn & Graubard 1998, Survey Methodology 24:193, for clustered proportions), and the normal critical value
   by Student's ``t(0.975, G - 1)``. ``n_eff`` is at least ``G`` (a value in [0, 1] has variance at most
   ``p (1 - p)``) and, for pass/fail scores, at most the attempts' worth ``G^2 / sum(1 / k_i)``. The interval is the
   set of means ``m`` with ``(p - m)^2 <= t^2 m (1 - m) / n_eff``: asymmetric near the ends, inside [0, 1];
2. held at least as wide, on each side, as the **no-spread bound** at that mean: with ``q = 1 - 0.025^(1/G)``, the
   interval contains ``[p - q p, p + q (1 - p)]``. ``q`` is the share of tasks that could sit at the far end of the
   range and still go unseen in ``G`` draws with probability 2.5% (the exact one-sided bound for 0 events; the rule
   of three generalised). This is what the task level allows whatever the repeats: repeats shrink the noise within
   a task, never the chance that a kind of task is missing from the sample. It is binding only where few tasks are
   far from the mean (rare or common success) and makes the interval continuous as the spread goes to 0: when every
   task has the same value the interval *is* this bound (method ``no-spread``), never of zero width;
3. within :data:`SMALL_COUNT` (3) effective events of an end (``p n_eff <= 3`` or ``(1 - p) n_eff <= 3``), held at
   least at the one-sided Poisson bound on that side, ``chi2(alpha; 2 x) / (2 n_eff)`` (:func:`poisson_lower`):
   Brown, Cai & DasGupta's (2001, Statistical Science 16:101, section 4.1.1) remedy of Wilson's coverage dip next to
   0 and 1, on the effective-sample-size scale. With one attempt per task the lowest exact coverage over success
   rates 0.5-0.999 rises from 0.85-0.91 to 0.931-0.953 at 8-500 tasks.

**A pair** (:func:`pair_interval`): Newcombe's hybrid ("method 10" for paired proportions, Newcombe 1998, Statistics
in Medicine 17:2635), as generalised by Zou & Donner 2008 (MOVER, Statistics in Medicine 27:1693): the two
selectors' own intervals on the paired tasks, ``(l_a, u_a)`` and ``(l_b, u_b)``, are recombined with the correlation
``r`` of the task means::

    low  = d - sqrt((b - l_b)^2 - 2 r (b - l_b)(u_a - a) + (u_a - a)^2)
    high = d + sqrt((u_b - b)^2 - 2 r (u_b - b)(a - l_a) + (a - l_a)^2)

It inherits each side's asymmetry (a rare-success selector with one repeat has a long upper tail, which a
difference near 0 does not show), needs no switch between methods, and lies in ``[l_b - u_a, u_b - l_a]``, inside
the range of a difference. In the middle of the range it is the paired t interval. Below :data:`SMALL_PAIR` (16)
paired units it is never narrower than the t interval on the differences (the sides' score intervals are narrower
in the middle than the t interval by ``1 / sqrt(1 + t^2 / G)``, right for one pass/fail count but not for a
difference, whose variance the t interval estimates on ``G - 1`` df). When every task has the same difference the
no-spread bound of the differences is used.

**The test** (:func:`pair_p_value`): the p-value of "the mean difference is ``null``" (0, or a margin) is the
smallest ``alpha`` whose ``1 - alpha`` interval excludes ``null``: the test printed beside an interval tests that
interval's hypothesis, so the two can never disagree (p < 0.05 exactly when the 95% interval excludes 0).

Coverage and size were checked by simulation over 4 to 256 tasks, rare to common success, 1 to 10 repeats on either
side (``benchmarks/bench_stats.py``, figures in ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.stats.special import poisson_lower

CONFIDENCE = 0.95
Z95 = 1.959963984540054

Method = Literal["t", "score", "no-spread", "hybrid"]  # "t": summaries written before issue 25 only
SMALL_PAIR = 16  # below this many paired units the pair interval is at least the t interval on the differences
METHOD_TEXT: dict[str, str] = {
    "t": "Student t interval (tasks - 1 df)",
    "score": "score interval with an effective sample size (Wilson-type, t critical value; at least as wide as "
    "the no-spread bound, and within 3 events of an end as the one-sided Poisson bound)",
    "no-spread": "no-spread bound (every task has the same value: 1 - 0.025^(1/tasks) of tasks may differ)",
    "hybrid": "Newcombe-style hybrid of the two selectors' score intervals (MOVER, with the correlation of the "
    f"task means; under {SMALL_PAIR} paired tasks never narrower than the t interval on the differences)",
}


class Interval(BaseModel):
    """A 95% interval and how it was made; ``n_eff`` is the effective sample size behind a score interval."""

    low: float
    high: float
    method: Method
    n_eff: float | None = None

    @property
    def text(self) -> str:
        return METHOD_TEXT[self.method]


def t_quantile(df: Any, level: Any = CONFIDENCE) -> Any:
    """Student's t quantile for a two-sided ``level`` interval (core.stats.special: no scipy import)."""
    from hermit_tui.core.stats.special import stdtrit

    out = stdtrit(df, 1 - (1 - np.asarray(level, dtype=float)) / 2)
    return float(out) if np.ndim(out) == 0 else out


def no_spread_share(n_tasks: Any, level: Any = CONFIDENCE) -> Any:
    """The largest share of tasks that may differ from the value every one of ``n_tasks`` tasks showed."""
    out = 1 - ((1 - np.asarray(level, dtype=float)) / 2) ** (1 / np.asarray(n_tasks, dtype=float))
    return float(out) if np.ndim(out) == 0 else out


def wilson_bounds(p: Any, n: Any, crit: Any) -> Any:
    """Wilson's score interval for a proportion ``p`` from ``n`` observations, critical value ``crit``."""
    p, n, crit = (np.asarray(x, dtype=float) for x in (p, n, crit))
    c2 = crit * crit
    centre = (p + c2 / (2 * n)) / (1 + c2 / n)
    half = crit / (1 + c2 / n) * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + c2 / (4 * n * n))
    low, high = np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


SMALL_COUNT = 3.0  # Brown, Cai & DasGupta's x*: at most this many (effective) events from an end, the Poisson bound


def unit_bounds(
    p: Any, var: Any, g: Any, cap: Any, level: Any = CONFIDENCE, *, se2: Any = None, units: Any = None, crit: Any = None
) -> tuple[Any, Any, Any]:
    """The selector interval on [0, 1] (arrays broadcast): mean ``p``, sample variance ``var`` of the task values
    (ddof 1), ``g`` tasks, ``cap`` the largest effective sample size (``inf`` without one). (low, high, n_eff).

    Clustered (``core.stats.clusters``): ``se2`` the clustered variance of the mean and ``units`` the clusters, which
    then take the tasks' place in the least effective sample size (and the callers pass ``crit`` on the
    Bell-McCaffrey degrees of freedom, ``core.stats.clusters.cluster_df``, rather than ``units - 1``); the
    no-spread floor stays the tasks' (``g``: with the clusters' it would swamp the interval in the middle of the
    range, where the clustered interval is to be the cluster-robust t interval). By default ``se2 = var / g`` and
    ``units = g``. ``crit``: the critical value, when the caller has it (default Student's ``t`` at ``level`` with
    ``units - 1`` df, :func:`t_quantile`)."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    var, g = np.asarray(var, dtype=float), np.asarray(g, dtype=float)
    units = g if units is None else np.asarray(units, dtype=float)
    if crit is None:
        crit = t_quantile(np.maximum(units - 1, 1), level)
    with np.errstate(divide="ignore", invalid="ignore"):
        if se2 is None:
            n_raw = np.where(var > 0, p * (1 - p) / (var / g), np.inf)
        else:
            se2 = np.asarray(se2, dtype=float)
            n_raw = np.where(se2 > 0, p * (1 - p) / se2, np.inf)
    n_eff = np.minimum(np.maximum(n_raw, units), np.maximum(np.asarray(cap, dtype=float), units))
    low, high = wilson_bounds(p, n_eff, crit)
    # Wilson's dip next to an end (Brown, Cai & DasGupta 2001, section 4.1.1): within SMALL_COUNT effective events
    # of an end, the bound on that side is held at least at the one-sided Poisson bound, on the n_eff scale
    with np.errstate(invalid="ignore"):
        x_low, x_high = p * n_eff, (1 - p) * n_eff
    small = SMALL_COUNT * (1 + 1e-9)  # 3 events of 500 are 3 (not 3.0000000000000027)
    near_low = np.isfinite(n_eff) & (x_low > 0) & (x_low <= small)
    near_high = np.isfinite(n_eff) & (x_high > 0) & (x_high <= small)
    if np.any(near_low) or np.any(near_high):
        alpha = 1 - np.asarray(level, dtype=float)
        low, high, near_low, near_high, x_low, x_high, n_eff, alpha = (
            np.array(v, dtype=float)
            for v in np.broadcast_arrays(low, high, near_low, near_high, x_low, x_high, n_eff, alpha)
        )
        nl, nh = near_low > 0, near_high > 0
        low[nl] = np.minimum(low[nl], poisson_lower(x_low[nl], alpha[nl]) / n_eff[nl])
        high[nh] = np.maximum(high[nh], 1 - poisson_lower(x_high[nh], alpha[nh]) / n_eff[nh])
    q = no_spread_share(g, level)
    floor_low, floor_high = p - q * p, p + q * (1 - p)
    spread = var > 0  # without a spread the interval is the floor itself (the no-spread bound)
    low, high = np.minimum(low, floor_low), np.maximum(high, floor_high)
    low, high = np.where(spread, low, floor_low), np.where(spread, high, floor_high)
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0), n_eff


def mean_interval(
    mean: float,
    sd: float,
    n_tasks: int,
    lo: float,
    hi: float,
    *,
    max_n_eff: float | None = None,
    level: float = CONFIDENCE,
) -> Interval | None:
    """The interval for the mean of ``n_tasks`` per-task values in ``[lo, hi]`` with sample sd ``sd`` (ddof 1).

    ``max_n_eff``: an upper bound on the effective sample size (the attempts' worth, for pass/fail scores). None with
    fewer than 2 tasks.
    """
    if n_tasks < 2 or not (math.isfinite(mean) and math.isfinite(sd)):
        return None
    width = hi - lo
    if width <= 0:
        return Interval(low=lo, high=hi, method="no-spread")
    p = min(max((mean - lo) / width, 0.0), 1.0)
    spread = sd > 1e-12 * width
    var = (sd / width) ** 2 if spread else 0.0
    cap = math.inf if max_n_eff is None else max_n_eff
    low, high, n_eff = unit_bounds(p, var, n_tasks, cap, level)
    if not spread:
        return Interval(low=lo + width * float(low), high=lo + width * float(high), method="no-spread")
    return Interval(low=lo + width * float(low), high=lo + width * float(high), method="score", n_eff=float(n_eff))


def attempts_cap(counts: Any) -> Any:
    """The attempts' worth of ``G`` tasks with ``counts`` attempts each (last axis): ``G^2 / sum(1 / k_i)``."""
    counts = np.asarray(counts, dtype=float)
    return counts.shape[-1] ** 2 / np.sum(1.0 / counts, axis=-1)


def task_mean_interval(
    means: np.ndarray,
    counts: np.ndarray,
    binary: bool,
    lo: float,
    hi: float,
    level: float = CONFIDENCE,
    *,
    clusters: np.ndarray | None = None,
) -> Interval | None:
    """A selector's interval: for the mean of its task means ``means``, with ``counts`` attempts per task;
    ``binary``: every score is at one end of ``[lo, hi]`` (pass/fail), which caps the effective sample size at the
    attempts' worth, ``G^2 / sum(1 / k_i)``. ``clusters``: the tasks' cluster codes (``core.stats.clusters``): the
    standard error is then the CR2 cluster-robust one, the critical value Student's t on the Bell-McCaffrey df and
    the clusters count as the units of the least effective sample size (None with fewer than 2)."""
    g = len(means)
    if g < 2:
        return None
    cap = float(attempts_cap(counts)) if binary else None
    if clusters is None:
        return mean_interval(float(np.mean(means)), float(np.std(means, ddof=1)), g, lo, hi, max_n_eff=cap, level=level)
    from hermit_tui.core.stats.clusters import cluster_df, clustered_var

    n_clusters = len(set(np.asarray(clusters).tolist()))
    width = hi - lo
    if n_clusters < 2 or width <= 0:
        return None
    unit = _unit(means, lo, hi)
    p, var = float(unit.mean()), float(unit.var(ddof=1))
    spread = var > 1e-24
    low, high, n_eff = unit_bounds(
        p,
        var if spread else 0.0,
        g,
        math.inf if cap is None else cap,
        level,
        se2=float(clustered_var(unit, clusters)),
        units=n_clusters,
        crit=t_quantile(cluster_df(clusters), level),
    )
    method: Method = "score" if spread else "no-spread"
    return Interval(
        low=lo + width * float(low),
        high=lo + width * float(high),
        method=method,
        n_eff=float(n_eff) if spread else None,
    )


def _corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's correlation along the last axis; 0 where either side has no spread."""
    ac, bc = a - a.mean(-1, keepdims=True), b - b.mean(-1, keepdims=True)
    den = np.sqrt(np.sum(ac * ac, -1) * np.sum(bc * bc, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > 0, np.sum(ac * bc, -1) / den, 0.0)
    return np.clip(r, -1.0, 1.0)


def pair_bounds(
    ma: Any, mb: Any, cap_a: Any, cap_b: Any, level: Any = CONFIDENCE, clusters: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pair interval on the unit scale: task means ``ma``, ``mb`` in [0, 1] (last axis: the paired tasks; leading
    axes: data sets), effective-sample-size caps per data set. (low, high, no_spread) of ``mean(mb - ma)``.

    ``clusters``: the paired tasks' cluster codes. Each side's interval then uses its CR2 clustered variance with
    the clusters as units and Student's t on the Bell-McCaffrey df, and ``r`` is the CR2 correlation of the two
    means, so that in the middle of the range the interval is the CR2 t interval on the differences."""
    ma, mb = np.asarray(ma, dtype=float), np.asarray(mb, dtype=float)
    g = ma.shape[-1]
    a, b = ma.mean(-1), mb.mean(-1)
    units: Any = g
    df: Any = None  # the clustered figures' degrees of freedom (Bell-McCaffrey); unclustered, units - 1
    if clusters is None:
        se2_a = se2_b = None
        r = _corr(ma, mb)
    else:
        from hermit_tui.core.stats.clusters import cluster_df, clustered_cov

        units = len(set(np.asarray(clusters).tolist()))
        df = cluster_df(clusters)
        se2_a, se2_b, cov = (
            clustered_cov(ma, ma, clusters),
            clustered_cov(mb, mb, clusters),
            clustered_cov(ma, mb, clusters),
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.clip(np.where(se2_a * se2_b > 0, cov / np.sqrt(se2_a * se2_b), 0.0), -1.0, 1.0)
    # both sides' critical value, as unit_bounds computes it (one t quantile per level, not two)
    crit = t_quantile(np.maximum(np.asarray(units, dtype=float) - 1, 1) if df is None else df, level)
    la, ua, _ = unit_bounds(a, ma.var(-1, ddof=1), g, cap_a, level, se2=se2_a, units=units, crit=crit)
    lb, ub, _ = unit_bounds(b, mb.var(-1, ddof=1), g, cap_b, level, se2=se2_b, units=units, crit=crit)
    d = b - a
    low = d - np.sqrt(np.maximum((b - lb) ** 2 - 2 * r * (b - lb) * (ua - a) + (ua - a) ** 2, 0.0))
    high = d + np.sqrt(np.maximum((ub - b) ** 2 - 2 * r * (ub - b) * (a - la) + (a - la) ** 2, 0.0))
    diffs = mb - ma
    if units < SMALL_PAIR or (clusters is not None and units < g):
        # with so few units the sides' score intervals are narrower in the middle than the t interval on the
        # differences (by 1 / sqrt(1 + t^2 / units): 0.77 at 8), which suits one pass/fail count but not a
        # difference, and the correlation is poorly estimated (with 2 units always +-1, which collapses the
        # recombined interval): never narrower than the t interval on the differences (the 10-vs-1 pair at 8
        # tasks covered 0.925 without it, 0.956 with it; at 4 tasks 0.916 -> 0.973). Clustered
        # (some cluster holds several tasks), never either: the two sides' score intervals on a few dozen
        # clusters' worth of data are narrower than the CR2 t interval (a median 0.93 of its half-width at 50
        # tasks in 8-12 clusters of unequal sizes), which left the test at 6.2-6.4% where the t is 4.6-4.9%
        crit = t_quantile(max(int(units) - 1, 1) if df is None else df, level)
        se2 = diffs.var(-1, ddof=1) / g if se2_a is None or se2_b is None else np.maximum(se2_a + se2_b - 2 * cov, 0.0)
        half = crit * np.sqrt(se2)
        low, high = np.minimum(low, d - half), np.maximum(high, d + half)
    flat = np.ptp(diffs, axis=-1) <= 1e-12
    q = no_spread_share(g, level)
    low = np.where(flat, d - q * (d + 1), low)
    high = np.where(flat, d + q * (1 - d), high)
    return np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0), flat


def _unit(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (np.asarray(values, dtype=float) - lo) / (hi - lo)


def pair_interval(
    ma: np.ndarray,
    mb: np.ndarray,
    ka: np.ndarray,
    kb: np.ndarray,
    binary_a: bool,
    binary_b: bool,
    lo: float,
    hi: float,
    level: float = CONFIDENCE,
    *,
    clusters: np.ndarray | None = None,
) -> Interval | None:
    """A pair's interval for the mean of ``mb - ma`` over the paired tasks (task means of scores in ``[lo, hi]``,
    ``ka``/``kb`` attempts per task; ``binary_*``: that selector's scores are all at an end of the range;
    ``clusters``: the paired tasks' cluster codes, None with fewer than 2 clusters)."""
    if len(ma) < 2 or hi <= lo or not _enough_clusters(clusters):
        return None
    width = hi - lo
    cap_a = float(attempts_cap(ka)) if binary_a else math.inf
    cap_b = float(attempts_cap(kb)) if binary_b else math.inf
    low, high, flat = pair_bounds(_unit(ma, lo, hi), _unit(mb, lo, hi), cap_a, cap_b, level, clusters)
    method: Method = "no-spread" if bool(flat) else "hybrid"
    return Interval(low=width * float(low), high=width * float(high), method=method)


def pair_p_values(
    ma: Any, mb: Any, cap_a: Any, cap_b: Any, null: Any = 0.0, steps: int = 32, clusters: np.ndarray | None = None
) -> np.ndarray:
    """Per data set (unit scale, as :func:`pair_bounds`), the smallest ``alpha`` whose ``1 - alpha`` pair interval
    excludes ``null``: 1 when even the narrowest interval holds it. Bisection on ``log(alpha)`` (the intervals are
    nested in the level) from 1e-15 to 1: ``steps`` halvings of that log range, a relative precision of about
    ``34.5 / 2**steps`` (8e-9 at the default 32)."""
    ma = np.asarray(ma, dtype=float)
    shape = ma.shape[:-1]
    null = np.broadcast_to(np.asarray(null, dtype=float), shape)

    def excludes(alpha: np.ndarray) -> np.ndarray:
        low, high, _ = pair_bounds(ma, mb, cap_a, cap_b, 1 - alpha, clusters)
        res: np.ndarray = (low > null) | (high < null)
        return res

    lo_a, hi_a = np.full(shape, math.log(1e-15)), np.zeros(shape)  # log alpha: excluded at hi, held at lo
    ends = excludes(np.exp(hi_a)), excludes(np.exp(lo_a))
    for _ in range(steps):
        mid = (lo_a + hi_a) / 2
        gone = excludes(np.exp(mid))
        hi_a, lo_a = np.where(gone, mid, hi_a), np.where(gone, lo_a, mid)
    p = np.exp(hi_a)
    p = np.where(ends[1], 1e-15, p)
    out: np.ndarray = np.where(~ends[0], 1.0, p)
    return out


def pair_p_value(
    ma: np.ndarray,
    mb: np.ndarray,
    ka: np.ndarray,
    kb: np.ndarray,
    binary_a: bool,
    binary_b: bool,
    lo: float,
    hi: float,
    null: float = 0.0,
    *,
    clusters: np.ndarray | None = None,
) -> float | None:
    """The p-value of "the mean difference is ``null``" that belongs to :func:`pair_interval` (None with < 2 tasks
    or, clustered, fewer than 2 clusters)."""
    if len(ma) < 2 or hi <= lo or not _enough_clusters(clusters):
        return None
    cap_a = float(attempts_cap(ka)) if binary_a else math.inf
    cap_b = float(attempts_cap(kb)) if binary_b else math.inf
    return float(pair_p_values(_unit(ma, lo, hi), _unit(mb, lo, hi), cap_a, cap_b, null / (hi - lo), clusters=clusters))


# ---------------------------------------------------------------------------------- many pairs of unequal sizes

SCIPY_BATCH = 64  # from this many data sets on, the t quantiles of a batch are scipy's (its import pays for itself)


def t_quantiles(df: Any, level: Any = CONFIDENCE) -> np.ndarray:
    """:func:`t_quantile` over arrays: scipy's vectorised ``stdtrit`` for a batch of :data:`SCIPY_BATCH` or more
    (imported here, never at start-up), ``core.stats.special``'s below (a small report does not pay scipy's import)."""
    df, level = np.broadcast_arrays(np.asarray(df, dtype=float), np.asarray(level, dtype=float))
    if df.size < SCIPY_BATCH:
        return np.asarray(t_quantile(df, level), dtype=float)
    from scipy.special import stdtrit

    return np.asarray(stdtrit(df, 1 - (1 - level) / 2), dtype=float)


class PairSummary(NamedTuple):
    """What :func:`pair_bounds` uses of the paired task means (unit scale), per data set: the two means, their
    sample variances (ddof 1), Pearson's correlation (0 without spread), the variance of the differences, whether
    every difference is the same, and the paired tasks. Data sets of different sizes then go in one array."""

    a: np.ndarray
    b: np.ndarray
    var_a: np.ndarray
    var_b: np.ndarray
    r: np.ndarray
    var_d: np.ndarray
    flat: np.ndarray
    g: np.ndarray


def pair_summary(ma: Any, mb: Any) -> PairSummary:
    """The :class:`PairSummary` of task means ``ma``, ``mb`` in [0, 1] (last axis: the paired tasks, at least 2),
    computed as :func:`pair_bounds` computes them."""
    ma, mb = np.asarray(ma, dtype=float), np.asarray(mb, dtype=float)
    diffs = mb - ma
    return PairSummary(
        a=np.asarray(ma.mean(-1)),
        b=np.asarray(mb.mean(-1)),
        var_a=np.asarray(ma.var(-1, ddof=1)),
        var_b=np.asarray(mb.var(-1, ddof=1)),
        r=np.asarray(_corr(ma, mb)),
        var_d=np.asarray(diffs.var(-1, ddof=1)),
        flat=np.asarray(np.ptp(diffs, axis=-1) <= 1e-12),
        g=np.full(ma.shape[:-1], float(ma.shape[-1])),
    )


def stack_summaries(parts: Sequence[PairSummary]) -> PairSummary:
    """Summaries of single data sets (of any sizes) as one summary over them, in order."""
    return PairSummary(*(np.array([np.asarray(x).reshape(()) for x in field]) for field in zip(*parts)))


def mean_bounds(
    mean: Any, sd: Any, n_tasks: Any, lo: Any, hi: Any, cap: Any, level: Any = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mean_interval` over arrays of data sets (``cap``: the largest effective sample size, ``inf`` without
    one): (low, high), NaN where it gives no interval (fewer than 2 tasks, or a mean or sd that is not finite)."""
    mean, sd, n, lo, hi, cap = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (mean, sd, n_tasks, lo, hi, cap))
    )
    low, high = np.full(mean.shape, np.nan), np.full(mean.shape, np.nan)
    ok = (n >= 2) & np.isfinite(mean) & np.isfinite(sd)
    width = hi - lo
    flat_range = ok & (width <= 0)
    low[flat_range], high[flat_range] = lo[flat_range], hi[flat_range]
    ok &= width > 0
    if ok.any():
        w = width[ok]
        p = np.minimum(np.maximum((mean[ok] - lo[ok]) / w, 0.0), 1.0)
        spread = sd[ok] > 1e-12 * w
        var = np.where(spread, (sd[ok] / w) ** 2, 0.0)
        level_ok = np.broadcast_to(np.asarray(level, dtype=float), mean.shape)[ok]
        crit = t_quantiles(np.maximum(n[ok] - 1, 1), level_ok)
        unit_low, unit_high, _ = unit_bounds(p, var, n[ok], cap[ok], level_ok, crit=crit)
        low[ok], high[ok] = lo[ok] + w * unit_low, lo[ok] + w * unit_high
    return low, high


def summary_bounds(
    s: PairSummary, cap_a: Any, cap_b: Any, level: Any = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pair_bounds` (without clusters) from summaries: every field, cap and level broadcast over the data
    sets, which may have different numbers of tasks. (low, high, no_spread), the same values."""
    g = np.asarray(s.g, dtype=float)
    crit = t_quantiles(np.maximum(g - 1, 1), np.broadcast_to(np.asarray(level, dtype=float), np.shape(g)))
    a, b = np.asarray(s.a, dtype=float), np.asarray(s.b, dtype=float)
    la, ua, _ = unit_bounds(a, s.var_a, g, cap_a, level, crit=crit)
    lb, ub, _ = unit_bounds(b, s.var_b, g, cap_b, level, crit=crit)
    d = b - a
    r = s.r
    low = d - np.sqrt(np.maximum((b - lb) ** 2 - 2 * r * (b - lb) * (ua - a) + (ua - a) ** 2, 0.0))
    high = d + np.sqrt(np.maximum((ub - b) ** 2 - 2 * r * (ub - b) * (a - la) + (a - la) ** 2, 0.0))
    small = g < SMALL_PAIR  # as pair_bounds: never narrower than the t interval on the differences
    with np.errstate(invalid="ignore"):
        half = crit * np.sqrt(np.asarray(s.var_d, dtype=float) / g)
    low = np.where(small, np.minimum(low, d - half), low)
    high = np.where(small, np.maximum(high, d + half), high)
    flat = np.asarray(s.flat, dtype=bool)
    q = no_spread_share(g, level)
    low = np.where(flat, d - q * (d + 1), low)
    high = np.where(flat, d + q * (1 - d), high)
    return np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0), flat


def summary_p_values(s: PairSummary, cap_a: Any, cap_b: Any, null: Any = 0.0, steps: int = 32) -> np.ndarray:
    """:func:`pair_p_values` (without clusters) from summaries, every data set bisected at once: the same
    bisection (``steps`` halvings of ``log(alpha)`` over [1e-15, 1]: the p-value to a relative 1e-8 at 32), so the
    same values as one :func:`pair_p_value` call per data set."""
    shape = np.shape(s.g)
    null = np.broadcast_to(np.asarray(null, dtype=float), shape)

    def excludes(alpha: np.ndarray) -> np.ndarray:
        low, high, _ = summary_bounds(s, cap_a, cap_b, 1 - alpha)
        res: np.ndarray = (low > null) | (high < null)
        return res

    lo_a, hi_a = np.full(shape, math.log(1e-15)), np.zeros(shape)  # log alpha: excluded at hi, held at lo
    ends = excludes(np.exp(hi_a)), excludes(np.exp(lo_a))
    for _ in range(steps):
        mid = (lo_a + hi_a) / 2
        gone = excludes(np.exp(mid))
        hi_a, lo_a = np.where(gone, mid, hi_a), np.where(gone, lo_a, mid)
    p = np.exp(hi_a)
    p = np.where(ends[1], 1e-15, p)
    out: np.ndarray = np.where(~ends[0], 1.0, p)
    return out


def _enough_clusters(clusters: np.ndarray | None) -> bool:
    return clusters is None or len(set(np.asarray(clusters).tolist())) >= 2


def method_note(methods: Sequence[str | None]) -> str:
    """One phrase naming the interval methods used, e.g. for a table's footnote."""
    used = list(dict.fromkeys(m for m in methods if m))
    return "; ".join(METHOD_TEXT[m] for m in used) if used else "no interval"


__all__ = [
    "CONFIDENCE",
    "Interval",
    "METHOD_TEXT",
    "attempts_cap",
    "mean_bounds",
    "mean_interval",
    "method_note",
    "no_spread_share",
    "pair_bounds",
    "pair_interval",
    "pair_p_value",
    "pair_p_values",
    "pair_summary",
    "PairSummary",
    "stack_summaries",
    "summary_bounds",
    "summary_p_values",
    "t_quantile",
    "t_quantiles",
    "task_mean_interval",
    "unit_bounds",
    "wilson_bounds",
]
