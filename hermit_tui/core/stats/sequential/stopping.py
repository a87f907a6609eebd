"""At stopping: the non-binding futility rule (conditional power) and the estimate, interval and p-value adjusted
for the stopping rule, by the recursive integration of :mod:`.spending` with a drift.

At stopping (issue 25, item 4): **a non-binding futility rule** (:data:`FUTILITY_CP`, :func:`conditional_power`;
the boundaries ignore it, so it can only remove claims) stops an undecided candidate whose conditional power under
the current estimate is below 0.02, at looks of :data:`FUTILITY_MIN_ATTEMPTS` attempts per selector or more; and
the estimate, interval and p-value at the candidate's stop are **adjusted for the stopping rule**: by the
sample-mean ordering of the whole design with its futility regions when the rule is on (:func:`ordered_inference`,
:func:`futility_regions`; the stagewise ordering is not defined once a look continues on two intervals), by the
stagewise ordering of the looks run without it (:func:`stagewise_inference`; Jennison & Turnbull 2000, ch. 8), both
computed by the same recursive integration with a drift.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from hermit_tui.core.stats.intervals import CONFIDENCE
from hermit_tui.core.stats.sequential.spending import GRID, simpson

FUTILITY_CP = 0.02  # stop for futility when the conditional power under the current estimate is below this
FUTILITY_MIN_ATTEMPTS = 50  # ... at looks that have seen this many attempts per selector (tasks x rounds) or more
ADJUSTED_METHOD = (
    "stagewise (Armitage-Tsiatis) ordering of the looks: median-unbiased estimate, exact 95% confidence interval "
    "and two-sided p-value for the stopping rule followed, by recursive numerical integration over the looks run "
    "(Jennison & Turnbull 2000, ch. 8)"
)
ORDERED_METHOD = (
    "sample-mean ordering of the design's outcomes, the futility stops included (Emerson & Fleming 1990; Jennison & "
    "Turnbull 2000, sec. 8.4): median-unbiased estimate, exact 95% confidence interval and two-sided p-value for the "
    "stopping rule followed, by recursive numerical integration over the design's looks"
)
FUTILITY_METHOD = (
    "non-binding futility: stop when the conditional power under the current estimate of crossing a later efficacy "
    "boundary is below {cp:g}, at looks of 50 attempts per selector or more (Jennison & Turnbull 2000, sec. 10.2); "
    "the efficacy boundaries ignore it"
)


def _walk(
    info: Sequence[float],
    bounds: Sequence[float],
    theta: float,
    start: tuple[float, float] = (0.0, 0.0),
    last: float | None = None,
    m: int = GRID,
) -> tuple[list[float], list[float]]:
    """The score process ``S_j = S_{j-1} + N(theta (I_j - I_{j-1}), I_j - I_{j-1})`` started at ``S = start[1]`` at
    information ``start[0]``, with the looks at ``info`` and their critical values ``bounds`` (on the z scale:
    ``|S_j| >= bounds[j] sqrt(I_j)`` stops): for each look, the probability of stopping there upwards and downwards
    (first exits). ``last``: at the last look, instead, the probability of reaching it with ``Z >= last`` (up) and
    ``Z < last`` (down). Recursive numerical integration on Simpson grids over the continuation regions (Armitage,
    McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19)."""
    from scipy.special import ndtr

    grid, mass, prev = np.array([float(start[1])]), np.array([1.0]), float(start[0])
    ups: list[float] = []
    downs: list[float] = []
    for j, (ij, c) in enumerate(zip(info, bounds)):
        d = max(float(ij) - prev, 1e-12)
        step = math.sqrt(d)
        centre = grid + theta * d
        if last is not None and j == len(info) - 1:
            up = float(np.sum(mass * ndtr((centre - last * math.sqrt(ij)) / step)))
            ups.append(up)
            downs.append(max(0.0, float(np.sum(mass)) - up))
            break
        b = c * math.sqrt(ij) if math.isfinite(c) else math.inf
        ups.append(float(np.sum(mass * ndtr((centre - b) / step))) if math.isfinite(b) else 0.0)
        downs.append(float(np.sum(mass * ndtr((-b - centre) / step))) if math.isfinite(b) else 0.0)
        lo, hi = max(-b, float(centre.min()) - 8 * step), min(b, float(centre.max()) + 8 * step)
        if j == len(info) - 1 or lo >= hi:
            ups += [0.0] * (len(info) - j - 1)
            downs += [0.0] * (len(info) - j - 1)
            break
        new_grid, weights = simpson(lo, hi, m)
        kernel = np.exp(-0.5 * ((new_grid[:, None] - centre[None, :]) / step) ** 2) / (step * math.sqrt(2 * math.pi))
        grid, mass, prev = new_grid, (kernel @ mass) * weights, float(ij)
    return ups, downs


INFERENCE_GRID = 81  # points of the numerical integration of the inference at stopping (errors under 1e-5)


def _invert(
    upper: Callable[[float], float], centre: float, reach: float, level: float, lo: float, hi: float, *, xtol: float
) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) from ``upper`` = P(theta), the probability of an outcome more extreme upwards than
    the one observed (increasing in theta): the median-unbiased ``P = 1/2``, the interval ``P = (1 -+ level) / 2``
    (each bracketed from ``centre`` in steps of ``reach``, then solved by Brent's method to ``xtol``) and p =
    ``2 min(P(0), 1 - P(0))``; all clipped to ``[lo, hi]``. Shared by the stagewise and the sample-mean orderings."""
    from scipy.optimize import brentq

    def solve(q: float) -> float:
        a, b = centre - reach, centre + reach
        while upper(a) > q and a > lo - 10 * reach:
            a -= reach
        while upper(b) < q and b < hi + 10 * reach:
            b += reach
        fa, fb = upper(a) - q, upper(b) - q
        if fa > 0:
            return a
        if fb < 0:
            return b
        return float(brentq(lambda t: upper(t) - q, a, b, xtol=xtol))

    tail = (1 - level) / 2
    est, low, high = solve(0.5), solve(tail), solve(1 - tail)
    p0 = upper(0.0)
    p = min(1.0, 2 * min(p0, 1 - p0))

    def clip(x: float) -> float:
        return min(max(x, lo), hi)

    return clip(est), clip(low), clip(high), p


def stagewise_inference(
    info: Sequence[float],
    bounds: Sequence[float],
    z: float,
    *,
    level: float = CONFIDENCE,
    lo: float = -1.0,
    hi: float = 1.0,
) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) at a stop at the last of the looks ``info`` with observed ``z`` (the mean
    difference over its standard error ``1 / sqrt(info[-1])``), ``bounds`` the critical values of the looks before
    it: the **stagewise ordering** (Armitage 1957, Tsiatis, Rosner & Mehta 1984; Jennison & Turnbull 2000, sec.
    8.4): an outcome is more extreme upwards than (look k, z) when it stopped upwards at an earlier look, or reached
    look k with a larger z. With ``P(theta)`` the probability of that under a true difference ``theta`` (increasing
    in theta), the estimate is the median-unbiased ``P(theta) = 1/2``, the interval ``P = (1 - level) / 2`` and
    ``(1 + level) / 2``, and p is ``2 min(P(0), 1 - P(0))``; all clipped to ``[lo, hi]``, the difference's range."""
    info = [float(i) for i in info]
    cs = [float(c) for c in bounds[: len(info) - 1]] + [math.inf]

    def upper(theta: float) -> float:
        ups, _ = _walk(info, cs, theta, last=z, m=INFERENCE_GRID)
        return sum(ups)

    return _invert(upper, z / math.sqrt(info[-1]), 12 / math.sqrt(info[0]), level, lo, hi, xtol=1e-6)


def _ordered_upper(
    info: Sequence[float], bounds: Sequence[float], inner: Sequence[float], theta: float, estimate: float, m: int
) -> float:
    """``P(theta)`` of the sample-mean ordering: the probability, under a true difference ``theta``, that the design
    stops (at any of the looks ``info``) with a mean difference at least ``estimate``. A look stops when ``|Z| >=
    bounds[j]`` (efficacy) or ``|Z| < inner[j]`` (futility; 0: none), the last look always. Recursive numerical
    integration on the score scale, the continuation region of a look with a futility region being two intervals."""
    from scipy.special import ndtr

    grid, mass, prev = np.array([0.0]), np.array([1.0]), 0.0
    total, last = 0.0, len(info) - 1
    for j, (ij, c, f) in enumerate(zip(info, bounds, inner)):
        d = max(float(ij) - prev, 1e-12)
        step, root = math.sqrt(d), math.sqrt(float(ij))
        centre = grid + theta * d
        s_star = estimate * float(ij)  # a mean difference of ``estimate`` on the score scale

        def above(x: float, mass: np.ndarray = mass, centre: np.ndarray = centre, step: float = step) -> float:
            return float(np.sum(mass * ndtr((centre - x) / step)))  # P(S_j >= x), from the continuation density

        if j == last:
            return total + above(s_star)
        b = c * root if math.isfinite(c) else math.inf
        a = min(max(f, 0.0) * root, b)
        if math.isfinite(b):
            total += above(max(b, s_star))
            if s_star < -b:
                total += above(s_star) - above(-b)
        if a > 0 and s_star < a:
            total += above(max(s_star, -a)) - above(a)
        reach_lo, reach_hi = float(centre.min()) - 8 * step, float(centre.max()) + 8 * step
        pieces = [(max(-b, reach_lo), min(b, reach_hi))] if a <= 0 else [
            (max(-b, reach_lo), min(-a, reach_hi)),
            (max(a, reach_lo), min(b, reach_hi)),
        ]  # fmt: skip
        grids = [simpson(lo, hi, m if len(pieces) == 1 else m // 2 + 1) for lo, hi in pieces if lo < hi]
        if not grids:
            return total
        new_grid = np.concatenate([g for g, _ in grids])
        weights = np.concatenate([w for _, w in grids])
        kernel = np.exp(-0.5 * ((new_grid[:, None] - centre[None, :]) / step) ** 2) / (step * math.sqrt(2 * math.pi))
        grid, mass, prev = new_grid, (kernel @ mass) * weights, float(ij)
        if float(np.sum(mass)) < 1e-9:  # (nothing left to stop later)
            break
    return total


def ordered_inference(
    info: Sequence[float],
    bounds: Sequence[float],
    inner: Sequence[float],
    estimate: float,
    *,
    level: float = CONFIDENCE,
    lo: float = -1.0,
    hi: float = 1.0,
) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) at a stop with the mean difference ``estimate``, by the **sample-mean ordering**
    (Emerson & Fleming 1990, Biometrika 77:875; Jennison & Turnbull 2000, sec. 8.4) over the whole design: the
    looks ``info`` (information: 1 / variance of the mean difference), their efficacy critical values ``bounds``
    and futility regions ``|z| < inner``. An outcome is more extreme upwards when its mean difference at its stop is
    larger, whatever the look. Unlike the stagewise ordering it is defined when a look's continuation region is two
    intervals (a futility region inside the boundaries), at the price of depending on the looks not reached. With
    ``P(theta)`` the probability of a more extreme outcome, the estimate solves ``P = 1/2`` (median-unbiased), the
    interval ``P = (1 -+ level) / 2``, p is ``2 min(P(0), 1 - P(0))``; all clipped to ``[lo, hi]``."""
    info = [float(i) for i in info]
    cs = [float(c) for c in bounds]
    fs = [float(f) for f in inner]

    def upper(theta: float) -> float:
        return _ordered_upper(info, cs, fs, theta, estimate, INFERENCE_GRID)

    return _invert(upper, estimate, 12 / math.sqrt(info[0]), level, lo, hi, xtol=1e-5)


def futility_regions(
    info: Sequence[float], bounds: Sequence[float], threshold: float, first: int, tol: float = 1e-3
) -> list[float]:
    """The futility region ``|z| < f_j`` of each look: where the conditional power under the current estimate
    (:func:`conditional_power` with the looks ``info`` and critical values ``bounds``) is below ``threshold``; 0
    before look ``first`` (an index) and at the last look. The conditional power grows with ``|z|``, so ``f_j`` is
    found by bisection (to ``tol`` on the z scale). It depends on the ratios of the information only, so the
    regions are cached on those ratios and the critical values rounded to 1e-4."""
    last = float(info[-1])
    return list(
        _futility_regions(
            tuple(round(float(i) / last, 6) for i in info),
            tuple(round(float(c), 4) if math.isfinite(c) else math.inf for c in bounds),
            threshold,
            first,
            tol,
        )
    )


@lru_cache(maxsize=4096)
def _futility_regions(
    info: tuple[float, ...], bounds: tuple[float, ...], threshold: float, first: int, tol: float
) -> tuple[float, ...]:
    out = []
    for j in range(len(info)):
        c = float(bounds[j])
        top = c if math.isfinite(c) else 8.0
        if j < first or j == len(info) - 1 or conditional_power(info, bounds, j, 0.0) >= threshold:
            out.append(0.0)
            continue
        if conditional_power(info, bounds, j, top) < threshold:
            out.append(top)
            continue
        lo, hi = 0.0, top
        while hi - lo > tol:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if conditional_power(info, bounds, j, mid) < threshold else (lo, mid)
        out.append((lo + hi) / 2)
    return tuple(out)


def conditional_power(info: Sequence[float], bounds: Sequence[float], now: int, z: float) -> float:
    """The probability, under the current estimate ``theta = z / sqrt(info[now])``, that a look after look ``now``
    (an index of ``info``) crosses its efficacy boundary on either side, given ``z`` at look ``now`` (ignoring any
    futility rule; the later looks' information as ``info`` says)."""
    i_now = float(info[now])
    later = [float(i) for i in info[now + 1 :]]
    if not later:
        return 0.0
    s = z * math.sqrt(i_now)
    ups, downs = _walk(later, bounds[now + 1 :], s / i_now, start=(i_now, s), m=INFERENCE_GRID)
    return min(1.0, sum(ups) + sum(downs))


__all__ = [
    "ADJUSTED_METHOD",
    "FUTILITY_CP",
    "FUTILITY_METHOD",
    "ORDERED_METHOD",
    "FUTILITY_MIN_ATTEMPTS",
    "conditional_power",
    "futility_regions",
    "ordered_inference",
    "stagewise_inference",
]
