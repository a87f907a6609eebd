"""The few distribution functions the report and the gate call, in the standard library (issue 30).

``scipy.special``'s import costs a report on a small evaluation most of its time (a fifth of a second of a third);
these are its ``stdtr``, ``stdtrit``, ``ndtr`` and ``bdtr`` under the same names and argument order, broadcasting
over numpy arrays like a ufunc. The regularized incomplete beta function is Lentz's continued fraction (relative
error about 1e-15), the t quantile Newton's method on it from the Cornish-Fisher start (exact forms for 1 and 2
degrees of freedom); tests/test_special.py checks them against scipy.special on a grid. And one of scipy.stats'
quantiles the intervals need: :func:`poisson_lower`, ``chi2.ppf(alpha, 2 x) / 2`` (tests/test_intervals.py checks it).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

_TINY = 1e-300
_EPS = 1e-16


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def _stdtr(df: float, t: float) -> float:
    if math.isnan(df) or math.isnan(t) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    if math.isinf(df):
        return _ndtr(t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))  # P(T > |t|)
    return 1.0 - tail if t > 0 else tail


def _t_pdf(df: float, t: float) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


def _ndtr(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _ndtri(p: float) -> float:
    """The normal quantile: Acklam's rational approximation, then one Halley step on erfc (full precision)."""
    if p <= 0.0:
        return -math.inf if p == 0.0 else math.nan
    if p >= 1.0:
        return math.inf if p == 1.0 else math.nan
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)  # fmt: skip
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)  # fmt: skip
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)  # fmt: skip
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    if p < 0.02425 or p > 1 - 0.02425:
        q = math.sqrt(-2 * math.log(min(p, 1 - p)))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
        x = x if p < 0.5 else -x
    else:
        q = p - 0.5
        r = q * q
        x = (
            (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
            * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
        )
    e = _ndtr(x) - p if p < 0.5 else (1.0 - p) - 0.5 * math.erfc(x / math.sqrt(2.0))
    u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x - u / (1 + x * u / 2)


@lru_cache(maxsize=4096)  # the report asks for the same few quantiles hundreds of times
def _stdtrit(df: float, p: float) -> float:
    if math.isnan(df) or math.isnan(p) or df <= 0 or p < 0 or p > 1:
        return math.nan
    if p == 0.0 or p == 1.0:
        return -math.inf if p == 0.0 else math.inf
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -_stdtrit(df, 1.0 - p) if p > 1e-10 else _stdtrit_lower(df, p)
    if math.isinf(df):
        return _ndtri(p)
    if df == 1.0:
        return 1.0 / math.tan(math.pi * (1.0 - p))
    if df == 2.0:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = _ndtri(p)  # Cornish-Fisher (Abramowitz and Stegun 26.7.5)
    z2 = z * z
    t = (
        z
        + (z2 + 1) * z / (4 * df)
        + ((5 * z2 + 16) * z2 + 3) * z / (96 * df**2)
        + (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / (384 * df**3)
    )
    return _newton(df, 1.0 - p, t, upper=True)


def _stdtrit_lower(df: float, p: float) -> float:
    """A far lower quantile, solved on the lower tail itself (where 1 - p would lose the digits)."""
    t = -_stdtrit(df, 1.0 - 1e-10)
    return _newton(df, p, t, upper=False)


def _newton(df: float, target: float, t: float, *, upper: bool) -> float:
    """Solve tail(t) = target, tail the upper (P(T > t)) or lower (P(T < t)) probability, from ``t``."""
    sign = 1.0 if upper else -1.0
    last = math.inf
    for _ in range(100):
        tail = 1.0 - _stdtr(df, t) if (upper and t <= 0) else _stdtr(df, -t) if upper else _stdtr(df, t)
        step = (tail - target) / _t_pdf(df, t) * sign
        # a step that would cross to the other side of 0 or overshoot far is halved (the tail is monotone)
        new = t + step
        if (new > 0) != (t > 0):
            new = t / 2
        moved = abs(new - t)
        if moved <= 4 * _EPS * abs(new) or (
            moved >= last and moved <= 1e-12 * abs(new)
        ):  # converged, or stalled at rounding level
            return new
        t, last = new, moved
    return t


def _bdtr(k: float, n: float, p: float) -> float:
    if math.isnan(k) or math.isnan(n) or math.isnan(p) or p < 0 or p > 1 or n < 0:
        return math.nan
    k = math.floor(k)
    if k < 0:
        return math.nan  # as scipy.special.bdtr
    if k > n:
        return math.nan  # as scipy.special.bdtr
    if k == n:
        return 1.0
    if p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0
    return _betainc(n - k, k + 1.0, 1.0 - p)


def _ufunc(fn: Any, nin: int) -> Any:
    vectorized = np.vectorize(fn, otypes=[float])

    def call(*args: Any) -> Any:
        if len(args) != nin:
            raise TypeError(f"{fn.__name__[1:]} takes {nin} arguments")
        if all(np.ndim(a) == 0 for a in args):
            return np.float64(fn(*(float(a) for a in args)))
        return vectorized(*args)

    call.__name__ = fn.__name__[1:]
    call.__doc__ = fn.__doc__
    return call


stdtr = _ufunc(_stdtr, 2)  #: Student's t CDF, stdtr(df, t)
stdtrit = _ufunc(_stdtrit, 2)  #: its inverse in t, stdtrit(df, p)
ndtr = _ufunc(_ndtr, 1)  #: the standard normal CDF
ndtri = _ufunc(_ndtri, 1)  #: its inverse
bdtr = _ufunc(_bdtr, 3)  #: the binomial CDF, bdtr(k, n, p) = P(X <= k)


def poisson_lower(x: Any, alpha: Any) -> Any:
    """The one-sided lower confidence bound ``lambda`` of a Poisson mean from ``x`` events (``x > 0``, not necessarily
    a whole number): the ``lambda`` with ``P(Poisson(lambda) >= x) = alpha``, i.e. ``0.5 * chi2.ppf(alpha, 2 x)``, the
    regularised lower incomplete gamma ``P(x, lambda) = alpha`` solved for ``lambda``. Newton's method on
    ``log P(x, e^u) = log alpha`` (numpy only: no scipy import), from ``u = log((alpha Gamma(x + 1))^(1/x))``, below
    the root since ``P(x, lambda) <= lambda^x / Gamma(x + 1)``; for the small ``x`` (at most a few) of
    :data:`SMALL_COUNT` and ``alpha`` up to 0.5, to about 1e-12 relative."""
    x, alpha = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(alpha, dtype=float))
    lg = np.array([math.lgamma(v + 1) for v in x.ravel()]).reshape(x.shape)
    log_alpha = np.log(np.maximum(alpha, 1e-300))
    u = np.minimum((log_alpha + lg) / x, np.log(x + 8.0))
    for _ in range(30):
        lam = np.exp(u)
        term, total = np.ones_like(lam), np.ones_like(lam)
        for j in range(1, 25 + 3 * int(np.max(lam, initial=0.0))):  # P(x, lam) = lam^x e^-lam / Gamma(x + 1)
            term = term * lam / (x + j)  # * sum_j lam^j / ((x + 1) ... (x + j)), to 1e-16 of the sum
            total = total + term
        log_p = x * u - lam - lg + np.log(total)
        slope = x * np.exp(x * u - lam - lg - log_p)  # d log P / du = lam * density / P
        step = (log_p - log_alpha) / slope
        u = np.minimum(u - step, np.log(x + 8.0))
        if not np.any(np.abs(step) > 1e-13):
            break
    out = np.exp(u)
    return float(out) if out.ndim == 0 else out
