"""Anytime-valid confidence sequences for a paired mean difference (issue 25, item 4: the anytime-valid mode).

A *confidence sequence* (CS) is a sequence of intervals ``C_1, C_2, ...`` that hold the true mean **at every
time at once** with probability at least ``1 - alpha``: ``P(for all t: mu in C_t) >= 1 - alpha``. So it may be
looked at after every task, stopped on what it shows, and continued later with more tasks, without the error
budget restarting, which the group-sequential design of ``core.stats.sequential`` (a plan of looks fixed in
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
look_order``), each task once with the repeats fixed before it ran: a later repeat of a task already seen does not
have the population mean as its conditional mean (the task's own first result predicts it), so it is not a new
observation of the stream.

The price of looking at any time: at 200 tasks the CS is about 1.7 times as wide as the fixed-sample 95% interval
(1.7 in ``benchmarks/bench_stats.py``, ``--only anytime``). In ``eval`` it is ``--stop-when-decided --anytime``
(``core.stats.anytime_looks``; docs/statistics.md).
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


def paired_confidence_sequence(
    diffs: Sequence[float] | np.ndarray, alpha: float = ALPHA, width: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """The CS of the mean of paired task differences in ``[-width, width]`` (scores in ``[0, width]``), in the
    order given."""
    return eb_confidence_sequence(diffs, alpha, lo=-width, hi=width)


__all__ = ["ALPHA", "MAX_BET", "METHOD", "eb_confidence_sequence", "paired_confidence_sequence"]
