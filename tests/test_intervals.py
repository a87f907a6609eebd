"""The bounded interval methods, each pinned against an independent computation: scipy's t test and Clopper-Pearson
interval, the Wilson quadratic solved with numpy, and published tables."""

import math

import numpy as np
import pytest
from scipy.stats import binomtest, ttest_1samp

from hermit_tui.core.stats.intervals import (
    T_MIN_TASKS,
    difference_interval,
    mean_interval,
    no_spread_share,
    t_quantile,
    task_mean_interval,
    wilson_bounds,
)

T3 = 3.182446305  # t(0.975, 3), published tables


def wilson_by_quadratic(p: float, n: float, c: float) -> tuple[float, float]:
    """The set {m : (p - m)^2 <= c^2 m (1 - m) / n}: the roots of (1 + c^2/n) m^2 - (2p + c^2/n) m + p^2 = 0."""
    roots = np.roots([1 + c * c / n, -(2 * p + c * c / n), p * p])
    return float(min(roots.real)), float(max(roots.real))


def test_t_interval_where_it_is_accurate_matches_scipy():
    rng = np.random.default_rng(1)
    values = rng.uniform(0.2, 0.8, size=60)
    got = mean_interval(values.mean(), values.std(ddof=1), len(values), 0.0, 1.0)
    ref = ttest_1samp(values, 0.5).confidence_interval(0.95)
    assert got.method == "t"
    assert (got.low, got.high) == (pytest.approx(ref.low, abs=1e-12), pytest.approx(ref.high, abs=1e-12))


def test_score_interval_solves_the_wilson_quadratic_with_an_effective_sample_size():
    # four tasks with means 1, .5, 0, .5: mean .5, sd sqrt(1/6), se^2 = 1/24; n_eff = .25 / (1/24) = 6 (above 4 tasks)
    got = mean_interval(0.5, math.sqrt(1 / 6), 4, 0.0, 1.0)
    assert got.method == "score" and got.n_eff == pytest.approx(6.0)
    assert (got.low, got.high) == pytest.approx(wilson_by_quadratic(0.5, 6.0, T3), abs=1e-9)
    # near the top of the range the interval is asymmetric and stays below 1
    top = mean_interval(0.9, 0.1, 8, 0.0, 1.0)  # n_eff = .09 / (.01 / 8) = 72: 7.2 effective failures
    assert top.method == "score" and top.high < 1 and top.high - 0.9 < 0.9 - top.low
    c = t_quantile(7)
    assert (top.low, top.high) == pytest.approx(wilson_by_quadratic(0.9, 72.0, c), abs=1e-9)


def test_effective_sample_size_is_at_least_the_tasks_and_at_most_the_attempts_for_pass_fail():
    # a spread larger than p(1 - p) allows (possible with ddof=1): n_eff would fall below G; it is held at G
    floor = mean_interval(0.5, 0.6, 4, 0.0, 1.0)
    assert floor.n_eff == 4.0
    assert (floor.low, floor.high) == pytest.approx(wilson_by_quadratic(0.5, 4.0, T3), abs=1e-9)
    # pass/fail scores, 4 tasks x 2 repeats with task means .5, .5, .5, 1 -> sd .25, n_eff = .625*.375/(.0625/4) = 15
    # > the attempts' worth G^2 / sum(1/k) = 16 / 2 = 8
    means, counts = np.array([0.5, 0.5, 0.5, 1.0]), np.array([2, 2, 2, 2])
    capped = task_mean_interval(means, counts, True, 0.0, 1.0)
    assert capped.n_eff == pytest.approx(8.0)
    assert (capped.low, capped.high) == pytest.approx(wilson_by_quadratic(0.625, 8.0, T3), abs=1e-9)
    uncapped = task_mean_interval(means, counts, False, 0.0, 1.0)
    assert uncapped.n_eff == pytest.approx(15.0) and uncapped.high - uncapped.low < capped.high - capped.low


def test_no_spread_bound_is_clopper_pearson_for_all_solved_and_scales_to_the_range():
    for g in (2, 4, 16, 500):
        q = no_spread_share(g)
        # 0 of g tasks differ: the exact (Clopper-Pearson) upper bound on the share that may differ
        assert q == pytest.approx(binomtest(0, g).proportion_ci(0.95, method="exact").high, rel=1e-9)
        all_one = mean_interval(1.0, 0.0, g, 0.0, 1.0)
        assert all_one.method == "no-spread" and (all_one.low, all_one.high) == pytest.approx((1 - q, 1.0))
        none = mean_interval(0.0, 0.0, g, 0.0, 1.0)
        assert (none.low, none.high) == pytest.approx((0.0, q))
    # a constant shift of .25 on 12 tasks, differences in [-1, 1]: [.25 - q * 1.25, .25 + q * .75], never zero width
    q12 = 1 - 0.025 ** (1 / 12)
    shift = difference_interval(np.full(12, 0.25), 0.0, 1.0)
    assert shift.method == "no-spread"
    assert (shift.low, shift.high) == pytest.approx((0.25 - q12 * 1.25, 0.25 + q12 * 0.75))
    assert shift.high - shift.low > 0.2
    # a 0-100 scale
    scaled = mean_interval(100.0, 0.0, 4, 0.0, 100.0)
    assert (scaled.low, scaled.high) == pytest.approx((100 * (1 - no_spread_share(4)), 100.0))


def test_four_tasks_stay_in_range_where_the_t_interval_left_it():
    # the card: mean .375 on 4 tasks gave [-0.387, 1.137] with t; t's half-width 0.762 = 3.1824 * se
    se = 0.762 / T3
    got = mean_interval(0.375, se * 2, 4, 0.0, 1.0)
    assert 0 <= got.low < 0.375 < got.high <= 1
    two = mean_interval(0.5, 0.7, 2, 0.0, 1.0)  # 2 tasks gave [-5.85, 6.85]
    assert 0 <= two.low and two.high <= 1


def test_wilson_bounds_match_published_values():
    # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (Wilson score, no continuity correction)
    z = 1.959963984540054
    assert wilson_bounds(81 / 263, 263, z) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson_bounds(15 / 148, 148, z) == pytest.approx((0.0624, 0.1605), abs=5e-5)
    assert wilson_bounds(0 / 20, 20, z) == pytest.approx((0.0, 0.1611), abs=5e-5)
    assert wilson_bounds(1 / 29, 29, z) == pytest.approx((0.0061, 0.1718), abs=5e-5)


def test_random_small_samples_never_leave_the_range_and_never_collapse():
    rng = np.random.default_rng(5)
    for _ in range(2000):
        g = int(rng.integers(2, 12))
        values = rng.choice([0.0, 0.25, 0.5, 1.0], size=g) if rng.random() < 0.5 else rng.beta(0.3, 0.3, size=g)
        got = mean_interval(values.mean(), values.std(ddof=1), g, 0.0, 1.0)
        assert 0.0 <= got.low < got.high <= 1.0
        assert got.low <= values.mean() <= got.high
        diffs = values - rng.choice([0.0, 0.5, 1.0], size=g)
        d = difference_interval(diffs, 0.0, 1.0)
        assert -1.0 <= d.low < d.high <= 1.0


def test_fewer_than_two_tasks_give_no_interval_and_t_needs_enough_tasks():
    assert mean_interval(0.5, 0.1, 1, 0.0, 1.0) is None
    assert difference_interval(np.array([0.3]), 0.0, 1.0) is None
    assert mean_interval(0.5, 0.2, T_MIN_TASKS - 1, 0.0, 1.0).method == "score"
    assert mean_interval(0.5, 0.2, T_MIN_TASKS, 0.0, 1.0).method == "t"
    # many tasks but few effective failures near the top: the score interval, not t
    assert mean_interval(0.99, 0.05, 100, 0.0, 1.0).method == "score"


def test_near_an_end_the_far_side_gets_clopper_pearsons_bound_on_the_effective_counts():
    from scipy.stats import beta

    from hermit_tui.core.stats.intervals import FEW

    # 14 of 16 pass/fail tasks solved (one repeat): n_eff = 16, 2 effective failures <= FEW. Wilson-t's upper bound
    # 0.968 would miss a true 0.97 (the coverage dip Brown, Cai & DasGupta describe); Clopper-Pearson's on
    # x = 14/16 n, n = 16 (1.96 / t(0.975, 15))^2 does not
    means = np.array([1.0] * 14 + [0.0] * 2)
    got = task_mean_interval(means, np.ones(16), True, 0.0, 1.0)
    c = t_quantile(15)
    n = 16 * (1.959963984540054 / c) ** 2
    x = n * 14 / 16
    assert got.high == pytest.approx(beta.ppf(0.975, x + 1, n - x), abs=1e-9) and got.high > 0.97
    assert got.low == pytest.approx(wilson_by_quadratic(14 / 16, 16.0, c)[0], abs=1e-9)  # the other side: Wilson
    assert 2.0 <= FEW
    # in the middle of the range nothing changes
    mid = mean_interval(0.5, math.sqrt(1 / 6), 4, 0.0, 1.0)
    assert (mid.low, mid.high) == pytest.approx(wilson_by_quadratic(0.5, 6.0, T3), abs=1e-9)
