"""Figures recomputed independently of hermit_tui.core, for the tests to check the engine against."""

from __future__ import annotations

import math
import statistics


def score_interval_by_hand(
    values: list[float], lo: float, hi: float, t_crit: float, max_n: float | None = None
) -> tuple[float, float]:
    """The small-sample interval of core.stats.intervals recomputed independently: the Wilson quadratic (numpy's roots)
    on the values rescaled to [0, 1], with n_eff = p (1 - p) / se^2 held to [tasks, max_n], critical value
    ``t_crit``."""
    import numpy as np

    g = len(values)
    p = (statistics.fmean(values) - lo) / (hi - lo)
    se = statistics.stdev(values) / math.sqrt(g) / (hi - lo)
    n = max(p * (1 - p) / se**2, g)
    n = min(n, max_n) if max_n else n
    roots = np.roots([1 + t_crit**2 / n, -(2 * p + t_crit**2 / n), p * p]).real
    return lo + (hi - lo) * float(min(roots)), lo + (hi - lo) * float(max(roots))
