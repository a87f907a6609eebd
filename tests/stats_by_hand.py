"""Figures recomputed independently of hermit_tui.core, for the tests to check the engine against."""

from __future__ import annotations

import math
import statistics


def score_interval_by_hand(
    values: list[float], lo: float, hi: float, t_crit: float, max_n: float | None = None, level: float = 0.95
) -> tuple[float, float]:
    """The small-sample interval of core.stats.intervals recomputed independently: the Wilson quadratic (numpy's roots)
    on the values rescaled to [0, 1], with n_eff = p (1 - p) / se^2 held to [tasks, max_n], critical value
    ``t_crit``, and :func:`poisson_near_ends_by_hand` within 3 effective events of an end."""
    import numpy as np

    g = len(values)
    p = (statistics.fmean(values) - lo) / (hi - lo)
    se = statistics.stdev(values) / math.sqrt(g) / (hi - lo)
    n = max(p * (1 - p) / se**2, g)
    n = min(n, max_n) if max_n else n
    roots = np.roots([1 + t_crit**2 / n, -(2 * p + t_crit**2 / n), p * p]).real
    low, high = poisson_near_ends_by_hand(p, n, float(min(roots)), float(max(roots)), level)
    return lo + (hi - lo) * low, lo + (hi - lo) * high


def poisson_near_ends_by_hand(p: float, n: float, low: float, high: float, level: float) -> tuple[float, float]:
    """Brown, Cai & DasGupta's (2001, section 4.1.1) modification of Wilson's interval near an end, on the effective
    sample size ``n``: within 3 (effective) events of an end, that side reaches at least the one-sided Poisson
    bound ``chi2.ppf(1 - level, 2 x) / (2 n)`` (scipy's chi-square quantile)."""
    from scipy.stats import chi2

    x, y = p * n, (1 - p) * n
    if 0 < x <= 3 + 1e-9:
        low = min(low, float(chi2.ppf(1 - level, 2 * x)) / 2 / n)
    if 0 < y <= 3 + 1e-9:
        high = max(high, 1 - float(chi2.ppf(1 - level, 2 * y)) / 2 / n)
    return low, high


def selector_interval_by_hand(
    values: list[float], lo: float, hi: float, level: float = 0.95, max_n: float | None = None
) -> tuple[float, float]:
    """The selector interval of core.stats.intervals recomputed independently: Wilson's quadratic (numpy's roots) with
    n_eff = p (1 - p) / se^2 held to [tasks, max_n], scipy.stats' t critical value, then widened on each side to at
    least the no-spread bound at that mean (q = 1 - ((1 - level) / 2)^(1/G))."""
    from scipy.stats import t

    g = len(values)
    crit = float(t.ppf(1 - (1 - level) / 2, g - 1))
    p = (statistics.fmean(values) - lo) / (hi - lo)
    sd = statistics.stdev(values) / (hi - lo)
    q = 1 - ((1 - level) / 2) ** (1 / g)
    if sd == 0:
        low, high = p - q * p, p + q * (1 - p)
    else:
        low, high = score_interval_by_hand([(v - lo) / (hi - lo) for v in values], 0.0, 1.0, crit, max_n, level)
        low, high = min(low, p - q * p), max(high, p + q * (1 - p))
    return lo + (hi - lo) * low, lo + (hi - lo) * high


def mover_by_hand(
    a: list[float], b: list[float], level: float = 0.95, max_a: float | None = None, max_b: float | None = None
) -> tuple[float, float]:
    """Newcombe's hybrid (Zou & Donner's MOVER) for mean(b - a) of paired values in [0, 1], written out from the
    formula with numpy's correlation and the by-hand selector intervals above."""
    import numpy as np

    la, ua = selector_interval_by_hand(a, 0.0, 1.0, level, max_a)
    lb, ub = selector_interval_by_hand(b, 0.0, 1.0, level, max_b)
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    r = 0.0 if statistics.pstdev(a) == 0 or statistics.pstdev(b) == 0 else float(np.corrcoef(a, b)[0, 1])
    low = (mb - ma) - math.sqrt((mb - lb) ** 2 - 2 * r * (mb - lb) * (ua - ma) + (ua - ma) ** 2)
    high = (mb - ma) + math.sqrt((ub - mb) ** 2 - 2 * r * (ub - mb) * (ma - la) + (ma - la) ** 2)
    if len(a) < 16:  # below 16 paired tasks: at least the paired t interval on the differences (scipy's t)
        from scipy.stats import t

        d = [y - x for x, y in zip(a, b)]
        half = float(t.ppf(1 - (1 - level) / 2, len(d) - 1)) * statistics.stdev(d) / math.sqrt(len(d))
        low, high = min(low, statistics.fmean(d) - half), max(high, statistics.fmean(d) + half)
    return max(low, -1.0), min(high, 1.0)


def clustered_selector_by_hand(x: list[float], groups: list[object], level: float = 0.95) -> tuple[float, float]:
    """The clustered selector interval of values in [0, 1] written out: Wilson's quadratic (numpy's roots) with
    n_eff = p (1 - p) / V, V the CR2 variance of the mean (:func:`cr2_cov_by_hand`), held at least at the clusters
    C, scipy's t critical value on the Bell-McCaffrey df (:func:`cr2_df_by_hand`), widened to the tasks' no-spread
    bound."""
    import numpy as np
    from scipy.stats import t

    g, c = len(x), len(set(groups))
    crit = float(t.ppf(1 - (1 - level) / 2, cr2_df_by_hand(groups)))
    q = 1 - ((1 - level) / 2) ** (1 / g)
    p, v = statistics.fmean(x), cr2_cov_by_hand(x, x, groups)
    n = max(p * (1 - p) / v, c)
    roots = np.roots([1 + crit**2 / n, -(2 * p + crit**2 / n), p * p]).real
    low, high = poisson_near_ends_by_hand(p, n, float(min(roots)), float(max(roots)), level)
    return min(low, p - q * p), max(high, p + q * (1 - p))


def clustered_mover_by_hand(
    a: list[float], b: list[float], groups: list[object], level: float = 0.95
) -> tuple[float, float]:
    """The clustered pair interval written out: each side's :func:`clustered_selector_by_hand`, recombined by the
    MOVER formula with the clustered correlation ``(V_a + V_b - V_{b-a}) / (2 sqrt(V_a V_b))`` (CR2 variances)."""

    def var(x: list[float]) -> float:
        return cr2_cov_by_hand(x, x, groups)

    ma, mb = statistics.fmean(a), statistics.fmean(b)
    la, ua = clustered_selector_by_hand(a, groups, level)
    lb, ub = clustered_selector_by_hand(b, groups, level)
    va, vb, vd = var(a), var(b), var([y - x for x, y in zip(a, b)])
    r = (va + vb - vd) / (2 * math.sqrt(va * vb))
    low = (mb - ma) - math.sqrt((mb - lb) ** 2 - 2 * r * (mb - lb) * (ua - ma) + (ua - ma) ** 2)
    high = (mb - ma) + math.sqrt((ub - mb) ** 2 - 2 * r * (ub - mb) * (ma - la) + (ma - la) ** 2)
    return low, high


def cr2_df_by_hand(groups: list[object]) -> float:
    """Bell & McCaffrey's degrees of freedom of the CR2 variance of a mean from the general matrices (Imbens &
    Kolesár 2016, eq. 12): ``(sum_c g_c'g_c)^2 / sum_cd (g_c'g_d)^2``, ``g_c = M E_c A_c X_c (X'X)^-1`` with
    ``M = I - H``, ``E_c`` the cluster's columns of the identity and ``A_c = (I - H_cc)^(-1/2)`` (scipy's
    ``sqrtm``)."""
    import numpy as np
    from scipy.linalg import sqrtm

    g = np.asarray(groups)
    n = len(g)
    x = np.ones((n, 1))
    bread = np.linalg.inv(x.T @ x)
    h = x @ bread @ x.T
    m = np.eye(n) - h
    gs = []
    for c in np.unique(g):
        idx = np.flatnonzero(g == c)
        a_c = np.real(sqrtm(np.linalg.inv(np.eye(len(idx)) - h[np.ix_(idx, idx)])))
        e = np.zeros((n, len(idx)))
        e[idx, np.arange(len(idx))] = 1.0
        gs.append((m @ e @ a_c @ x[idx] @ bread).ravel())
    gram = np.array([[gc @ gd for gd in gs] for gc in gs])
    return float(np.trace(gram) ** 2 / np.sum(gram * gram))


def cr2_cov_by_hand(x: list[float], y: list[float], groups: list[object]) -> float:
    """Bell & McCaffrey's CR2 covariance of the intercepts of two OLS fits on a constant (statsmodels'), from the
    general matrices: each fit's residuals of cluster c (``fit.resid``) adjusted by ``(I - H_cc)^(-1/2)``, a matrix
    square root (scipy's ``sqrtm``) of the block of the hat matrix ``X (X'X)^-1 X'`` (statsmodels'
    ``normalized_cov_params``), and ``sum_c (X_c' A_c e_c)(X_c' A_c f_c)`` between the bread ``(X'X)^-1``."""
    import numpy as np
    import statsmodels.api as sm
    from scipy.linalg import sqrtm

    g = np.asarray(groups)
    ones = np.ones((len(x), 1))
    fx = sm.OLS(np.asarray(x, dtype=float), ones).fit()
    fy = sm.OLS(np.asarray(y, dtype=float), ones).fit()
    bread = fx.normalized_cov_params
    hat = ones @ bread @ ones.T
    meat = np.zeros((1, 1))
    for c in np.unique(g):
        idx = np.flatnonzero(g == c)
        a_c = np.real(sqrtm(np.linalg.inv(np.eye(len(idx)) - hat[np.ix_(idx, idx)])))
        u = ones[idx].T @ a_c @ fx.resid[idx]
        v = ones[idx].T @ a_c @ fy.resid[idx]
        meat += np.outer(u, v)
    return float((bread @ meat @ bread)[0, 0])


def satterthwaite_df_by_hand(groups: list[object]) -> float:
    """The Satterthwaite degrees of freedom of the CR2 variance of the mean for tasks independent with equal
    variance, from the quadratic form itself: the CR2 variance (:func:`cr2_cov_by_hand`) is ``y' Q y``, ``Q_ij``
    the CR2 covariance of the unit vectors ``e_i`` and ``e_j``; for ``y ~ N(0, I)`` ``E = tr Q`` and
    ``Var = 2 tr Q^2``, so that ``df = 2 E^2 / Var = (tr Q)^2 / tr(Q^2)`` (Bell & McCaffrey 2002, sec. 3)."""
    import numpy as np

    n = len(groups)
    unit = np.eye(n)
    q = np.array([[cr2_cov_by_hand(list(unit[i]), list(unit[j]), groups) for j in range(n)] for i in range(n)])
    return float(np.trace(q) ** 2 / np.trace(q @ q))
