"""95% intervals for a mean of per-task values that never leave the possible range.

The unit of sampling is the task: a selector's interval is for the mean of its per-task mean scores, a pair's for the
mean of the per-task differences. The values lie in a known range ``[lo, hi]`` (scores in [0, 1], so task means in
[0, 1] and differences in [-1, 1]; other scales: the lowest and highest score observed). Three methods, chosen in
this order:

1. **No-spread bound** when every task has the same value ``c`` (all solved, none solved, a constant shift): the
   sample cannot estimate a spread, and a zero-width interval would claim that every unseen task behaves alike.
   With ``G`` tasks, a share of tasks larger than ``q = 1 - 0.025^(1/G)`` that differs from ``c`` would have shown
   up in the sample with probability above 97.5%, so the mean lies in ``[c - q (c - lo), c + q (hi - c)]`` (the
   one-sided Clopper-Pearson bound for 0 events in ``G``, applied to the tasks that differ, each at worst at the
   end of the range; with 0/1 scores, the "rule of three" generalised).
2. **Student t**, ``mean +/- t(0.975, G - 1) * se``, where it is accurate: at least :data:`T_MIN_TASKS` tasks and
   at least :data:`T_MIN_COUNT` effective observations on each side of the mean (``n_eff * p`` and
   ``n_eff * (1 - p)``, below), the usual condition for the normal approximation to a bounded mean. Such a t
   interval lies inside the range.
3. **Score interval with an effective sample size** otherwise (Wilson's score interval, Wilson 1927, with the
   sample size replaced by the effective one, as Korn & Graubard 1998 do for clustered survey proportions, and the
   normal critical value by Student's ``t(0.975, G - 1)``): with ``p`` the mean rescaled to [0, 1] and ``se`` its
   standard error, ``n_eff = p (1 - p) / se^2``, at least ``G`` (a value in [0, 1] has variance at most
   ``p (1 - p)``, so ``G`` tasks carry at least ``G`` observations' worth) and, when every score is at one end of
   the range (pass/fail), at most ``G^2 / sum(1 / k_i)`` (the attempts' worth). The interval is the set of means
   ``m`` with ``(p - m)^2 <= t^2 m (1 - m) / n_eff``: it stays inside [0, 1], is asymmetric near the ends, never has
   zero width, and comes close to the t interval in the middle of the range. Near an end, where the effective count
   on the far side, ``n_eff * min(p, 1 - p)``, is at most :data:`FEW` and the mean lies within :data:`NEAR` of the
   range from that end, Wilson's interval is known to cover too
   little (Brown, Cai & DasGupta 2001, "Interval estimation for a binomial proportion", Statistical Science
   16:101, who modify it there); that side is then widened to the Clopper-Pearson bound on the effective counts
   ``x = n p`` of ``n = n_eff (z / t)^2`` (Korn & Graubard 1998, "Confidence intervals for proportions with small
   expected number of positive counts estimated from survey data", Survey Methodology 24:193).

Coverage was checked by simulation (``benchmarks/bench_stats.py``, figures in ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    import numpy as np

CONFIDENCE = 0.95
T_MIN_TASKS = 30
T_MIN_COUNT = 10.0
FEW = 3.0  # effective observations on the far side of the mean below which an end gets Clopper-Pearson's bound
NEAR = 0.2  # ... when the mean is this close to that end (a fifth of the range)
Z95 = 1.959963984540054

Method = Literal["t", "score", "no-spread"]
METHOD_TEXT: dict[str, str] = {
    "t": "Student t interval (tasks - 1 df)",
    "score": "score interval with an effective sample size (Wilson-type, t critical value; Clopper-Pearson on "
    "the effective counts next to an end)",
    "no-spread": "no-spread bound (every task has the same value: 1 - 0.025^(1/tasks) of tasks may differ)",
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


def t_quantile(df: int, level: float = CONFIDENCE) -> float:
    """Student's t quantile for a two-sided ``level`` interval (scipy.special: a tenth of scipy.stats' import)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 1 - (1 - level) / 2))


def no_spread_share(n_tasks: int, level: float = CONFIDENCE) -> float:
    """The largest share of tasks that may differ from the value every one of ``n_tasks`` tasks showed."""
    return float(1 - ((1 - level) / 2) ** (1 / n_tasks))


def wilson_bounds(p: float, n: float, crit: float) -> tuple[float, float]:
    """Wilson's score interval for a proportion ``p`` from ``n`` observations, critical value ``crit``."""
    c2 = crit * crit
    centre = (p + c2 / (2 * n)) / (1 + c2 / n)
    half = crit / (1 + c2 / n) * math.sqrt(max(p * (1 - p), 0.0) / n + c2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


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
    crit = t_quantile(n_tasks - 1, level)
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


def task_mean_interval(
    means: np.ndarray, counts: np.ndarray, binary: bool, lo: float, hi: float, level: float = CONFIDENCE
) -> Interval | None:
    """A selector's interval: for the mean of its task means ``means`` (numpy array), with ``counts`` attempts per
    task; ``binary``: every score is at one end of ``[lo, hi]`` (pass/fail), which caps the effective sample size at
    the attempts' worth, ``G^2 / sum(1 / k_i)``."""
    import numpy as np

    g = len(means)
    if g < 2:
        return None
    cap = g * g / float(np.sum(1.0 / np.asarray(counts, dtype=float))) if binary else None
    return mean_interval(float(np.mean(means)), float(np.std(means, ddof=1)), g, lo, hi, max_n_eff=cap, level=level)


def difference_interval(diffs: np.ndarray, lo: float, hi: float, level: float = CONFIDENCE) -> Interval | None:
    """A pair's interval: for the mean of the per-task differences ``diffs`` of scores in ``[lo, hi]``."""
    import numpy as np

    if len(diffs) < 2:
        return None
    width = hi - lo
    return mean_interval(float(np.mean(diffs)), float(np.std(diffs, ddof=1)), len(diffs), -width, width, level=level)


def method_note(methods: Sequence[str | None]) -> str:
    """One phrase naming the interval methods used, e.g. for a table's footnote."""
    used = list(dict.fromkeys(m for m in methods if m))
    return "; ".join(METHOD_TEXT[m] for m in used) if used else "no interval"


__all__ = [
    "CONFIDENCE",
    "FEW",
    "NEAR",
    "Interval",
    "METHOD_TEXT",
    "T_MIN_COUNT",
    "T_MIN_TASKS",
    "difference_interval",
    "mean_interval",
    "method_note",
    "no_spread_share",
    "t_quantile",
    "task_mean_interval",
    "wilson_bounds",
]
