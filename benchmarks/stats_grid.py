"""The issue-25 grid's law for bench_stats.py and the scripts that explore it: pass/fail tasks whose success
p ~ Beta(mean mu, concentration kappa), a candidate moved in proportion to each task's room; one grid cell's coverage
figures (:func:`grid_cell`); and the seed every section of bench_stats derives its own from."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hermit_tui.core.stats.intervals import attempts_cap, pair_bounds, unit_bounds

SEED = 20261201  # each section of bench_stats seeds from SEED + its own offset


GRID_T = (4, 8, 16, 64, 256)


GRID_MU = (0.05, 0.5, 0.95)


GRID_DELTA = (0.0, 0.05, 0.2)


GRID_REPEATS = ((1, 1), (3, 3), (10, 10), (10, 1), (3, 10))


GRID_KAPPA = (1.0, 10.0)


def grid_data(rng, n, g, mu, kappa, delta, ka, kb, null_het=False, side=0):
    """n data sets of g pass/fail tasks: a's task success p ~ Beta(mean mu, concentration kappa); b's is a's moved by
    delta * (1 - p) / (1 - mu) (up) or, where that cannot fit (mu + delta > 1), by -delta * p / mu (down), so the
    true difference is +/-delta on average over tasks; ``null_het``: b's p drawn afresh from the same Beta (effects
    that vary by task, mean difference 0); ``side`` -1 moves b down (+1 up) whether or not up would fit. Returns task
    means (n x g) of a and b, b's true mean, the true difference."""
    p = rng.beta(mu * kappa, (1 - mu) * kappa, size=(n, g))
    if null_het:
        pb, d = rng.beta(mu * kappa, (1 - mu) * kappa, size=(n, g)), 0.0
    elif side > 0 or (side == 0 and delta <= 1 - mu + 1e-12):
        pb, d = p + delta * (1 - p) / (1 - mu), delta
    else:
        pb, d = p - delta * p / mu, -delta
    return rng.binomial(ka, p) / ka, rng.binomial(kb, pb) / kb, mu + d, d


def grid_cell(rng, n, g, mu, kappa, delta, ka, kb, sim_sets: int = 0) -> dict:
    ma, mb, mu_b, d = grid_data(rng, n, g, mu, kappa, delta, ka, kb)
    cap_a, cap_b = attempts_cap(np.full(g, ka)), attempts_cap(np.full(g, kb))
    la, ua, _ = unit_bounds(ma.mean(1), ma.var(1, ddof=1), g, cap_a)
    lb, ub, _ = unit_bounds(mb.mean(1), mb.var(1, ddof=1), g, cap_b)
    low, high, _ = pair_bounds(ma, mb, cap_a, cap_b)
    diffs = mb - ma
    dbar, sd = diffs.mean(1), diffs.std(1, ddof=1)
    out: dict[str, Any] = dict(
        sel_a=float(np.mean((la <= mu) & (mu <= ua))),
        sel_b=float(np.mean((lb <= mu_b) & (mu_b <= ub))),
        pair=float(np.mean((low <= d) & (d <= high))),
        outside=int(np.sum(la < 0) + np.sum(ub > 1) + np.sum(low < -1) + np.sum(high > 1)),
        zero=int(np.sum(ua - la <= 0) + np.sum(ub - lb <= 0) + np.sum(high - low <= 0)),
    )
    if d:
        from scipy.special import stdtr

        out["power"] = float(np.mean(low > 0) if d > 0 else np.mean(high < 0))
        se = sd / math.sqrt(g)
        half = dbar - low if d > 0 else high - dbar  # the side the true difference must clear (power_at)
        live = se > 0  # no power figure from zero spread
        # the closed form power_at used before the simulated power (issue 25 item 3): T_{n-1}((|d| - h) / se)
        closed = stdtr(g - 1, (abs(d) - half[live]) / se[live])
        out["closed"] = float(np.mean(closed)) if live.any() else float("nan")
        ratio = half[live] / se[live]
        out["ratio"] = float(np.median(ratio)) if live.any() else math.nan  # the interval's h / se, data set median
        out["sets"] = (ma[:sim_sets], mb[:sim_sets])  # for the power section (PairStats.power_at on them)
    return out


def observed_half(dbar, low, high):
    """The interval's half-width on the observed difference's side, the larger at a tie (as the closed-form MDE
    takes it: ``PairStats._ratio``)."""
    below, above = dbar - low, high - dbar
    return np.where(dbar > 0, below, np.where(dbar < 0, above, np.maximum(below, above)))
