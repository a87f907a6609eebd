"""Anytime-valid confidence sequences for a paired mean difference (issue 25, item 4: the anytime-valid mode).

A *confidence sequence* (CS) is a sequence of intervals ``C_1, C_2, ...`` that hold the true mean **at every
time at once** with probability at least ``1 - alpha``: ``P(for all t: mu in C_t) >= 1 - alpha``. So it may be
looked at after every task, stopped on what it shows, and continued later with more tasks, without the error
budget restarting, which the group-sequential design of ``core.stats.sequential.monitor`` (a plan of looks fixed in
advance) cannot offer.

The method is the *predictable plug-in empirical-Bernstein* CS of Waudby-Smith & Ramdas (2023, "Estimating means
of bounded random variables by betting", JRSS B 86:1, Theorem 2), for observations in ``[0, 1]`` whose conditional
mean given the past is ``mu`` (independent tasks drawn from the population are a special case). With
``mu_hat_t = (1/2 + sum_{i<=t} x_i) / (t + 1)``, ``s2_t = (1/4 + sum_{i<=t} (x_i - mu_hat_i)^2) / (t + 1)``,
the predictable bets ``lambda_t = min(sqrt(2 log(2 / alpha) / (s2_{t-1} t log(1 + t))), 1/2)``,
``v_t = 4 (x_t - mu_hat_{t-1})^2`` and ``psi(l) = (-log(1 - l) - l) / 4``::

    C_t = sum lambda_i x_i / sum lambda_i  +/-  (log(2 / alpha) + sum v_i psi(lambda_i)) / sum lambda_i

and the running intersection of the ``C_t`` (still a CS). Paired task differences in ``[-1, 1]`` are mapped to
``(d + 1) / 2``. The observations are the tasks' differences *in a fixed order* (``core.stats.sequential.
schedule.look_order``), each task once with the repeats fixed before it ran: a later repeat of a task already seen does
not have the population mean as its conditional mean (the task's own first result predicts it), so it is not a new
observation of the stream.

**Clusters above the task** (``--cluster-by``; :func:`clustered_confidence_sequence`): the observations are whole
clusters in a fixed order, and the estimand stays the clustered fixed design's, the task-weighted mean difference
``mu = E[n_c dbar_c] / E[n_c]`` (``n_c`` the cluster's tasks, ``dbar_c`` their mean difference). For a value ``m``,
``z_c(m) = (n_c / K) (dbar_c - m)`` (``K`` the largest cluster of the split, known before any result) has mean 0
exactly when ``mu = m`` and lies in ``[-1 - m, 1 - m]``; the sequence for ``mu`` is the test inversion
``{m : 0 in C_t(z(m))}`` of the sequence above at each ``m`` (valid by inversion: at ``m = mu`` it is the sequence
of a mean-0 stream). With every cluster of one task and ``K = 1``, ``z(m)`` mapped to ``[0, 1]`` is ``(d + 1) / 2``
whatever ``m``: the unclustered sequence exactly.

The price of looking at any time: at 200 tasks the CS is about 1.7 times as wide as the fixed-sample 95% interval
(1.7 in ``benchmarks/bench_stats.py``, ``--only anytime``). In ``eval`` it is ``--stop-when-decided --anytime``
(``core.stats.sequential.anytime_plan``; docs/statistics.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

ALPHA = 0.05
MAX_BET = 0.5  # the largest bet (Waudby-Smith & Ramdas suggest 1/2 or 3/4)
METHOD = (
    "anytime-valid confidence sequence: predictable plug-in empirical Bernstein (Waudby-Smith & Ramdas 2023, "
    "Theorem 2) on the paired task differences in a fixed order, running intersection"
)


def eb_confidence_sequence(
    x: Sequence[float] | np.ndarray, alpha: float = ALPHA, *, lo: float = 0.0, hi: float = 1.0, intersect: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of the CS after each observation of ``x`` (last axis: time; leading axes: independent
    streams), for observations in ``[lo, hi]``; with ``intersect``, the running intersection. Bounds are clipped to
    ``[lo, hi]``."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie in (0, 1)")
    if hi <= lo:
        raise ValueError("the range must have hi > lo")
    raw = np.asarray(x, dtype=float)
    if raw.shape[-1] == 0:
        return raw.copy(), raw.copy()
    z = (raw - lo) / (hi - lo)
    if np.any(z < -1e-12) or np.any(z > 1 + 1e-12):
        raise ValueError(f"observations outside [{lo:g}, {hi:g}]")
    z = np.clip(z, 0.0, 1.0)
    t = np.arange(1, z.shape[-1] + 1, dtype=float)
    mu_hat = (0.5 + np.cumsum(z, axis=-1)) / (t + 1)  # mu_hat_t, t = 1..n
    sq = (z - mu_hat) ** 2
    s2 = (0.25 + np.cumsum(sq, axis=-1)) / (t + 1)  # s2_t
    s2_prev = np.concatenate([np.full(z.shape[:-1] + (1,), 0.25), s2[..., :-1]], axis=-1)  # s2_{t-1}, s2_0 = 1/4
    mu_prev = np.concatenate([np.full(z.shape[:-1] + (1,), 0.5), mu_hat[..., :-1]], axis=-1)  # mu_hat_{t-1}
    log_term = math.log(2 / alpha)
    lam = np.minimum(np.sqrt(2 * log_term / (s2_prev * t * np.log1p(t))), MAX_BET)
    v = 4 * (z - mu_prev) ** 2
    psi = (-np.log1p(-lam) - lam) / 4
    sum_lam = np.cumsum(lam, axis=-1)
    centre = np.cumsum(lam * z, axis=-1) / sum_lam
    half = (log_term + np.cumsum(v * psi, axis=-1)) / sum_lam
    low, high = np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
    if intersect:
        low, high = np.maximum.accumulate(low, axis=-1), np.minimum.accumulate(high, axis=-1)
        high = np.maximum(high, low)  # an empty intersection (probability < alpha): a point, never inverted
    return lo + (hi - lo) * low, lo + (hi - lo) * high


CLUSTERED = "on the clusters' task-weighted differences"  # how a clustered sequence's method names its observations
GRID = 257  # values of m tried per look before the bounds are found by bisection
STEPS = 40  # bisection steps (a bound to 2 / 256 / 2**40)
BLOCK = 64  # the looks bisected together (each on the clusters up to it: memory and time grow as BLOCK x clusters)


def _covers(dbar: np.ndarray, w: np.ndarray, m: np.ndarray, alpha: float) -> np.ndarray:
    """Whether 0 lies in the (not intersected) sequence of ``z(m) = w (dbar - m)``, at every time and for every
    ``m``: ``dbar``, ``w`` (..., T); ``m`` (..., R); the answer (..., R, T). On the [0, 1] scale of
    :func:`eb_confidence_sequence`, ``z(m)`` in ``[-1 - m, 1 - m]`` is ``(z + 1 + m) / 2`` and 0 is ``(1 + m) / 2``."""
    mm = m[..., :, None]
    y = np.clip((w[..., None, :] * (dbar[..., None, :] - mm) + 1 + mm) / 2, 0.0, 1.0)
    low, high = eb_confidence_sequence(y, alpha, intersect=False)
    target = (1 + mm) / 2
    return (low <= target) & (target <= high)


def _covers_at(dbar: np.ndarray, w: np.ndarray, m: np.ndarray, times: np.ndarray, alpha: float) -> np.ndarray:
    """Whether 0 lies in the sequence of ``z(m[..., i])`` at time ``times[i]`` (one ``m`` per time)."""
    acc = _covers(dbar, w, m, alpha)  # (..., nt, T)
    return np.take_along_axis(acc, np.broadcast_to(times[:, None], acc.shape[:-1] + (1,)), axis=-1)[..., 0]


def cluster_sets(
    dbar: Sequence[float] | np.ndarray,
    sizes: Sequence[int] | np.ndarray,
    cap: int | np.ndarray,
    alpha: float = ALPHA,
    times: Sequence[int] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of ``{m in [-1, 1] : 0 in C_t(z(m))}`` at each time of ``times`` (0-based indices of the
    clusters, last axis; default every one), *not* intersected over time: the hull of the values ``m`` a grid of
    :data:`GRID` values accepts, each end found by bisection between the outermost accepted value and its rejected
    neighbour. ``dbar``: the clusters' mean task differences in [-1, 1], in the stream's order (leading axes:
    independent streams); ``sizes``: their tasks; ``cap``: ``K`` (at least every size; per stream, an array of
    shape (..., 1)). When no value of the grid is accepted, the ratio estimate ``sum n dbar / sum n`` is tried, and
    the set is that point if it is rejected too (an empty set: probability < alpha)."""
    d = np.asarray(dbar, dtype=float)
    n = np.broadcast_to(np.asarray(sizes, dtype=float), d.shape)
    if np.any(n < 1) or np.any(n > cap):
        raise ValueError(f"cluster sizes must lie in 1..{cap}")
    w = n / cap
    t_all = d.shape[-1]
    at = np.arange(t_all) if times is None else np.asarray(times, dtype=np.int64)
    lead = d.shape[:-1]
    grid = np.broadcast_to(np.linspace(-1.0, 1.0, GRID), lead + (GRID,))
    acc = _covers(d, w, grid, alpha)[..., at]  # (..., GRID, nt)
    ratio = (np.cumsum(n * d, axis=-1) / np.cumsum(n, axis=-1))[..., at]
    found = acc.any(axis=-2)
    inside = _covers_at(d, w, ratio, at, alpha)
    first = np.argmax(acc, axis=-2)
    last = GRID - 1 - np.argmax(acc[..., ::-1, :], axis=-2)
    step = 2.0 / (GRID - 1)

    def bisect(ok: np.ndarray, bad: np.ndarray) -> np.ndarray:
        ok, bad = ok.copy(), bad.copy()
        for start in range(0, len(at), BLOCK):  # a block of times at once, on the clusters up to its last
            part = slice(start, start + BLOCK)
            times = at[part]
            end = int(times.max()) + 1
            lo_, hi_ = ok[..., part], bad[..., part]
            for _ in range(STEPS):
                mid = (lo_ + hi_) / 2
                yes = _covers_at(d[..., :end], w[..., :end], mid, times, alpha)
                lo_, hi_ = np.where(yes, mid, lo_), np.where(yes, hi_, mid)
            ok[..., part] = lo_
        return ok

    g_low, g_high = -1.0 + step * first, -1.0 + step * last
    low_ok = np.where(found, g_low, ratio)
    low_bad = np.where(found, g_low - step, -1.0)
    high_ok = np.where(found, g_high, ratio)
    high_bad = np.where(found, g_high + step, 1.0)
    low = np.where(found & (first == 0), -1.0, bisect(low_ok, low_bad))
    high = np.where(found & (last == GRID - 1), 1.0, bisect(high_ok, high_bad))
    empty = ~found & ~inside
    return np.where(empty, ratio, low), np.where(empty, ratio, high)


def clustered_confidence_sequence(
    dbar: Sequence[float] | np.ndarray, sizes: Sequence[int] | np.ndarray, cap: int | np.ndarray, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """The CS of the task-weighted mean difference ``mu`` after each cluster (:func:`cluster_sets`), running
    intersection (an empty intersection: a point, as :func:`eb_confidence_sequence`)."""
    low, high = cluster_sets(dbar, sizes, cap, alpha)
    if low.shape[-1] == 0:
        return low, high
    low, high = np.maximum.accumulate(low, axis=-1), np.minimum.accumulate(high, axis=-1)
    return low, np.maximum(high, low)


def paired_confidence_sequence(
    diffs: Sequence[float] | np.ndarray, alpha: float = ALPHA, width: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """The CS of the mean of paired task differences in ``[-width, width]`` (scores in ``[0, width]``), in the
    order given."""
    return eb_confidence_sequence(diffs, alpha, lo=-width, hi=width)


__all__ = [
    "ALPHA",
    "CLUSTERED",
    "MAX_BET",
    "METHOD",
    "cluster_sets",
    "clustered_confidence_sequence",
    "eb_confidence_sequence",
    "paired_confidence_sequence",
]
